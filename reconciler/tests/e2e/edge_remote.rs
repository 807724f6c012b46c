//! Site F: the upstream sample's edge gateway of a storage cluster outside this Kubernetes
//! cluster (`connectTo.adminApiEndpoint`, no `clusterRef`), pointed at the site's cluster by a
//! storage pod's Admin API URL, as it would be at another Kubernetes cluster's. The edge itself
//! writes its members' capacity-less roles through that URL, connects them, serves every
//! checksummed object through each member, scales 2 -> 1 (the role retired before the pod
//! stops) and, deleted, leaves the layout without any role of its own.

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Client};
use localcluster::wait_until as wait;
use serde_json::{Value, json};
use shared_types::common::ClusterPhase;
use shared_types::conditions::cluster::CONDITION_GATEWAY_CONNECTED;
use shared_types::garage_cluster::v1beta2::GarageCluster;

use crate::buckets::{create, samples};
use crate::support::*;
use crate::{World, ns};

/// The sample's remote edge.
const REMOTE: &str = "garage-edge-remote";
/// The storage pod whose Admin API URL the edge is given.
const STORAGE_POD: &str = "garage-storage-0-0";

pub(crate) async fn run(w: &mut World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let (doc, made) = manifest(w).await?;
    create::<GarageCluster>(&w.client, doc).await?;
    let admin = admin_client_as_mounted(&w.client, w.sim, STORAGE_POD).await?;
    let (admin, clusters) = (&admin, &w.clusters);
    let uid = clusters.get(REMOTE).await?.metadata.uid.unwrap_or_default();
    let uid = uid.as_str();
    settles(w, admin, uid, 2, None).await?;
    // The install's policy covers the edge's pods too; its storage peers are not its own
    // pods, so its RPC port admits every source.
    crate::network_policy::check_of(w, REMOTE, Value::Null).await?;
    let store = w.store.as_ref().context("no objects written")?;
    for i in 0..2 {
        let ip = w
            .sim
            .pod_ip(ns(), &format!("{REMOTE}-gateway-{i}"))
            .context("a remote edge pod has no address")?;
        verify(store, &format!("http://{ip}:3900"), &w.checksummed).await?;
    }
    println!(
        "edge_remote: two members joined the layout behind the Admin API URL and served {} checksummed objects each ({:.1}s)",
        w.checksummed.len(),
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let second = clusters
        .get(REMOTE)
        .await?
        .status
        .and_then(|s| s.nodes)
        .unwrap_or_default()
        .into_iter()
        .find(|n| n.pod_name.as_deref() == Some(&format!("{REMOTE}-gateway-1")))
        .and_then(|n| n.node_id)
        .context("the second member's identity is not recorded")?;
    clusters
        .patch(
            REMOTE,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"gateway": {"replicas": 1}}})),
        )
        .await?;
    let leaving = format!("{REMOTE}-gateway-1");
    tokio::try_join!(
        settles(w, admin, uid, 1, Some(&leaving)),
        role_goes_first(w, admin, &leaving, &second)
    )?;
    let ip = w
        .sim
        .pod_ip(ns(), &format!("{REMOTE}-gateway-0"))
        .context("the remote edge pod has no address")?;
    verify(store, &format!("http://{ip}:3900"), &w.checksummed).await?;
    println!(
        "edge_remote: scaled 2 -> 1, the second member's role retired before its pod stopped ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    budget_turned_off(w).await?;
    let t = Instant::now();
    clusters.delete(REMOTE, &DeleteParams::default()).await?;
    let client = &w.client;
    wait(
        "the remote edge gone with its roles",
        Duration::from_secs(240),
        || async move {
            let held = crate::edge::edge_roles(admin, uid).await?;
            ensure!(held.is_empty(), "roles of the edge left: {held:?}");
            ensure!(
                admin.layout_history().await?.is_settled(),
                "the layout history is not settled"
            );
            ensure!(
                clusters.get_opt(REMOTE).await?.is_none(),
                "the edge is still there"
            );
            // Its claims go with it (an edge's default retention is Delete).
            let claims = Api::<k8s_openapi::api::core::v1::PersistentVolumeClaim>::namespaced(
                client.clone(),
                ns(),
            )
            .list(
                &kube::api::ListParams::default()
                    .labels(&format!("app.kubernetes.io/instance={REMOTE}")),
            )
            .await?
            .items;
            ensure!(
                claims.is_empty(),
                "{} claims of the edge left",
                claims.len()
            );
            Ok(true)
        },
    )
    .await?;
    println!(
        "edge_remote: deleted, its role removed through the URL first ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    // The Secrets made for it are the user's to remove, as the site's teardown expects.
    let secrets = Api::<Secret>::namespaced(w.client.clone(), ns());
    for name in made {
        secrets.delete(&name, &DeleteParams::default()).await?;
    }
    Ok(())
}

/// The sample, pointed at this site: its Secrets hold the site cluster's RPC secret and admin
/// token (as a user copies them from the cluster the edge joins), its URL a storage pod's,
/// two members; the gateway's `rpcPublicAddr` (a name this network cannot resolve) and the
/// `publicEndpoint` an edge refuses are left out. With it, the Secrets made for it (those the
/// site did not have).
async fn manifest(w: &World<'_>) -> anyhow::Result<(Value, Vec<String>)> {
    let mut doc = samples("garage_v1beta2_garagecluster_gateway.yaml")?
        .into_iter()
        .find(|d| d["metadata"]["name"] == REMOTE)
        .context("the sample changed")?;
    let to = doc["spec"]["connectTo"].clone();
    let rpc = mounted(&w.client, STORAGE_POD, "rpc-secret").await?;
    let token = mounted_token(&w.client, STORAGE_POD).await?;
    let mut made = Vec::new();
    let own = format!(
        "{:064x}",
        u128::from(rand_u64()) << 64 | u128::from(rand_u64())
    );
    for (reference, value) in [
        (&to["rpcSecretRef"], rpc),
        (&to["adminTokenSecretRef"], token),
        (&doc["spec"]["admin"]["adminTokenSecretRef"], own),
    ] {
        made.extend(put_secret(&w.client, reference, &value).await?);
    }
    let ip = w
        .sim
        .pod_ip(ns(), STORAGE_POD)
        .context("the storage pod has no address")?;
    doc["spec"]["connectTo"]["adminApiEndpoint"] = json!(format!("http://{ip}:3903"));
    let spec = doc["spec"].as_object_mut().context("no spec")?;
    spec.remove("publicEndpoint");
    let gateway = spec["gateway"].as_object_mut().context("no gateway")?;
    gateway.remove("rpcPublicAddr");
    gateway.insert("replicas".into(), json!(2));
    // The local cluster has no default StorageClass.
    gateway.insert(
        "metadata".into(),
        json!({"size": "1Gi", "storageClassName": "local-sim"}),
    );
    Ok((doc, made))
}

/// A pseudo-random word, for a token no one else knows.
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(u64::from(std::process::id()));
    h.finish()
}

/// Creates the Secret `reference` names (name and key) holding `value`, unless it exists;
/// its name when it was made.
async fn put_secret(
    client: &Client,
    reference: &Value,
    value: &str,
) -> anyhow::Result<Option<String>> {
    let name = reference["name"].as_str().context("a Secret reference")?;
    let key = reference["key"].as_str().context("a Secret key")?;
    let api = Api::<Secret>::namespaced(client.clone(), ns());
    if api.get_opt(name).await?.is_none() {
        create::<Secret>(
            client,
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": name}, "stringData": {key: value}}),
        )
        .await?;
        return Ok(Some(name.to_owned()));
    }
    Ok(None)
}

/// Waits for the edge to run `members` members, each with a capacity-less role of its own
/// in a settled layout and seen connected, and for the pod `gone` (scaled away) to have
/// stopped.
async fn settles(
    w: &World<'_>,
    admin: &garage_admin::AdminClient,
    uid: &str,
    members: i32,
    gone: Option<&str>,
) -> anyhow::Result<()> {
    let (clusters, sim) = (&w.clusters, w.sim);
    wait(
        &format!("{members} remote edge members with a role each"),
        Duration::from_secs(240),
        || async move {
            let e = clusters.get(REMOTE).await?;
            let status = e.status.unwrap_or_default();
            let ids: Vec<String> = status
                .nodes
                .iter()
                .flatten()
                .filter_map(|n| n.node_id.clone())
                .collect();
            let roles = crate::edge::edge_roles(admin, uid).await?;
            let connected = status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == CONDITION_GATEWAY_CONNECTED && c.status == "True");
            let stopped = gone.is_none_or(|pod| sim.pod_ip(ns(), pod).is_none());
            let settled = admin.layout_history().await?.is_settled();
            let mut held: Vec<String> = roles.iter().map(|r| r.id.to_string()).collect();
            held.sort();
            let mut recorded = ids.clone();
            recorded.sort();
            Ok(stopped
                && settled
                && connected
                && status.phase == Some(ClusterPhase::Running)
                && status.ready_replicas == Some(members)
                && recorded.len() == usize::try_from(members)?
                && held == recorded
                && roles.iter().all(|r| r.capacity.is_none()))
        },
    )
    .await
}

/// Turning the edge's budget off removes the budget it had.
async fn budget_turned_off(w: &World<'_>) -> anyhow::Result<()> {
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    let budgets = Api::<PodDisruptionBudget>::namespaced(w.client.clone(), ns());
    let name = format!("{REMOTE}-gateway");
    ensure!(
        budgets.get_opt(&name).await?.is_some(),
        "the edge has no budget {name} to begin with"
    );
    w.clusters
        .patch(
            REMOTE,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"gateway": {"podDisruptionBudget": {"enabled": false}}}}),
            ),
        )
        .await?;
    let budgets = &budgets;
    let name = name.as_str();
    wait(
        "the edge's budget gone once turned off",
        Duration::from_secs(60),
        || async move { Ok(budgets.get_opt(name).await?.is_none()) },
    )
    .await?;
    println!("edge_remote: the budget went once turned off");
    Ok(())
}

/// Watches the member `pod` (identity `id`) leave: its pod never stops while its role is in
/// the layout (a member scaled away never gets its role back, so a role read before and
/// after the pod was first seen gone was there while it was gone). Returns once the pod has
/// stopped.
async fn role_goes_first(
    w: &World<'_>,
    admin: &garage_admin::AdminClient,
    pod: &str,
    id: &str,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(240);
    while Instant::now() < deadline {
        let holds = admin
            .layout()
            .await?
            .roles
            .iter()
            .any(|r| r.id.as_str() == id);
        if w.sim.pod_ip(ns(), pod).is_none() {
            let still = admin
                .layout()
                .await?
                .roles
                .iter()
                .any(|r| r.id.as_str() == id);
            ensure!(
                !(holds && still),
                "{pod} stopped while its role was still in the layout"
            );
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    anyhow::bail!("{pod} never stopped")
}
