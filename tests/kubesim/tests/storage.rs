//! The `local-sim` provisioner and the ModifyVolume emulation against a real
//! control plane: the PV binder, the API server's PVC validation and the
//! events API are the real ones. No node agent runs Pods here, so the test
//! plays the scheduler's part by annotating claims with the selected node.

// A test reports failure by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::future::Future;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::storage::v1::{StorageClass, VolumeAttributesClass};
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kubesim::provisioner::{self, PROVISIONED_BY_ANNOTATION, SELECTED_NODE_ANNOTATION};
use kubesim::{DRIVER_NAME, STORAGE_CLASS, modify_volume};
use localcluster::{LocalCluster, Options};
use serde_json::json;

const NAMESPACE: &str = "default";
const NODE: &str = "sim-node-1";
const TIMEOUT: Duration = Duration::from_secs(30);
/// Long enough for a 100 ms poll to see the InProgress state.
const MODIFY_DELAY: Duration = Duration::from_secs(2);
/// How long the emulated controller expansion takes.
const EXPANSION_DELAY: Duration = Duration::from_secs(2);

#[tokio::test]
async fn provisioning_expansion_and_volume_attributes_classes() -> anyhow::Result<()> {
    let cluster = LocalCluster::start(Options {
        name: "kubesim-storage".into(),
        ..Default::default()
    })
    .await?;
    let client = cluster.client().await?;
    let nodes_root = cluster.dir().join("kubesim-nodes");
    std::fs::create_dir_all(&nodes_root)?;

    provisioner::ensure_storage_class(&client).await?;
    provisioner::ensure_storage_class(&client)
        .await
        .context("second ensure_storage_class")?;
    let class = Api::<StorageClass>::all(client.clone())
        .get(STORAGE_CLASS)
        .await?;
    ensure!(
        class.provisioner == DRIVER_NAME,
        "provisioner is {}",
        class.provisioner
    );
    ensure!(class.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer"));
    ensure!(class.reclaim_policy.as_deref() == Some("Delete"));
    ensure!(class.allow_volume_expansion == Some(true));

    create_node(&client).await?;
    let provisioner = provisioner::spawn(client.clone(), nodes_root.clone(), EXPANSION_DELAY);
    let modifier = modify_volume::spawn(client.clone(), MODIFY_DELAY);

    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), NAMESPACE);
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let classes: Api<VolumeAttributesClass> = Api::all(client.clone());

    // WaitForFirstConsumer: nothing happens until the scheduler picks a node.
    let claim = claims
        .create(&PostParams::default(), &claim_manifest("data", None))
        .await?;
    let pv_name = format!("pvc-{}", claim.uid().unwrap());
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(
        volumes.get_opt(&pv_name).await?.is_none(),
        "a volume was provisioned before the claim had a selected node"
    );

    select_node(&claims, "data").await?;
    let pv = wait_for("the provisioned PersistentVolume", || async {
        Ok(volumes.get_opt(&pv_name).await?.ok_or("absent"))
    })
    .await?;
    let directory = nodes_root.join(NODE).join("volumes").join(&pv_name);
    check_volume(&pv, &claim, &directory)?;
    wait_for(
        "the claim to be Bound to the volume by the PV binder",
        || async {
            let claim = claims.get("data").await?;
            let volume = claim.spec.as_ref().and_then(|s| s.volume_name.clone());
            Ok(
                if phase(&claim) == "Bound" && volume.as_deref() == Some(pv_name.as_str()) {
                    Ok(())
                } else {
                    Err(format!("phase {}, volumeName {volume:?}", phase(&claim)))
                },
            )
        },
    )
    .await?;

    // Expansion: the claim says `Resizing` while the old size is still reported, then the
    // volume and the claim report the new size and the condition is gone.
    let patch = json!({ "spec": { "resources": { "requests": { "storage": "2Gi" } } } });
    claims
        .patch("data", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let resizing = |c: &PersistentVolumeClaim| {
        c.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Resizing" && c.status == "True")
            })
    };
    wait_for("the claim to say Resizing at its old size", || async {
        let claim = claims.get("data").await?;
        let claim_size = storage(claim.status.as_ref().and_then(|s| s.capacity.as_ref()));
        Ok(if resizing(&claim) && claim_size == "1Gi" {
            Ok(())
        } else {
            Err(format!(
                "Resizing {}, claim status.capacity {claim_size}",
                resizing(&claim)
            ))
        })
    })
    .await?;
    wait_for("the volume and the claim to report 2Gi", || async {
        let pv = volumes.get(&pv_name).await?;
        let claim = claims.get("data").await?;
        let pv_size = storage(pv.spec.as_ref().and_then(|s| s.capacity.as_ref()));
        let claim_size = storage(claim.status.as_ref().and_then(|s| s.capacity.as_ref()));
        Ok(
            if pv_size == "2Gi" && claim_size == "2Gi" && !resizing(&claim) {
                Ok(())
            } else {
                Err(format!(
                    "PV capacity {pv_size}, claim status.capacity {claim_size}, Resizing {}",
                    resizing(&claim)
                ))
            },
        )
    })
    .await?;

    // A class of this driver: InProgress, then current.
    create_class(&classes, "gold", DRIVER_NAME).await?;
    set_class(&claims, "data", "gold").await?;
    wait_for_modify_status(&claims, "data", "gold", "InProgress").await?;
    wait_for_current(&claims, "data", "gold").await?;
    wait_for_event(&client, "data", "VolumeModifySuccessful").await?;

    // Another class of this driver: the same again.
    create_class(&classes, "silver", DRIVER_NAME).await?;
    set_class(&claims, "data", "silver").await?;
    wait_for_modify_status(&claims, "data", "silver", "InProgress").await?;
    wait_for_current(&claims, "data", "silver").await?;

    // A class of another driver: the driver rejects its parameters.
    create_class(&classes, "foreign", "other.csi.example.com").await?;
    set_class(&claims, "data", "foreign").await?;
    wait_for_modify_status(&claims, "data", "foreign", "Infeasible").await?;
    wait_for_event(&client, "data", "VolumeModifyFailed").await?;
    let claim = claims.get("data").await?;
    ensure!(
        current(&claim) == Some("silver"),
        "current class changed to {:?}",
        current(&claim)
    );
    // Failed states are written once, not on every pass.
    assert_quiet(&claims, "data", "an Infeasible claim").await?;

    // A class that does not exist (yet): Pending, as the external-resizer
    // reports it, until the class is created.
    set_class(&claims, "data", "late").await?;
    wait_for_modify_status(&claims, "data", "late", "Pending").await?;
    create_class(&classes, "late", DRIVER_NAME).await?;
    wait_for_current(&claims, "data", "late").await?;
    assert_quiet(&claims, "data", "a settled claim").await?;

    // Kubernetes 1.34+ refuses to unset the class once one has been applied.
    let unset = json!({ "spec": { "volumeAttributesClassName": null } });
    match claims
        .patch("data", &PatchParams::default(), &Patch::Merge(&unset))
        .await
    {
        Err(kube::Error::Api(status)) if status.is_invalid() || status.is_forbidden() => {}
        other => bail!("unsetting an applied class was not refused: {other:?}"),
    }

    // A claim created with a class gets a volume of that class.
    claims
        .create(
            &PostParams::default(),
            &claim_manifest("born-gold", Some("gold")),
        )
        .await?;
    select_node(&claims, "born-gold").await?;
    wait_for_current(&claims, "born-gold", "gold").await?;
    let born = claims.get("born-gold").await?;
    ensure!(phase(&born) == "Bound", "born-gold is {}", phase(&born));
    // Only a CSI volume may carry a class, and the PV binder binds a claim
    // only to a volume of its class.
    let born_pv = volumes.get(&format!("pvc-{}", born.uid().unwrap())).await?;
    let spec = born_pv.spec.as_ref().context("PV has no spec")?;
    ensure!(
        spec.volume_attributes_class_name.as_deref() == Some("gold"),
        "born-gold's PV has class {:?}",
        spec.volume_attributes_class_name
    );
    ensure!(
        spec.csi.as_ref().map(|c| c.driver.as_str()) == Some(DRIVER_NAME),
        "born-gold's PV is not a CSI volume of {DRIVER_NAME}"
    );
    let born_dir = provisioner::volume_path(&born_pv).context("born-gold's PV has no path")?;
    ensure!(born_dir.starts_with(nodes_root.join(NODE).join("volumes")) && born_dir.is_dir());

    // A class change of a CSI volume is recorded on the PV as well.
    set_class(&claims, "born-gold", "silver").await?;
    wait_for_current(&claims, "born-gold", "silver").await?;
    let class = volumes
        .get(&born_pv.name_any())
        .await?
        .spec
        .and_then(|s| s.volume_attributes_class_name);
    ensure!(
        class.as_deref() == Some("silver"),
        "born-gold's PV has class {class:?}"
    );

    claims.delete("born-gold", &DeleteParams::default()).await?;
    wait_for("born-gold's volume and directory to be deleted", || async {
        Ok(match volumes.get_opt(&born_pv.name_any()).await? {
            None if !born_dir.exists() => Ok(()),
            None => Err("directory still there".to_owned()),
            Some(pv) => Err(format!("phase {:?}", pv.status.and_then(|s| s.phase))),
        })
    })
    .await?;

    // Deleting the claim releases the volume; the provisioner deletes it.
    claims.delete("data", &DeleteParams::default()).await?;
    wait_for("the released volume to be deleted", || async {
        Ok(match volumes.get_opt(&pv_name).await? {
            None => Ok(()),
            Some(pv) => Err(format!("phase {:?}", pv.status.and_then(|s| s.phase))),
        })
    })
    .await?;
    ensure!(!directory.exists(), "{} still exists", directory.display());

    provisioner.abort();
    modifier.abort();
    Ok(())
}

async fn create_node(client: &Client) -> anyhow::Result<()> {
    let node = Node {
        metadata: ObjectMeta {
            name: Some(NODE.to_owned()),
            labels: Some(BTreeMap::from([(
                provisioner::HOSTNAME_LABEL.to_owned(),
                NODE.to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        ..Node::default()
    };
    Api::<Node>::all(client.clone())
        .create(&PostParams::default(), &node)
        .await?;
    Ok(())
}

fn claim_manifest(name: &str, class: Option<&str>) -> PersistentVolumeClaim {
    serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "storageClassName": STORAGE_CLASS,
            "accessModes": ["ReadWriteOnce"],
            "resources": { "requests": { "storage": "1Gi" } },
            "volumeAttributesClassName": class,
        },
    }))
    .unwrap()
}

/// What the scheduler's volume binder does for a `WaitForFirstConsumer`
/// claim once it has placed the first Pod that uses it.
async fn select_node(claims: &Api<PersistentVolumeClaim>, name: &str) -> anyhow::Result<()> {
    let patch = json!({ "metadata": { "annotations": { SELECTED_NODE_ANNOTATION: NODE } } });
    claims
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

fn check_volume(
    pv: &PersistentVolume,
    claim: &PersistentVolumeClaim,
    directory: &Path,
) -> anyhow::Result<()> {
    let spec = pv.spec.as_ref().context("PV has no spec")?;
    let path = spec.host_path.as_ref().map(|h| PathBuf::from(&h.path));
    ensure!(
        path.as_deref() == Some(directory),
        "hostPath {path:?}, expected {directory:?}"
    );
    let mode = std::fs::metadata(directory)
        .with_context(|| format!("volume directory {}", directory.display()))?
        .permissions()
        .mode();
    ensure!(
        mode & 0o777 == 0o777,
        "directory mode is {:o}",
        mode & 0o777
    );

    let terms = spec
        .node_affinity
        .as_ref()
        .and_then(|a| a.required.as_ref())
        .map(|r| r.node_selector_terms.clone())
        .unwrap_or_default();
    let affinity = serde_json::to_value(&terms)?;
    let expected = json!([{ "matchExpressions": [
        { "key": "kubernetes.io/hostname", "operator": "In", "values": [NODE] }
    ] }]);
    ensure!(affinity == expected, "node affinity {affinity}");

    let claim_ref = spec.claim_ref.as_ref().context("PV has no claimRef")?;
    ensure!(
        claim_ref.namespace.as_deref() == Some(NAMESPACE)
            && claim_ref.name.as_deref() == Some("data")
            && claim_ref.uid == claim.uid(),
        "claimRef {claim_ref:?}"
    );
    ensure!(
        storage(spec.capacity.as_ref()) == "1Gi",
        "capacity {:?}",
        spec.capacity
    );
    ensure!(spec.access_modes == Some(vec!["ReadWriteOnce".to_owned()]));
    ensure!(spec.volume_mode.as_deref() == Some("Filesystem"));
    ensure!(spec.storage_class_name.as_deref() == Some(STORAGE_CLASS));
    ensure!(spec.persistent_volume_reclaim_policy.as_deref() == Some("Delete"));
    ensure!(
        pv.annotations()
            .get(PROVISIONED_BY_ANNOTATION)
            .map(String::as_str)
            == Some(DRIVER_NAME),
        "annotations {:?}",
        pv.annotations()
    );
    Ok(())
}

async fn create_class(
    classes: &Api<VolumeAttributesClass>,
    name: &str,
    driver: &str,
) -> anyhow::Result<()> {
    let class = VolumeAttributesClass {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        driver_name: driver.to_owned(),
        parameters: Some(BTreeMap::from([("tier".to_owned(), name.to_owned())])),
    };
    classes.create(&PostParams::default(), &class).await?;
    Ok(())
}

async fn set_class(
    claims: &Api<PersistentVolumeClaim>,
    name: &str,
    class: &str,
) -> anyhow::Result<()> {
    let patch = json!({ "spec": { "volumeAttributesClassName": class } });
    claims
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

async fn wait_for_modify_status(
    claims: &Api<PersistentVolumeClaim>,
    name: &str,
    target: &str,
    state: &str,
) -> anyhow::Result<()> {
    wait_for(
        &format!("claim {name} to report modifyVolumeStatus {state} to {target}"),
        || async {
            let claim = claims.get(name).await?;
            let status = claim
                .status
                .as_ref()
                .and_then(|s| s.modify_volume_status.as_ref());
            Ok(match status {
                Some(s)
                    if s.status == state
                        && s.target_volume_attributes_class_name.as_deref() == Some(target) =>
                {
                    Ok(())
                }
                other => Err(format!(
                    "modifyVolumeStatus {other:?}, current {:?}",
                    current(&claim)
                )),
            })
        },
    )
    .await
}

async fn wait_for_current(
    claims: &Api<PersistentVolumeClaim>,
    name: &str,
    class: &str,
) -> anyhow::Result<()> {
    wait_for(
        &format!("claim {name} to report currentVolumeAttributesClassName {class}"),
        || async {
            let claim = claims.get(name).await?;
            let status = claim
                .status
                .as_ref()
                .and_then(|s| s.modify_volume_status.as_ref());
            Ok(if current(&claim) == Some(class) && status.is_none() {
                Ok(())
            } else {
                Err(format!(
                    "current {:?}, modifyVolumeStatus {status:?}",
                    current(&claim)
                ))
            })
        },
    )
    .await
}

async fn wait_for_event(client: &Client, claim: &str, reason: &str) -> anyhow::Result<()> {
    let events: Api<Event> = Api::namespaced(client.clone(), NAMESPACE);
    wait_for(&format!("a {reason} event on claim {claim}"), || async {
        let list = events.list(&ListParams::default()).await?;
        let found = list.items.iter().any(|e| {
            e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(claim)
        });
        Ok(if found {
            Ok(())
        } else {
            Err(format!("{} events, none matching", list.items.len()))
        })
    })
    .await
}

/// Fails if the claim is written to while nothing changes.
async fn assert_quiet(
    claims: &Api<PersistentVolumeClaim>,
    name: &str,
    what: &str,
) -> anyhow::Result<()> {
    let before = claims.get(name).await?.resource_version();
    tokio::time::sleep(MODIFY_DELAY * 2).await;
    let after = claims.get(name).await?.resource_version();
    ensure!(
        before == after,
        "{what} was written to while nothing changed ({before:?} -> {after:?})"
    );
    Ok(())
}

fn phase(claim: &PersistentVolumeClaim) -> String {
    claim
        .status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_default()
}

fn current(claim: &PersistentVolumeClaim) -> Option<&str> {
    claim
        .status
        .as_ref()?
        .current_volume_attributes_class_name
        .as_deref()
}

fn storage(
    map: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
) -> String {
    map.and_then(|m| m.get("storage"))
        .map(|q| q.0.clone())
        .unwrap_or_default()
}

/// Polls `probe` until it returns `Ok(Ok(value))`; `Ok(Err(seen))` describes
/// what was seen instead, for the failure message.
async fn wait_for<T, E, F, Fut>(what: &str, mut probe: F) -> anyhow::Result<T>
where
    E: std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Result<T, E>>>,
{
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let seen = match probe().await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(seen)) => seen.to_string(),
            Err(error) => format!("error: {error:#}"),
        };
        if Instant::now() > deadline {
            bail!(
                "timed out after {}s waiting for {what}; last seen: {seen}",
                TIMEOUT.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
