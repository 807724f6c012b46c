//! The hostPath dynamic provisioner behind StorageClass [`STORAGE_CLASS`].
//!
//! It plays the part of a CSI driver's external-provisioner and
//! external-resizer for a driver that keeps each volume in a directory under
//! the simulated node's root: it creates a PersistentVolume, pre-bound to the
//! claim, once the scheduler has picked a node (`WaitForFirstConsumer`),
//! leaves the binding itself to the real kube-controller-manager, deletes
//! released volumes, and grows volumes whose claim asks for more.
//!
//! Every step is level-triggered and idempotent, so a restarted provisioner
//! picks up where the last one stopped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{
    CSIPersistentVolumeSource, HostPathVolumeSource, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, ObjectReference, PersistentVolume, PersistentVolumeClaim,
    PersistentVolumeSpec, Pod, VolumeNodeAffinity,
};
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSIDriverSpec, StorageClass, VolumeAttributesClass,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use shared_types::quantity::QuantityValue;
use tokio::task::JoinHandle;

use crate::{DRIVER_NAME, FIXED_STORAGE_CLASS, OFFLINE_STORAGE_CLASS, STORAGE_CLASS};

/// The classes whose claims this provisioner serves.
const CLASSES: [&str; 3] = [STORAGE_CLASS, FIXED_STORAGE_CLASS, OFFLINE_STORAGE_CLASS];

/// The size a storage quantity stands for, in bytes rounded up; `None` (less
/// than every size) when absent, unparsable or negative, so that such a
/// value never looks like room to grow into.
fn bytes(quantity: Option<&Quantity>) -> Option<u128> {
    let value = QuantityValue::try_from(quantity?).ok()?.value()?;
    u128::try_from(value).ok()
}

/// Set by the scheduler on a `WaitForFirstConsumer` claim once it has picked
/// the node of the first Pod that uses it.
pub const SELECTED_NODE_ANNOTATION: &str = "volume.kubernetes.io/selected-node";

/// Names the provisioner of a dynamically provisioned PersistentVolume; the
/// PV controller leaves the deletion of such volumes to that provisioner.
pub const PROVISIONED_BY_ANNOTATION: &str = "pv.kubernetes.io/provisioned-by";

/// The node label a provisioned volume's node affinity selects on.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// The volume attribute of a CSI-sourced volume that holds its directory.
pub const PATH_ATTRIBUTE: &str = "path";

const FIELD_MANAGER: &str = "kubesim-provisioner";
const STORAGE: &str = "storage";
/// How long to wait before retrying a step that failed.
const RETRY: Duration = Duration::from_secs(2);
/// How long to wait before retrying a claim that cannot be provisioned yet.
const RETRY_UNPROVISIONABLE: Duration = Duration::from_secs(10);
/// A fallback resync in case a watch event is missed.
const RESYNC: Duration = Duration::from_secs(300);

/// Why a provisioning, deletion or expansion step failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused or failed a request.
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// A volume directory could not be created, opened up or removed.
    #[error("volume directory {}: {source}", path.display())]
    Directory {
        /// The directory.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The claim cannot be provisioned as it stands; retried with backoff
    /// because the cause (for example a missing VolumeAttributesClass) may
    /// be fixed later.
    #[error("cannot provision {claim}: {reason}")]
    Unprovisionable {
        /// `namespace/name` of the claim.
        claim: String,
        /// Why.
        reason: String,
    },
}

/// Creates (or leaves alone) StorageClasses [`STORAGE_CLASS`],
/// [`FIXED_STORAGE_CLASS`] and [`OFFLINE_STORAGE_CLASS`]: provisioner
/// [`DRIVER_NAME`], volumeBindingMode WaitForFirstConsumer, reclaimPolicy
/// Delete, allowVolumeExpansion false for the second only; and the CSIDriver [`DRIVER_NAME`]
/// (attachRequired false) that the CSI-sourced volumes of claims created
/// with a VolumeAttributesClass refer to.
pub async fn ensure_storage_class(client: &kube::Client) -> Result<(), kube::Error> {
    let drivers: Api<CSIDriver> = Api::all(client.clone());
    let driver = CSIDriver {
        metadata: ObjectMeta {
            name: Some(DRIVER_NAME.to_owned()),
            ..ObjectMeta::default()
        },
        // Without it the attach/detach controller would wait for an
        // external-attacher that does not exist here.
        spec: CSIDriverSpec {
            attach_required: Some(false),
            ..CSIDriverSpec::default()
        },
    };
    create_unless_exists(&drivers, &driver).await?;
    let classes: Api<StorageClass> = Api::all(client.clone());
    for (name, expands) in [
        (STORAGE_CLASS, true),
        (FIXED_STORAGE_CLASS, false),
        (OFFLINE_STORAGE_CLASS, true),
    ] {
        let class = StorageClass {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            provisioner: DRIVER_NAME.to_owned(),
            volume_binding_mode: Some("WaitForFirstConsumer".to_owned()),
            reclaim_policy: Some("Delete".to_owned()),
            allow_volume_expansion: Some(expands),
            ..StorageClass::default()
        };
        create_unless_exists(&classes, &class).await?;
    }
    Ok(())
}

async fn create_unless_exists<K>(api: &Api<K>, object: &K) -> Result<(), kube::Error>
where
    K: Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(()),
        // Most fields of these kinds are immutable; an existing object is
        // the one an earlier run (or the test) made, and is left as it is.
        Err(kube::Error::Api(status)) if status.is_already_exists() => Ok(()),
        Err(e) => Err(e),
    }
}

/// The directory behind a volume this provisioner created: `hostPath.path`,
/// or for a CSI-sourced volume its `path` volume attribute.
pub fn volume_path(pv: &PersistentVolume) -> Option<PathBuf> {
    let spec = pv.spec.as_ref()?;
    if let Some(host_path) = &spec.host_path {
        return Some(PathBuf::from(&host_path.path));
    }
    let csi = spec.csi.as_ref().filter(|csi| csi.driver == DRIVER_NAME)?;
    csi.volume_attributes
        .as_ref()?
        .get(PATH_ATTRIBUTE)
        .map(PathBuf::from)
}

/// Starts the provisioner: watches claims of [`STORAGE_CLASS`] and the
/// volumes it provisioned, keeping volume directories under
/// `<nodes_root>/<node>/volumes/<pv name>`. Runs until the task is aborted.
pub fn spawn(
    client: kube::Client,
    nodes_root: std::path::PathBuf,
    expansion_delay: Duration,
) -> tokio::task::JoinHandle<()> {
    let context = Arc::new(Context {
        client: client.clone(),
        nodes_root,
        expansion_delay,
        expanding: std::sync::Mutex::default(),
        recorder: Recorder::new(
            client.clone(),
            Reporter {
                controller: FIELD_MANAGER.to_owned(),
                instance: None,
            },
        ),
    });
    let claims = Controller::new(
        Api::<PersistentVolumeClaim>::all(client.clone()),
        watcher::Config::default(),
    )
    // A volume's capacity is part of the claim's expansion state.
    .watches(
        Api::<PersistentVolume>::all(client.clone()),
        watcher::Config::default(),
        |pv| claim_of(&pv),
    )
    .run(reconcile_claim, error_policy, context.clone())
    .for_each(|_| futures::future::ready(()));
    let volumes = Controller::new(
        Api::<PersistentVolume>::all(client),
        watcher::Config::default(),
    )
    .run(reconcile_volume, error_policy, context)
    .for_each(|_| futures::future::ready(()));
    let task: JoinHandle<()> = tokio::spawn(async move {
        futures::future::join(claims, volumes).await;
    });
    task
}

struct Context {
    client: Client,
    nodes_root: PathBuf,
    recorder: Recorder,
    /// How long a controller expansion takes.
    expansion_delay: Duration,
    /// Claims (by UID) whose expansion started, and when.
    expanding: std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>,
}

fn error_policy<K>(object: Arc<K>, error: &Error, _: Arc<Context>) -> Action
where
    K: Resource<DynamicType = ()>,
{
    tracing::warn!(object = %ObjectRef::from_obj(object.as_ref()), %error, "provisioner step failed; retrying");
    match error {
        // Each attempt records a Warning event; a slower retry keeps a claim
        // that waits for a fix from flooding them.
        Error::Unprovisionable { .. } => Action::requeue(RETRY_UNPROVISIONABLE),
        _ => Action::requeue(RETRY),
    }
}

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    }
}

fn claim_of(pv: &PersistentVolume) -> Option<ObjectRef<PersistentVolumeClaim>> {
    let claim = pv.spec.as_ref()?.claim_ref.as_ref()?;
    Some(ObjectRef::new(claim.name.as_deref()?).within(claim.namespace.as_deref()?))
}

async fn reconcile_claim(
    claim: Arc<PersistentVolumeClaim>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let Some(spec) = claim.spec.as_ref() else {
        return Ok(Action::await_change());
    };
    if !spec
        .storage_class_name
        .as_deref()
        .is_some_and(|c| CLASSES.contains(&c))
        || claim.metadata.deletion_timestamp.is_some()
    {
        return Ok(Action::await_change());
    }
    match spec.volume_name.as_deref() {
        None | Some("") => provision(&claim, &ctx).await?,
        Some(volume) => {
            if let Some(wait) = expand(&claim, volume, &ctx).await? {
                return Ok(Action::requeue(wait));
            }
        }
    }
    Ok(Action::requeue(RESYNC))
}

/// Creates the volume of a claim the scheduler has placed on a node.
async fn provision(claim: &PersistentVolumeClaim, ctx: &Context) -> Result<(), Error> {
    let Some(node) = claim.annotations().get(SELECTED_NODE_ANNOTATION) else {
        // WaitForFirstConsumer: nothing to do until a Pod using it is scheduled.
        return Ok(());
    };
    let uid = claim.uid().unwrap_or_default();
    let namespace = claim.namespace().unwrap_or_default();
    let spec = claim.spec.clone().unwrap_or_default();
    let unprovisionable = |reason: String| Error::Unprovisionable {
        claim: format!("{namespace}/{}", claim.name_any()),
        reason,
    };
    let request = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get(STORAGE))
        .cloned();
    let failure = if uid.is_empty() {
        Some("the claim has no uid yet".to_owned())
    } else if node.is_empty() || node.contains('/') || node.starts_with('.') {
        Some(format!("selected node {node:?} is not a usable node name"))
    } else if request.is_none() {
        Some("the claim requests no storage".to_owned())
    } else if spec
        .volume_mode
        .as_deref()
        .is_some_and(|mode| mode != "Filesystem")
    {
        Some("only volumeMode Filesystem is supported".to_owned())
    } else {
        None
    };
    if let Some(reason) = failure {
        return Err(provisioning_failed(ctx, claim, unprovisionable(reason)).await);
    }
    // The CSI external-provisioner refuses a claim created with a class
    // that is missing or names another driver, and copies the class into the
    // PV: the PV binder binds a claim only to a volume of the same class.
    let attributes_class = spec
        .volume_attributes_class_name
        .clone()
        .filter(|c| !c.is_empty());
    if let Some(class) = &attributes_class {
        let classes: Api<VolumeAttributesClass> = Api::all(ctx.client.clone());
        let reason = match classes.get_opt(class).await? {
            None => Some(format!("VolumeAttributesClass {class:?} does not exist")),
            Some(vac) if vac.driver_name != DRIVER_NAME => Some(format!(
                "VAC {class} referenced in PVC is for driver {} which does not match driver name \
                 {DRIVER_NAME}",
                vac.driver_name
            )),
            Some(_) => None,
        };
        if let Some(reason) = reason {
            return Err(provisioning_failed(ctx, claim, unprovisionable(reason)).await);
        }
    }

    let name = format!("pvc-{uid}");
    let path = ctx.nodes_root.join(node).join("volumes").join(&name);
    make_directory(&path).await?;
    let volume = PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            annotations: Some(BTreeMap::from([(
                PROVISIONED_BY_ANNOTATION.to_owned(),
                DRIVER_NAME.to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeSpec {
            access_modes: spec.access_modes.clone(),
            capacity: request.map(|r| BTreeMap::from([(STORAGE.to_owned(), r)])),
            claim_ref: Some(ObjectReference {
                api_version: Some("v1".to_owned()),
                kind: Some("PersistentVolumeClaim".to_owned()),
                namespace: Some(namespace.clone()),
                name: Some(claim.name_any()),
                uid: Some(uid),
                ..ObjectReference::default()
            }),
            // The API server accepts spec.volumeAttributesClassName only on
            // CSI volumes; every other volume stays a plain hostPath, which
            // is what the node agent mounts most directly.
            csi: attributes_class
                .as_ref()
                .map(|_| CSIPersistentVolumeSource {
                    driver: DRIVER_NAME.to_owned(),
                    volume_handle: name.clone(),
                    volume_attributes: Some(BTreeMap::from([(
                        PATH_ATTRIBUTE.to_owned(),
                        path.to_string_lossy().into_owned(),
                    )])),
                    ..CSIPersistentVolumeSource::default()
                }),
            host_path: attributes_class.is_none().then(|| HostPathVolumeSource {
                path: path.to_string_lossy().into_owned(),
                type_: None,
            }),
            volume_attributes_class_name: attributes_class.clone(),
            node_affinity: Some(VolumeNodeAffinity {
                required: Some(NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_expressions: Some(vec![NodeSelectorRequirement {
                            key: HOSTNAME_LABEL.to_owned(),
                            operator: "In".to_owned(),
                            values: Some(vec![node.clone()]),
                        }]),
                        match_fields: None,
                    }],
                }),
            }),
            persistent_volume_reclaim_policy: Some("Delete".to_owned()),
            // The claim's own class: a volume binds only to a claim of its class.
            storage_class_name: claim
                .spec
                .as_ref()
                .and_then(|s| s.storage_class_name.clone())
                .or_else(|| Some(STORAGE_CLASS.to_owned())),
            volume_mode: Some("Filesystem".to_owned()),
            ..PersistentVolumeSpec::default()
        }),
        status: None,
    };
    let volumes: Api<PersistentVolume> = Api::all(ctx.client.clone());
    match volumes.create(&PostParams::default(), &volume).await {
        Ok(_) => {
            tracing::info!(claim = %format!("{namespace}/{}", claim.name_any()), volume = %name, node = %node, "provisioned");
            let note = format!("Successfully provisioned volume {name} on node {node}");
            publish(
                ctx,
                claim,
                EventType::Normal,
                "ProvisioningSucceeded",
                "Provision",
                note,
            )
            .await;
            Ok(())
        }
        // Provisioned before a restart, or the watch saw the claim again
        // before the binder caught up.
        Err(kube::Error::Api(status)) if status.is_already_exists() => Ok(()),
        Err(e) => Err(e.into()),
    }
}

async fn provisioning_failed(ctx: &Context, claim: &PersistentVolumeClaim, error: Error) -> Error {
    let note = error.to_string();
    publish(
        ctx,
        claim,
        EventType::Warning,
        "ProvisioningFailed",
        "Provision",
        note,
    )
    .await;
    error
}

async fn make_directory(path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    let wrap = |source| Error::Directory {
        path: path.to_owned(),
        source,
    };
    tokio::fs::create_dir_all(path).await.map_err(wrap)?;
    // Containers run as arbitrary users; the umask must not decide who may
    // write to the volume.
    tokio::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777))
        .await
        .map_err(wrap)
}

/// How often a pending offline resize looks for a newly started pod.
const OFFLINE_RECHECK: Duration = Duration::from_secs(2);

/// For a claim of [`OFFLINE_STORAGE_CLASS`] whose volume has grown: as the
/// kubelet, the file system grows only when a pod mounting the claim starts
/// after the resize became pending. Until then the claim carries
/// `FileSystemResizePending` (set here with its transition time) and
/// `Some(wait)` asks to look again; `None` lets the resize finish.
async fn offline_resize(
    claim: &PersistentVolumeClaim,
    claims: &Api<PersistentVolumeClaim>,
    ctx: &Context,
) -> Result<Option<Duration>, Error> {
    if claim
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        != Some(OFFLINE_STORAGE_CLASS)
    {
        return Ok(None);
    }
    let pending_since = claim
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "FileSystemResizePending"))
        .and_then(|c| c.last_transition_time.clone());
    let Some(since) = pending_since else {
        let patch = serde_json::json!({ "status": { "conditions": [{
            "type": "FileSystemResizePending", "status": "True",
            "lastTransitionTime": k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()),
            "message": "Waiting for user to (re-)start a pod to finish file system resize of volume on node.",
        }] } });
        claims
            .patch_status(&claim.name_any(), &patch_params(), &Patch::Merge(&patch))
            .await?;
        return Ok(Some(OFFLINE_RECHECK));
    };
    let name = claim.name_any();
    let pods: Api<Pod> =
        Api::namespaced(ctx.client.clone(), &claim.namespace().unwrap_or_default());
    let remounted = pods.list(&Default::default()).await?.items.iter().any(|p| {
        let mounts = p
            .spec
            .iter()
            .flat_map(|s| s.volumes.iter().flatten())
            .any(|v| {
                v.persistent_volume_claim
                    .as_ref()
                    .is_some_and(|c| c.claim_name == name)
            });
        let running = p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
        // Created by the API server's clock: the simulated nodes' clocks may be skewed.
        let started_after = p
            .metadata
            .creation_timestamp
            .as_ref()
            .is_some_and(|t| t.0 > since.0);
        mounts && running && started_after && p.metadata.deletion_timestamp.is_none()
    });
    Ok((!remounted).then_some(OFFLINE_RECHECK))
}

/// Emulates a controller expansion followed by an online file-system resize:
/// the volume grows to the claim's request and the claim reports it. The
/// controller expansion takes the configured delay, with the claim's
/// `Resizing` condition set meanwhile; `Some(wait)` asks to look again then.
async fn expand(
    claim: &PersistentVolumeClaim,
    volume: &str,
    ctx: &Context,
) -> Result<Option<Duration>, Error> {
    if claim.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Bound") {
        return Ok(None);
    }
    let volumes: Api<PersistentVolume> = Api::all(ctx.client.clone());
    let Some(pv) = volumes.get_opt(volume).await? else {
        return Ok(None);
    };
    if pv
        .annotations()
        .get(PROVISIONED_BY_ANNOTATION)
        .map(String::as_str)
        != Some(DRIVER_NAME)
    {
        return Ok(None);
    }
    let storage_of =
        |map: Option<&BTreeMap<String, Quantity>>| map.and_then(|m| m.get(STORAGE)).cloned();
    let request = storage_of(
        claim
            .spec
            .as_ref()
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref()),
    );
    let Some(request) = request else {
        return Ok(None);
    };
    let claims: Api<PersistentVolumeClaim> =
        Api::namespaced(ctx.client.clone(), &claim.namespace().unwrap_or_default());
    let mut size = storage_of(pv.spec.as_ref().and_then(|s| s.capacity.as_ref()));
    if bytes(Some(&request)) > bytes(size.as_ref()) {
        let uid = claim.metadata.uid.clone().unwrap_or_default();
        let started = *ctx
            .expanding
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(uid.clone())
            .or_insert_with(std::time::Instant::now);
        if started.elapsed() < ctx.expansion_delay {
            // As the external-resizer: the claim says a resize is running.
            let resizing = claim
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Resizing"));
            if !resizing {
                let patch = serde_json::json!({ "status": { "conditions": [
                    { "type": "Resizing", "status": "True" }
                ] } });
                claims
                    .patch_status(&claim.name_any(), &patch_params(), &Patch::Merge(&patch))
                    .await?;
            }
            return Ok(Some(ctx.expansion_delay - started.elapsed()));
        }
        ctx.expanding
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&uid);
        let patch = serde_json::json!({ "spec": { "capacity": { STORAGE: request } } });
        volumes
            .patch(volume, &patch_params(), &Patch::Merge(&patch))
            .await?;
        size = Some(request);
        let note = format!(
            "Resized volume {volume} to {}",
            size.as_ref().map_or("", |q| q.0.as_str())
        );
        publish(
            ctx,
            claim,
            EventType::Normal,
            "VolumeResizeSuccessful",
            "Resize",
            note,
        )
        .await;
    }
    let reported = storage_of(claim.status.as_ref().and_then(|s| s.capacity.as_ref()));
    let grown = size
        .as_ref()
        .is_some_and(|s| bytes(Some(s)) > bytes(reported.as_ref()));
    if grown && let Some(wait) = offline_resize(claim, &claims, ctx).await? {
        return Ok(Some(wait));
    }
    if let Some(size) = size.filter(|s| bytes(Some(s)) > bytes(reported.as_ref())) {
        // The end state of an expansion: the file system has grown and the
        // resize operation is finished.
        let patch = serde_json::json!({ "status": {
            "capacity": { STORAGE: size },
            "allocatedResources": { STORAGE: size },
            "conditions": null,
        } });
        claims
            .patch_status(&claim.name_any(), &patch_params(), &Patch::Merge(&patch))
            .await?;
        let note = format!("Filesystem of volume {volume} resized to {}", size.0);
        publish(
            ctx,
            claim,
            EventType::Normal,
            "FileSystemResizeSuccessful",
            "Resize",
            note,
        )
        .await;
    }
    Ok(None)
}

/// Deletes a released volume this provisioner created, directory first.
async fn reconcile_volume(pv: Arc<PersistentVolume>, ctx: Arc<Context>) -> Result<Action, Error> {
    let ours = pv
        .annotations()
        .get(PROVISIONED_BY_ANNOTATION)
        .map(String::as_str)
        == Some(DRIVER_NAME);
    let released = pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Released");
    let spec = pv.spec.as_ref();
    let delete = spec.and_then(|s| s.persistent_volume_reclaim_policy.as_deref()) == Some("Delete");
    if !ours || !released || !delete || pv.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let name = pv.name_any();
    if let Some(path) = volume_path(&pv) {
        // The path comes from an API object; only a directory this
        // provisioner could have made is ever removed.
        if path.starts_with(&ctx.nodes_root) && path.file_name() == Some(name.as_ref()) {
            match tokio::fs::remove_dir_all(&path).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(Error::Directory { path, source }),
            }
        } else {
            tracing::warn!(volume = %name, path = %path.display(), "not under the nodes root; leaving the directory alone");
        }
    }
    let volumes: Api<PersistentVolume> = Api::all(ctx.client.clone());
    match volumes.delete(&name, &DeleteParams::default()).await {
        Ok(_) => tracing::info!(volume = %name, "deleted released volume"),
        Err(kube::Error::Api(status)) if status.is_not_found() => {}
        Err(e) => return Err(e.into()),
    }
    Ok(Action::await_change())
}

async fn publish(
    ctx: &Context,
    claim: &PersistentVolumeClaim,
    type_: EventType,
    reason: &str,
    action: &str,
    note: String,
) {
    let event = Event {
        type_,
        reason: reason.to_owned(),
        note: Some(note),
        action: action.to_owned(),
        secondary: None,
    };
    // An event is a courtesy to whoever reads `kubectl describe`; failing
    // to record one must not fail the step it describes.
    if let Err(error) = ctx.recorder.publish(&event, &claim.object_ref(&())).await {
        tracing::debug!(%error, reason, "could not publish event");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> Quantity {
        Quantity(text.to_string())
    }

    #[test]
    fn sizes_compare_in_whole_bytes() {
        assert_eq!(bytes(Some(&q("1.5Gi"))), Some(3 << 29));
        assert_eq!(bytes(Some(&q("1500m"))), Some(2));
        assert!(bytes(Some(&q("1Gi"))) > bytes(Some(&q("1G"))));
        assert!(bytes(Some(&q("2Gi"))) > bytes(Some(&q("1Gi"))));
    }

    #[test]
    fn nonsense_and_negative_sizes_are_less_than_every_size() {
        for bad in ["", "Gi", "1Zi", "-1Gi"] {
            assert_eq!(bytes(Some(&q(bad))), None, "{bad:?}");
        }
        assert_eq!(bytes(None), None);
        assert!(bytes(Some(&q("0"))) > bytes(None));
    }
}
