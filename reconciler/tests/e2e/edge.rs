//! Site F: an edge gateway (the upstream sample: a gateway-only GarageCluster with
//! `connectTo.clusterRef` to the site's cluster) runs its StatefulSet, its member joins the
//! storage cluster's layout with a capacity-less role, and every checksummed object reads
//! through it.

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use kube::{Api, ResourceExt};
use localcluster::wait_until as wait;
use serde_json::Value;
use shared_types::common::ClusterPhase;
use shared_types::garage_cluster::v1beta2::GarageCluster;

use crate::buckets::{create, samples};
use crate::support::*;
use crate::{World, ns};

/// The sample's edge.
const EDGE: &str = "garage-edge-local";

pub(crate) async fn run(w: &mut World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let doc: Value = samples("garage_v1beta2_garagecluster_gateway.yaml")?
        .into_iter()
        .find(|d| d["metadata"]["name"] == EDGE)
        .context("the sample changed")?;
    // The sample's edge names its own admin token, in the sample's Secret.
    let token = samples("garage_v1beta2_garagecluster_gateway.yaml")?
        .into_iter()
        .find(|d| d["kind"] == "Secret")
        .context("the sample's Secret")?;
    let secrets = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(w.client.clone(), ns());
    if secrets
        .get_opt(token["metadata"]["name"].as_str().unwrap_or_default())
        .await?
        .is_none()
    {
        create::<k8s_openapi::api::core::v1::Secret>(&w.client, token).await?;
    }
    let mut doc = doc;
    // The local cluster has no default StorageClass; a real one gives the sample's claim its
    // default class.
    doc["spec"]["gateway"]["metadata"] =
        serde_json::json!({"size": "1Gi", "storageClassName": "local-sim"});
    create::<GarageCluster>(&w.client, doc).await?;
    let clusters: Api<GarageCluster> = w.clusters.clone();
    let admin = admin_client_as_mounted(&w.client, w.sim, "garage-storage-0-0").await?;
    let admin = &admin;
    let clusters = &clusters;
    wait(
        "the edge Running with its member in the layout",
        Duration::from_secs(240),
        || async move {
            let e = clusters.get(EDGE).await?;
            let status = e.status.clone().unwrap_or_default();
            ensure!(
                status.phase == Some(ClusterPhase::Running),
                "edge status {}",
                serde_json::to_string(&status)?
            );
            let ids: Vec<String> = status
                .nodes
                .iter()
                .flatten()
                .filter_map(|n| n.node_id.clone())
                .collect();
            ensure!(ids.len() == 1, "edge members recorded: {ids:?}");
            let layout = admin.layout().await?;
            let role = layout
                .roles
                .iter()
                .find(|r| r.id.to_string() == ids[0])
                .context("the edge member has no role")?;
            ensure!(role.capacity.is_none(), "the edge member stores data");
            Ok(true)
        },
    )
    .await?;
    // Its pods run with the edge's own admin token, from the edge's immutable copy.
    let set = Api::<k8s_openapi::api::apps::v1::StatefulSet>::namespaced(w.client.clone(), ns())
        .get(&format!("{EDGE}-gateway"))
        .await?;
    let mounted: Vec<String> = set
        .spec
        .and_then(|s| s.template.spec)
        .map(|p| p.volumes.unwrap_or_default())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|v| v.secret?.secret_name)
        .collect();
    ensure!(
        mounted
            .iter()
            .any(|n| n.starts_with(&format!("{EDGE}-credentials-"))),
        "the edge does not mount its own token's copy: {mounted:?}"
    );
    let ip = w
        .sim
        .pod_ip(ns(), &format!("{EDGE}-gateway-0"))
        .context("the edge pod has no address")?;
    let store = w.store.as_ref().context("no objects written")?;
    verify(store, &format!("http://{ip}:3900"), &w.checksummed).await?;
    println!(
        "edge: the sample edge gateway joined with a capacity-less role and served {} checksummed objects ({:.1}s)",
        w.checksummed.len(),
        t.elapsed().as_secs_f64()
    );
    scale_through_v1beta1(w, admin).await?;
    let t = Instant::now();
    let uid = clusters.get(EDGE).await?.metadata.uid.unwrap_or_default();
    clusters
        .delete(EDGE, &kube::api::DeleteParams::default())
        .await?;
    wait(
        "the edge gone with its role",
        Duration::from_secs(240),
        || async {
            let tag = format!("cluster-uid:{uid}");
            let held = admin
                .layout()
                .await?
                .roles
                .iter()
                .any(|r| r.tags.contains(&tag));
            // Its claims go with it (an edge's default retention is Delete).
            let claims = Api::<k8s_openapi::api::core::v1::PersistentVolumeClaim>::namespaced(
                w.client.clone(),
                ns(),
            )
            .list(
                &kube::api::ListParams::default()
                    .labels(&format!("app.kubernetes.io/instance={EDGE}")),
            )
            .await?
            .items;
            ensure!(
                !held,
                "the storage cluster's layout still holds a role of the edge"
            );
            ensure!(
                admin.layout_history().await?.is_settled(),
                "the storage cluster's layout history is not settled"
            );
            let claims: Vec<String> = claims.iter().map(ResourceExt::name_any).collect();
            ensure!(claims.is_empty(), "claims left: {claims:?}");
            ensure!(
                clusters.get_opt(EDGE).await?.is_none(),
                "the edge is still there"
            );
            Ok(true)
        },
    )
    .await?;
    println!(
        "edge: deleted, its role left the storage cluster's layout first ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The edge's roles in the storage cluster's layout, by the edge's UID.
pub(crate) async fn edge_roles(
    admin: &garage_admin::AdminClient,
    uid: &str,
) -> anyhow::Result<Vec<garage_admin::LayoutRole>> {
    let tag = format!("cluster-uid:{uid}");
    Ok(admin
        .layout()
        .await?
        .roles
        .into_iter()
        .filter(|r| r.tags.contains(&tag))
        .collect())
}

/// `kubectl scale` on the edge's v1beta1 view (its gateway replicas there): a second member
/// joins and serves every object, then scaling back retires its role and the first member
/// still serves every object.
async fn scale_through_v1beta1(
    w: &World<'_>,
    admin: &garage_admin::AdminClient,
) -> anyhow::Result<()> {
    use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
    use kube::core::GroupVersionKind;
    let t = Instant::now();
    let gvk = GroupVersionKind::gvk("garage.rajsingh.info", "v1beta1", "GarageCluster");
    let old: Api<DynamicObject> = Api::namespaced_with(
        w.client.clone(),
        ns(),
        &ApiResource::from_gvk_with_plural(&gvk, "garageclusters"),
    );
    let uid = w.clusters.get(EDGE).await?.metadata.uid.unwrap_or_default();
    let store = w.store.as_ref().context("no objects written")?;
    for (replicas, gone) in [(2, None), (1, Some(format!("{EDGE}-gateway-1")))] {
        old.patch_scale(
            EDGE,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"replicas": replicas}})),
        )
        .await
        .context("scale through the v1beta1 view")?;
        let scale = old.get_scale(EDGE).await?;
        ensure!(
            scale.spec.and_then(|s| s.replicas) == Some(replicas),
            "the v1beta1 Scale reads back another count"
        );
        let (clusters, uid, sim, gone) = (&w.clusters, uid.as_str(), w.sim, gone.as_deref());
        wait(
            &format!("{replicas} edge members with a role each"),
            Duration::from_secs(240),
            || async move {
                let e = clusters.get(EDGE).await?;
                let status = e.status.unwrap_or_default();
                let recorded = status.nodes.iter().flatten().count();
                let roles = edge_roles(admin, uid).await?;
                // A member scaled away has stopped, and only after every node acknowledged
                // the layout without it: one stopped before would hold the layout's
                // history back for good.
                let stopped = gone.is_none_or(|pod| sim.pod_ip(ns(), pod).is_none());
                let settled = admin.layout_history().await?.is_settled();
                Ok(stopped
                    && settled
                    && status.phase == Some(ClusterPhase::Running)
                    && status.ready_replicas == Some(replicas)
                    && recorded == usize::try_from(replicas)?
                    && roles.len() == recorded
                    && roles.iter().all(|r| r.capacity.is_none()))
            },
        )
        .await?;
        for i in 0..replicas {
            let pod = format!("{EDGE}-gateway-{i}");
            let ip = w
                .sim
                .pod_ip(ns(), &pod)
                .context("an edge pod has no address")?;
            verify(store, &format!("http://{ip}:3900"), &w.checksummed).await?;
        }
    }
    println!(
        "edge: scaled to 2 and back to 1 through the v1beta1 Scale, one role per member each time, every object read through every member ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
