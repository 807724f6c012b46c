//! Emulation of a CSI driver's ControllerModifyVolume, as the
//! external-resizer drives it, for VolumeAttributesClass changes on claims of
//! kubesim's StorageClasses ([`STORAGE_CLASS`], [`FIXED_STORAGE_CLASS`],
//! [`OFFLINE_STORAGE_CLASS`]).
//!
//! The states follow the external-resizer (v2, Kubernetes 1.34+):
//!
//! | claim | `status.modifyVolumeStatus` | afterwards |
//! |---|---|---|
//! | class does not exist | `Pending` | retried when the class appears |
//! | class names another driver (the driver rejects its parameters) | `Infeasible` | retried when the class changes or the claim points elsewhere |
//! | class of this driver | `InProgress` | after the delay: `currentVolumeAttributesClassName` set, status removed (and the PV's `volumeAttributesClassName`, on a CSI-sourced volume) |
//!
//! A Warning Event accompanies `Pending` and `Infeasible`, Normal Events the
//! start and the end of a modification. Only bound claims are touched (the
//! API server forbids changing the class of a Pending claim anyway), and a
//! claim whose status already says what the emulation would write is not
//! written to.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ModifyVolumeStatus, PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::VolumeAttributesClass;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};

use crate::{DRIVER_NAME, FIXED_STORAGE_CLASS, OFFLINE_STORAGE_CLASS, STORAGE_CLASS};

/// `status.modifyVolumeStatus.status` while the driver is modifying a volume.
pub const IN_PROGRESS: &str = "InProgress";
/// `status.modifyVolumeStatus.status` when the named class does not exist.
pub const PENDING: &str = "Pending";
/// `status.modifyVolumeStatus.status` when the driver rejects the class.
pub const INFEASIBLE: &str = "Infeasible";

const FIELD_MANAGER: &str = "kubesim-modify-volume";
const RETRY: Duration = Duration::from_secs(2);
/// The external-resizer retries a failed modification slowly; the class watch
/// covers the common fix (creating the class), this covers the rest.
const RETRY_FAILED: Duration = Duration::from_secs(30);
const RESYNC: Duration = Duration::from_secs(300);

/// Starts the emulation; each modification takes `delay`. Runs until the
/// task is aborted.
pub fn spawn(client: kube::Client, delay: std::time::Duration) -> tokio::task::JoinHandle<()> {
    let context = Arc::new(Context {
        client: client.clone(),
        delay,
        recorder: Recorder::new(
            client.clone(),
            Reporter {
                controller: FIELD_MANAGER.to_owned(),
                instance: None,
            },
        ),
        started: Mutex::new(HashMap::new()),
    });
    let controller = Controller::new(
        Api::<PersistentVolumeClaim>::all(client.clone()),
        watcher::Config::default(),
    );
    let claims = controller.store();
    // A class that appears (or is replaced) may unblock the claims naming it.
    let controller = controller.watches(
        Api::<VolumeAttributesClass>::all(client),
        watcher::Config::default(),
        move |class| {
            let name = class.name_any();
            claims
                .state()
                .into_iter()
                .filter(|claim| requested_class(claim) == Some(name.as_str()))
                .map(|claim| ObjectRef::from_obj(claim.as_ref()))
                .collect::<Vec<_>>()
        },
    );
    tokio::spawn(
        controller
            .run(reconcile, error_policy, context)
            .for_each(|_| futures::future::ready(())),
    )
}

/// Why a step of the emulation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused or failed a request.
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

struct Context {
    client: Client,
    delay: Duration,
    recorder: Recorder,
    /// When the modification of a claim (by uid) to a class began. Lost on
    /// restart, which only restarts the delay.
    started: Mutex<HashMap<String, (String, Instant)>>,
}

impl Context {
    /// How long the modification of `uid` to `class` still has to run,
    /// starting the clock if it was not running for that target.
    fn remaining(&self, uid: &str, class: &str) -> Duration {
        let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = started
            .entry(uid.to_owned())
            .or_insert_with(|| (class.to_owned(), Instant::now()));
        if entry.0 != class {
            *entry = (class.to_owned(), Instant::now());
        }
        self.delay.saturating_sub(entry.1.elapsed())
    }

    fn forget(&self, uid: &str) {
        self.started
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(uid);
    }
}

fn error_policy(claim: Arc<PersistentVolumeClaim>, error: &Error, _: Arc<Context>) -> Action {
    tracing::warn!(claim = %ObjectRef::from_obj(claim.as_ref()), %error, "modify-volume step failed; retrying");
    Action::requeue(RETRY)
}

fn requested_class(claim: &PersistentVolumeClaim) -> Option<&str> {
    claim
        .spec
        .as_ref()?
        .volume_attributes_class_name
        .as_deref()
        .filter(|c| !c.is_empty())
}

fn current_class(claim: &PersistentVolumeClaim) -> Option<&str> {
    claim
        .status
        .as_ref()?
        .current_volume_attributes_class_name
        .as_deref()
        .filter(|c| !c.is_empty())
}

fn modify_status(claim: &PersistentVolumeClaim) -> Option<&ModifyVolumeStatus> {
    claim.status.as_ref()?.modify_volume_status.as_ref()
}

async fn reconcile(claim: Arc<PersistentVolumeClaim>, ctx: Arc<Context>) -> Result<Action, Error> {
    let claims: Api<PersistentVolumeClaim> =
        Api::namespaced(ctx.client.clone(), &claim.namespace().unwrap_or_default());
    // The cached copy can lag behind this emulation's own last write; acting
    // on it could repeat a finished modification.
    let Some(claim) = claims.get_opt(&claim.name_any()).await? else {
        ctx.forget(&claim.uid().unwrap_or_default());
        return Ok(Action::await_change());
    };
    let uid = claim.uid().unwrap_or_default();
    let spec = claim.spec.as_ref();
    let bound = claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
    let volume = spec
        .and_then(|s| s.volume_name.clone())
        .filter(|v| !v.is_empty());
    let (true, Some(volume), Some(class)) = (
        bound,
        volume,
        spec.and_then(|s| s.storage_class_name.as_deref()),
    ) else {
        return Ok(Action::await_change());
    };
    if ![STORAGE_CLASS, FIXED_STORAGE_CLASS, OFFLINE_STORAGE_CLASS].contains(&class) {
        return Ok(Action::await_change());
    }
    let status = modify_status(&claim);
    let in_progress_to = status
        .filter(|s| s.status == IN_PROGRESS)
        .and_then(|s| s.target_volume_attributes_class_name.clone());

    let target = match (requested_class(&claim), current_class(&claim)) {
        (Some(requested), current) if current != Some(requested) || status.is_some() => {
            requested.to_owned()
        }
        (Some(_), _) => {
            ctx.forget(&uid);
            return Ok(Action::requeue(RESYNC));
        }
        // A modification the driver already accepted runs to its end, as
        // the external-resizer lets it.
        (None, _) if in_progress_to.is_some() => in_progress_to.clone().unwrap_or_default(),
        (None, Some(current)) => {
            // The emulated driver puts the volume back to its defaults. (The
            // 1.34+ API server refuses to unset the class once a current one
            // is recorded, so this is reached only by a status write.)
            let note = format!("volume {volume} reverted to driver defaults (was class {current})");
            patch_status(
                &claims,
                &claim,
                serde_json::json!({
                    "currentVolumeAttributesClassName": null,
                    "modifyVolumeStatus": null,
                }),
            )
            .await?;
            publish(
                &ctx,
                &claim,
                EventType::Normal,
                "VolumeModifySuccessful",
                note,
            )
            .await;
            return Ok(Action::requeue(RESYNC));
        }
        // As the external-resizer: the last result stays on record.
        (None, None) => return Ok(Action::requeue(RESYNC)),
    };

    let classes: Api<VolumeAttributesClass> = Api::all(ctx.client.clone());
    let failure = match classes.get_opt(&target).await? {
        None => Some((PENDING, format!("VAC {target:?} does not exist."))),
        Some(class) if class.driver_name != DRIVER_NAME => Some((
            INFEASIBLE,
            format!(
                "rpc error: code = InvalidArgument desc = VolumeAttributesClass {target} is for \
                 driver {} which does not match driver name {DRIVER_NAME}",
                class.driver_name
            ),
        )),
        Some(_) => None,
    };
    if let Some((state, note)) = failure {
        ctx.forget(&uid);
        if !has_status(&claim, &target, state) {
            patch_status(&claims, &claim, modify_volume_status(&target, state)).await?;
            publish(&ctx, &claim, EventType::Warning, "VolumeModifyFailed", note).await;
        }
        return Ok(Action::requeue(RETRY_FAILED));
    }

    if !has_status(&claim, &target, IN_PROGRESS) {
        ctx.forget(&uid);
        patch_status(&claims, &claim, modify_volume_status(&target, IN_PROGRESS)).await?;
        let note = format!(
            "external resizer is modifying volume {} with vac {target}",
            claim.name_any()
        );
        publish(&ctx, &claim, EventType::Normal, "VolumeModify", note).await;
    }
    let remaining = ctx.remaining(&uid, &target);
    if !remaining.is_zero() {
        return Ok(Action::requeue(remaining));
    }

    // The volume records its class before the claim, as the external-resizer
    // does, so a crash in between leaves a state the next pass completes.
    // The API server allows the field only on CSI volumes; on a hostPath
    // volume only the claim records the class.
    let volumes: Api<PersistentVolume> = Api::all(ctx.client.clone());
    if let Some(pv) = volumes.get_opt(&volume).await? {
        let spec = pv.spec.as_ref();
        let csi = spec.is_some_and(|s| s.csi.is_some());
        let class = spec.and_then(|s| s.volume_attributes_class_name.as_deref());
        if csi && class != Some(target.as_str()) {
            let patch = serde_json::json!({ "spec": { "volumeAttributesClassName": target } });
            volumes
                .patch(&volume, &patch_params(), &Patch::Merge(&patch))
                .await?;
        }
    }
    patch_status(
        &claims,
        &claim,
        serde_json::json!({
            "currentVolumeAttributesClassName": target,
            "modifyVolumeStatus": null,
        }),
    )
    .await?;
    ctx.forget(&uid);
    let note = format!(
        "external resizer modified volume {} with vac {target} successfully",
        claim.name_any()
    );
    publish(
        &ctx,
        &claim,
        EventType::Normal,
        "VolumeModifySuccessful",
        note,
    )
    .await;
    Ok(Action::requeue(RESYNC))
}

fn has_status(claim: &PersistentVolumeClaim, target: &str, state: &str) -> bool {
    modify_status(claim).is_some_and(|s| {
        s.status == state && s.target_volume_attributes_class_name.as_deref() == Some(target)
    })
}

fn modify_volume_status(target: &str, state: &str) -> serde_json::Value {
    serde_json::json!({
        "modifyVolumeStatus": { "targetVolumeAttributesClassName": target, "status": state },
    })
}

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    }
}

async fn patch_status(
    claims: &Api<PersistentVolumeClaim>,
    claim: &PersistentVolumeClaim,
    status: serde_json::Value,
) -> Result<(), Error> {
    // The resource version makes the write conditional: a claim that changed
    // since it was read is reconciled again instead of overwritten blindly.
    let patch = serde_json::json!({
        "metadata": { "resourceVersion": claim.resource_version() },
        "status": status,
    });
    claims
        .patch_status(&claim.name_any(), &patch_params(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

async fn publish(
    ctx: &Context,
    claim: &PersistentVolumeClaim,
    type_: EventType,
    reason: &str,
    note: String,
) {
    let event = Event {
        type_,
        reason: reason.to_owned(),
        note: Some(note),
        action: "ModifyVolume".to_owned(),
        secondary: None,
    };
    // Events are for people reading `kubectl describe`; losing one must not
    // fail the modification it reports.
    if let Err(error) = ctx.recorder.publish(&event, &claim.object_ref(&())).await {
        tracing::debug!(%error, reason, "could not publish event");
    }
}
