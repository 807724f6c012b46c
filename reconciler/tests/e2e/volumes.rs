//! Site D: VolumeAttributesClass on the claims of a 3-member Auto cluster, through kubesim's
//! ModifyVolume emulation for its driver.
//!
//! Created with `fast` on metadata and data, every claim carries and runs `fast`. Data moves
//! to `slow`: every data claim reaches `slow` in its spec and its status, metadata claims stay
//! `fast`, no pod is restarted and the objects stay readable. A class of another driver is
//! reported `Infeasible` on each node and rolled up on the cluster, which stays Ready; going
//! back to `slow` recovers. Removing the class from a live volume is refused by admission.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::storage::v1::VolumeAttributesClass;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::conditions::cluster::CONDITION_STORAGE_VOLUME_ATTRIBUTES_READY;
use shared_types::conditions::node::CONDITION_VOLUME_ATTRIBUTES_CLASS_APPLIED;
use shared_types::conditions::reason::REASON_INFEASIBLE;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::label::LABEL_CLUSTER;

use crate::support::*;
use crate::{NAME, World, ns};

/// Classes of kubesim's driver, and one of a driver that does not exist here.
const CLASSES: [(&str, &str); 3] = [
    ("e2e-fast", kubesim::DRIVER_NAME),
    ("e2e-slow", kubesim::DRIVER_NAME),
    ("e2e-wrong", "other.example.com"),
];

pub(crate) async fn run(w: &mut World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    ensure_classes(&w.client).await?;
    crate::metrics_token::create_secret(w).await?;
    let mut gc = crate::cluster_manifest();
    gc["spec"]["admin"]["metricsTokenSecretRef"] = crate::metrics_token::reference();
    gc["spec"]["storage"]["metadata"]["volumeAttributesClassName"] = json!("e2e-fast");
    gc["spec"]["storage"]["data"]["volumeAttributesClassName"] = json!("e2e-fast");
    let gc: GarageCluster = serde_json::from_value(gc)?;
    w.clusters.create(&PostParams::default(), &gc).await?;
    wait_ready(&w.clusters, Duration::from_secs(240)).await?;
    let admin = admin_client(&w.client, w.sim, 0).await?;
    s3_round_trip(&admin, w.sim).await?;
    converge(w, "e2e-fast", "e2e-fast").await?;
    println!(
        "volumes: created with e2e-fast on metadata and data, every claim runs it ({:.1}s)",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let pods_before = pod_uids(w).await?;
    set_data_class(&w.clusters, Some("e2e-slow")).await?;
    converge(w, "e2e-fast", "e2e-slow").await?;
    ensure!(
        pod_uids(w).await? == pods_before,
        "a class change restarted a pod"
    );
    read_back(&admin, w.sim).await?;
    println!(
        "volumes: data moved to e2e-slow live: data claims run it, metadata stays e2e-fast, no pod restarted, objects readable ({:.1}s)",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    set_data_class(&w.clusters, Some("e2e-wrong")).await?;
    wait_condition(
        &w.clusters,
        CONDITION_STORAGE_VOLUME_ATTRIBUTES_READY,
        "False",
        Some(REASON_INFEASIBLE),
        Duration::from_secs(180),
    )
    .await?;
    for gn in w.gns.list(&ListParams::default()).await?.items {
        ensure!(
            node_condition(&gn, CONDITION_VOLUME_ATTRIBUTES_CLASS_APPLIED) == Some("False".into()),
            "{} does not report its infeasible class",
            gn.name_any()
        );
    }
    let c = w.clusters.get(NAME).await?;
    ensure!(
        condition(&c, "Ready") == Some("True".into()),
        "an infeasible class made the cluster not Ready"
    );
    set_data_class(&w.clusters, Some("e2e-slow")).await?;
    converge(w, "e2e-fast", "e2e-slow").await?;
    println!(
        "volumes: a class of another driver reported Infeasible on every node and the cluster, which stayed Ready; back to e2e-slow recovered ({:.1}s)",
        t.elapsed().as_secs_f64()
    );

    let refused = set_data_class_once(&w.clusters, None).await;
    ensure!(
        refused.is_err(),
        "removing the class from a live data volume was admitted"
    );
    println!("volumes: removing a live volume's class is refused by admission");

    v1beta1_view(w).await
}

/// The v1beta1 view shows the classes, and a write through it keeps them.
async fn v1beta1_view(w: &World<'_>) -> anyhow::Result<()> {
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
    let gvk = GroupVersionKind::gvk("garage.rajsingh.info", "v1beta1", "GarageCluster");
    let old: Api<DynamicObject> =
        Api::namespaced_with(w.client.clone(), ns(), &ApiResource::from_gvk(&gvk));
    let seen = old.get(NAME).await?;
    let data = &seen.data["spec"]["storage"]["data"]["volumeAttributesClassName"];
    ensure!(
        data == "e2e-slow",
        "the v1beta1 view shows data class {data}, expected e2e-slow"
    );
    old.patch(
        NAME,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"e2e/written-as": "v1beta1"}}})),
    )
    .await?;
    let c = w.clusters.get(NAME).await?;
    let storage = c.spec.storage.as_ref().context("no storage")?;
    ensure!(
        storage
            .data
            .as_ref()
            .and_then(|d| d.volume_attributes_class_name.as_deref())
            == Some("e2e-slow")
            && storage
                .metadata
                .as_ref()
                .and_then(|d| d.volume_attributes_class_name.as_deref())
                == Some("e2e-fast"),
        "a write through v1beta1 lost the classes"
    );
    println!("volumes: the v1beta1 view carries both classes and a write through it keeps them");
    Ok(())
}

/// A Manual GarageNode's claims get their classes too; one whose data claim cannot bind
/// reports `WaitingForBind`.
pub(crate) async fn manual_nodes(w: &World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    for (name, data) in [
        (
            "manual-vac",
            json!({"size": "1Gi", "storageClassName": kubesim::STORAGE_CLASS, "volumeAttributesClassName": "e2e-slow"}),
        ),
        (
            "manual-unbound",
            // No provisioner serves this class, so the claim stays Pending.
            json!({"size": "1Gi", "storageClassName": "e2e-no-such-class", "volumeAttributesClassName": "e2e-slow"}),
        ),
    ] {
        let gn: shared_types::garage_node::GarageNode = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "clusterRef": {"name": NAME},
                "zone": "zone-a",
                "capacity": "1Gi",
                "storage": {
                    "metadata": {"size": "100Mi", "storageClassName": kubesim::STORAGE_CLASS, "volumeAttributesClassName": "e2e-fast"},
                    "data": data,
                },
            },
        }))?;
        w.gns
            .create(&PostParams::default(), &gn)
            .await
            .with_context(|| format!("creating GarageNode {name}"))?;
    }
    let reason_is = |name: &'static str, want: &'static str| {
        let gns = w.gns.clone();
        async move {
            let gn = gns.get(name).await?;
            let c = gn
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|cs| {
                    cs.iter()
                        .find(|c| c.type_ == CONDITION_VOLUME_ATTRIBUTES_CLASS_APPLIED)
                        .cloned()
                });
            Ok::<bool, anyhow::Error>(c.is_some_and(|c| c.reason == want))
        }
    };
    wait(
        "manual-vac Applied and manual-unbound WaitingForBind",
        Duration::from_secs(240),
        || async {
            Ok(reason_is("manual-vac", "Applied").await?
                && reason_is("manual-unbound", "WaitingForBind").await?)
        },
    )
    .await?;
    println!(
        "volumes: a Manual GarageNode's claims run their classes; one whose claim cannot bind reports WaitingForBind ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The classes of [`CLASSES`], created unless they exist.
pub(crate) async fn ensure_classes(client: &kube::Client) -> anyhow::Result<()> {
    let classes: Api<VolumeAttributesClass> = Api::all(client.clone());
    for (name, driver) in CLASSES {
        let vac: VolumeAttributesClass = serde_json::from_value(json!({
            "metadata": {"name": name},
            "driverName": driver,
            "parameters": {"tier": name},
        }))?;
        // Classes are cluster-scoped; an earlier run of this site may have left them.
        match classes.create(&PostParams::default(), &vac).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Waits until every metadata claim runs `metadata` and every data claim `data` (spec and
/// status), with `VolumeAttributesClassApplied=True` on every node and
/// `StorageVolumeAttributesReady=True` on the cluster.
async fn converge(w: &World<'_>, metadata: &str, data: &str) -> anyhow::Result<()> {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client.clone(), ns());
    wait(
        &format!("claims on metadata={metadata}, data={data}"),
        Duration::from_secs(240),
        || async {
            let list = claims
                .list(&ListParams::default().labels(&format!("{LABEL_CLUSTER}={NAME}")))
                .await?
                .items;
            let on = |c: &PersistentVolumeClaim, want: &str| {
                c.spec
                    .as_ref()
                    .and_then(|s| s.volume_attributes_class_name.as_deref())
                    == Some(want)
                    && c.status
                        .as_ref()
                        .and_then(|s| s.current_volume_attributes_class_name.as_deref())
                        == Some(want)
            };
            let (mut meta, mut dat) = (0, 0);
            for c in &list {
                let name = c.name_any();
                if name.starts_with("metadata-") && on(c, metadata) {
                    meta += 1;
                } else if name.starts_with("data-") && on(c, data) {
                    dat += 1;
                }
            }
            let c = w.clusters.get(NAME).await?;
            Ok(meta == 3
                && dat == 3
                && condition(&c, CONDITION_STORAGE_VOLUME_ATTRIBUTES_READY) == Some("True".into()))
        },
    )
    .await
}

pub(crate) async fn pod_uids(w: &World<'_>) -> anyhow::Result<BTreeMap<String, String>> {
    Ok(w.pods
        .list(&ListParams::default().labels(&format!("{LABEL_CLUSTER}={NAME}")))
        .await?
        .items
        .into_iter()
        .map(|p| (p.name_any(), p.metadata.uid.unwrap_or_default()))
        .collect())
}

/// Sets the data volume's class, retried while admission holds the change back.
async fn set_data_class(clusters: &Api<GarageCluster>, class: Option<&str>) -> anyhow::Result<()> {
    wait(
        &format!("data class {class:?} admitted"),
        Duration::from_secs(120),
        || async { Ok(set_data_class_once(clusters, class).await.is_ok()) },
    )
    .await
    .context("setting the data volume's class")
}

async fn set_data_class_once(
    clusters: &Api<GarageCluster>,
    class: Option<&str>,
) -> anyhow::Result<()> {
    clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"storage": {"data": {"volumeAttributesClassName": class}}}}),
            ),
        )
        .await?;
    Ok(())
}
