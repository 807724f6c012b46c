//! Site C: a node-local pool (`spec.storage.nodeLocalPools`), on its own beside sites A and B.
//!
//! The admin prepares HostPath directories on n1..n4, each with the `.garage-volume-id`
//! marker that says the disk is mounted (the operator never creates it), and labels n1..n3
//! for the pool. A pool-only GarageCluster (Manual policy, no default group) then runs one
//! member per selected Node: a GarageNode `garage-node-local-local-<node>` backed by the
//! pool's OnDelete DaemonSet, its node ID recorded on the Kubernetes Node, its `node_key` in
//! that Node's metadata HostPath and nowhere else. 200 random objects are written.
//!
//! A selector typo (matching no Node) only makes the pool wait for members: no member is
//! drained, not even twenty seconds later, and restoring the selector converges again. A
//! replacement follows the add-before-remove order: n4 joins first; then n1 leaves its pool,
//! its member drains with its pod running until the proof, the GarageNode, the pod and the
//! operator's labels on n1 go, the HostPath keeps its data, and every object reads back
//! byte-identical. n6, tainted for this pool alone, joins and is then lost with its machine:
//! the member stays until the user acknowledges the loss, is fenced, its role removed by
//! hand and proven on the destinations, and every object reads back (`pools/lost.rs`).
//! Destroy finally leaves no operator key on any Node and no DaemonSet.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::conditions::cluster::CONDITION_NODE_LOCAL_POOLS_READY;
use shared_types::conditions::reason::{
    REASON_IDENTITY_COLLISION, REASON_WAITING_FOR_MEMBERS,
    REASON_WAITING_FOR_PREVIOUS_NODE_LOCAL_POOL_POD,
};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::{GarageNode, NodeBacking};
use shared_types::keys::annotation::ANNOTATION_DRAIN;
use shared_types::keys::generated::{GENERATED_KEY_PREFIX, SUFFIX_NODE_ID};
use shared_types::keys::label::{LABEL_CLUSTER, LABEL_KUBERNETES_NODE, LABEL_NODE_LOCAL_POOL};

use crate::support::*;
use crate::{DEDICATED_TAINT, NAME, POOL_LOST_TAINT, World, ns};

mod lost;

/// The pool.
const POOL: &str = "local";
/// The admin's Node label the pool selects on.
const POOL_LABEL: &str = "e2e-c/pool";
/// The Nodes with prepared disks; the first three start in the pool, the fourth replaces n1.
const NODES: [&str; 4] = ["n1", "n2", "n3", "n4"];
const METADATA_DIR: &str = "/var/lib/garage/e2e-c/local/metadata";
const DATA_DIR: &str = "/var/lib/garage/e2e-c/local/data";
/// The "disk is mounted" marker in every HostPath directory.
const MARKER: &str = ".garage-volume-id";
/// The pool's DaemonSet.
const DAEMONSET: &str = "garage-storage-local";
/// The admin token Secret a pool requires (`spec.admin.adminTokenSecretRef`); the name the
/// generated one would have, so the shared Admin API helpers read it.
const ADMIN_SECRET: &str = "garage-admin-token";
/// Where kubesim's Pod IPs come from (RFC 2544's benchmarking range).
const POD_SUBNET: &str = "198.18.0.0/15";
/// Garage's RPC port, which the cluster manifest leaves at its default.
const RPC_PORT: u16 = 3901;

pub(crate) async fn run(w: &mut World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let nodes: Api<Node> = Api::all(w.client.clone());
    // a. The admin's disks, mounted: both directories with their marker on every Node.
    for node in NODES {
        for dir in [METADATA_DIR, DATA_DIR] {
            let path = w.sim.host_path(node, dir);
            std::fs::create_dir_all(&path).with_context(|| format!("creating {dir} on {node}"))?;
            std::fs::File::create(path.join(MARKER))
                .with_context(|| format!("creating the marker in {dir} on {node}"))?;
        }
    }
    // b. Three Nodes in the pool.
    for node in &NODES[..3] {
        label_node(&nodes, node, Some(POOL)).await?;
    }
    println!(
        "pools: disks prepared on n1..n4, n1..n3 labelled {POOL_LABEL}={POOL} ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    // c, d. The pool-only cluster converges on one member per selected Node.
    create_cluster(w).await?;
    let setup = Duration::from_secs(360);
    wait_condition(
        &w.clusters,
        CONDITION_NODE_LOCAL_POOLS_READY,
        "True",
        None,
        setup,
    )
    .await?;
    // What is left of the six minutes, but never a single look.
    let left = setup
        .saturating_sub(t.elapsed())
        .max(Duration::from_secs(60));
    wait_ready(&w.clusters, left).await?;
    check_members(w, &nodes, &NODES[..3]).await?;
    for node in &NODES[..3] {
        ensure!(
            node_key_kept(w, node),
            "no node_key in the metadata HostPath of {node}"
        );
    }
    ensure!(
        !node_key_kept(w, NODES[3]),
        "a node_key in the metadata HostPath of n4, which no pool selects"
    );
    let ds = Api::<DaemonSet>::namespaced(w.client.clone(), ns())
        .get(DAEMONSET)
        .await
        .with_context(|| format!("the DaemonSet {DAEMONSET}"))?;
    let strategy = ds
        .spec
        .and_then(|s| s.update_strategy)
        .and_then(|u| u.type_);
    ensure!(
        strategy.as_deref() == Some("OnDelete"),
        "{DAEMONSET} updates by {strategy:?}, not OnDelete"
    );
    w.ids = node_ids(&w.gns).await?;
    println!(
        "pools: Ready with three members on n1..n3, node IDs on the Nodes, node_key on their disks only ({:.1}s)",
        t.elapsed().as_secs_f64()
    );

    // e. 200 random objects, written through n1's member and read back through n2's.
    let via = pool_pod_name(&w.pods, "n1").await?;
    let admin = admin_client_at(&w.client, w.sim, &via).await?;
    // Ready is judged through one member; the one the writes go through must see the others.
    wait(
        "n1's Garage connected to every member",
        Duration::from_secs(120),
        || async {
            Ok(admin
                .cluster_health()
                .await
                .is_ok_and(|h| h.connected_nodes >= 3 && h.storage_nodes_up >= 3))
        },
    )
    .await?;
    create_e2e_bucket(&admin).await?;
    write_checksummed(w, &admin, &via).await?;
    read_back_via(w, "n2").await?;
    rpc_addresses_from_subnet(w, &admin).await?;
    println!(
        "pools: {} random objects written and read back ({:.1}s)",
        w.checksummed.len(),
        t.elapsed().as_secs_f64()
    );

    selector_typo(w).await?;
    println!(
        "pools: a selector matching no Node kept every member, restored to Ready ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    replace(w, &nodes).await?;
    println!(
        "pools: n4 joined before n1 drained; n1's pod ran until the proof, its disk kept node_key, every object read back ({:.1}s)",
        t.elapsed().as_secs_f64()
    );

    cold_restart(w).await?;
    lost::run(w, &nodes).await?;
    collision(w, &nodes).await?;

    // h. Destroy: the user's token Secret stays, nothing of the operator's on any Node.
    let kept = format!("Secret/{ADMIN_SECRET}");
    let uid = w.clusters.get(NAME).await?.metadata.uid.unwrap_or_default();
    crate::teardown::destroy(w, &[kept.as_str()]).await?;
    for node in NODES {
        let n = nodes.get(node).await?;
        // Site P's pool may share these Nodes: every key of this cluster must be gone.
        let left: Vec<String> = generated(n.metadata.labels.as_ref())
            .into_iter()
            .chain(generated(n.metadata.annotations.as_ref()))
            .filter(|k| reconciler::desired::pool::is_binding_key(ns(), NAME, &uid, k))
            .collect();
        ensure!(
            left.is_empty(),
            "{node} still carries {left:?} after Destroy"
        );
    }
    ensure!(
        Api::<DaemonSet>::namespaced(w.client.clone(), ns())
            .get_opt(DAEMONSET)
            .await?
            .is_none(),
        "{DAEMONSET} is still there after Destroy"
    );
    Api::<Secret>::namespaced(w.client.clone(), ns())
        .delete(ADMIN_SECRET, &DeleteParams::default())
        .await?;
    println!(
        "pools: Destroy left no operator key on n1..n4 and no DaemonSet ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The admin token Secret, then the pool-only GarageCluster: Manual policy, no default group.
async fn create_cluster(w: &World<'_>) -> anyhow::Result<()> {
    let token = reconciler::controller::garage_access::random_hex32()?;
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": ADMIN_SECRET},
        "stringData": {"admin-token": token},
    }))?;
    Api::<Secret>::namespaced(w.client.clone(), ns())
        .create(&PostParams::default(), &secret)
        .await
        .context("creating the admin token Secret")?;
    let mut gc = crate::cluster_manifest();
    gc["spec"]["admin"] =
        json!({"adminTokenSecretRef": {"name": ADMIN_SECRET, "key": "admin-token"}});
    // No per-pool template: each member publishes its Pod IP inside this subnet.
    gc["spec"]["network"]["rpcPublicAddrSubnet"] = json!(POD_SUBNET);
    gc["spec"]["storage"] = json!({
        "layoutPolicy": "Manual",
        "replicas": 0,
        "nodeLocalPools": [{
            "name": POOL,
            "capacity": "1Gi",
            "metadata": {"hostPath": METADATA_DIR, "hostPathType": "Directory"},
            "data": {"hostPath": DATA_DIR, "hostPathType": "Directory"},
            "selector": {"matchLabels": {POOL_LABEL: POOL}},
            // n6, tainted against every other site's pods, is this pool's to lose.
            "podTemplate": {"tolerations": [{
                "key": DEDICATED_TAINT,
                "operator": "Equal",
                "value": POOL_LOST_TAINT,
                "effect": "NoSchedule",
            }]},
        }],
    });
    let gc: GarageCluster = serde_json::from_value(gc)?;
    w.clusters
        .create(&PostParams::default(), &gc)
        .await
        .context("creating the pool-only GarageCluster")?;
    Ok(())
}

/// f. The selector patched to match no Node: the pool waits for members and drains no one,
/// even twenty seconds later; restored, it converges again.
async fn selector_typo(w: &World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let members = ["n1", "n2", "n3"];
    set_selector(&w.clusters, "nothing").await?;
    wait_condition(
        &w.clusters,
        CONDITION_NODE_LOCAL_POOLS_READY,
        "False",
        Some(REASON_WAITING_FOR_MEMBERS),
        Duration::from_secs(180),
    )
    .await?;
    members_kept(&w.gns, &members).await?;
    println!(
        "pools: selector typo: {CONDITION_NODE_LOCAL_POOLS_READY}=False/{REASON_WAITING_FOR_MEMBERS}, no member drained ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(20)).await;
    members_kept(&w.gns, &members)
        .await
        .context("twenty seconds after the typo")?;
    set_selector(&w.clusters, POOL).await?;
    wait_condition(
        &w.clusters,
        CONDITION_NODE_LOCAL_POOLS_READY,
        "True",
        None,
        Duration::from_secs(180),
    )
    .await?;
    Ok(())
}

/// g. n4 joins, then n1 leaves: its member drains with the pod running until the proof, then
/// the GarageNode, the pod and the activation label go; the disk keeps its data.
async fn replace(w: &World<'_>, nodes: &Api<Node>) -> anyhow::Result<()> {
    let (clusters, gns, pods) = (w.clusters.clone(), w.gns.clone(), w.pods.clone());
    let t = Instant::now();
    // n4's data disk is "not mounted": its marker is missing, so its pod must not start.
    let marker = w.sim.host_path("n4", DATA_DIR).join(MARKER);
    std::fs::remove_file(&marker).context("removing n4's data marker")?;
    label_node(nodes, "n4", Some(POOL)).await?;
    unmounted_disk_stops_the_pod(w).await?;
    std::fs::File::create(&marker).context("restoring n4's data marker")?;
    let joining = member("n4");
    wait(
        &format!("{joining} with a node ID"),
        Duration::from_secs(600),
        || async {
            Ok(gns
                .get_opt(&joining)
                .await?
                .and_then(|n| n.status?.node_id)
                .is_some())
        },
    )
    .await?;
    wait_ready(&clusters, Duration::from_secs(300)).await?;
    check_members(w, nodes, &NODES).await?;
    println!(
        "pools: n4 joined, four members, Ready ({:.1}s)",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let admin = admin_client_at(&w.client, w.sim, &pool_pod_name(&pods, "n2").await?).await?;
    label_node(nodes, "n1", None).await?;
    let leaving = member("n1");
    // A crash in the middle of the membership change: once the drain of the leaving member
    // is recorded, the reconciler is aborted and a new one resumes from the record.
    wait(
        &format!("the drain of {leaving} recorded"),
        Duration::from_secs(300),
        || async {
            let c = clusters.get(NAME).await?;
            Ok(c.status
                .and_then(|s| s.storage_drain)
                .and_then(|d| d.actor?.name)
                .is_some_and(|n| n == leaving))
        },
    )
    .await?;
    w.stop_reconciler().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    w.start_reconciler().await;
    println!("pools: reconciler restarted with the drain of {leaving} recorded");
    let running_seen = Arc::new(AtomicBool::new(false));
    let proof_seen = Arc::new(AtomicBool::new(false));
    let pod_gone_early = Arc::new(AtomicBool::new(false));
    // The drain proof waits for Garage's own block delays (about eleven minutes).
    let drained = wait(
        &format!("{leaving} drained and deleted"),
        Duration::from_secs(1500),
        || {
            let (clusters, gns, pods, leaving) =
                (clusters.clone(), gns.clone(), pods.clone(), leaving.clone());
            let (running, proven, early) = (
                running_seen.clone(),
                proof_seen.clone(),
                pod_gone_early.clone(),
            );
            async move {
                let Some(node) = gns.get_opt(&leaving).await? else {
                    return Ok(true);
                };
                if drain_proven(&clusters, &leaving, Some(&node)).await? {
                    proven.store(true, Ordering::SeqCst);
                }
                match pool_pod(&pods, "n1").await? {
                    Some(p) if phase(&p) == Some("Running") => {
                        running.store(true, Ordering::SeqCst)
                    }
                    Some(_) => {}
                    None if !proven.load(Ordering::SeqCst) => early.store(true, Ordering::SeqCst),
                    None => {}
                }
                Ok(false)
            }
        },
    )
    .await;
    or_dump_drain(drained, &clusters, &admin).await?;
    ensure!(
        running_seen.load(Ordering::SeqCst),
        "n1's pod was never seen Running while {leaving} drained"
    );
    ensure!(
        !pod_gone_early.load(Ordering::SeqCst),
        "n1's pod went before the drain proof of {leaving}"
    );
    println!(
        "pools: {leaving} drained, proven and deleted ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    wait(
        "n1's pool pod and the operator's labels on n1 gone",
        Duration::from_secs(300),
        || async {
            let n = nodes.get("n1").await?;
            Ok(pool_pod(&pods, "n1").await?.is_none()
                && generated(n.metadata.labels.as_ref()).is_empty())
        },
    )
    .await?;
    ensure!(
        node_key_kept(w, "n1"),
        "n1's metadata HostPath lost node_key: HostPath data is never deleted"
    );
    read_back_via(w, "n2").await
}

/// With n4's data marker missing, its pool pod is scheduled but never starts: no Garage
/// process, nothing written to the unmounted path, no role in the layout.
async fn unmounted_disk_stops_the_pod(w: &World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    wait(
        "a pool pod scheduled on n4",
        Duration::from_secs(180),
        || async { Ok(pool_pod(&w.pods, "n4").await?.is_some()) },
    )
    .await?;
    // Long enough for a started process to have written its node_key many times over.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let pod = pool_pod(&w.pods, "n4")
        .await?
        .context("n4's pool pod went")?;
    ensure!(
        phase(&pod) != Some("Running"),
        "n4's pool pod runs without its data disk's marker"
    );
    ensure!(
        !node_key_kept(w, "n4"),
        "Garage wrote node_key on n4 although its data disk is not mounted"
    );
    let id = w
        .gns
        .get_opt(&member("n4"))
        .await?
        .and_then(|n| n.status?.node_id);
    ensure!(
        id.is_none(),
        "n4's member has a node ID ({id:?}) without a running pod"
    );
    let admin = admin_client_at(&w.client, w.sim, &pool_pod_name(&w.pods, "n2").await?).await?;
    let roles = admin.layout().await?.roles.len();
    ensure!(
        roles == 3,
        "{roles} roles in the layout while n4's disk is missing, expected 3"
    );
    println!(
        "pools: n4 without its data marker: pod scheduled, never started, no node_key, no role ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The DaemonSet deleted out of band (its pods orphaned) is not recreated while those pods
/// live; then every pool pod is killed at once and the pool comes back cold with the same
/// identities, and every object reads back.
async fn cold_restart(w: &World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let sets: Api<DaemonSet> = Api::namespaced(w.client.clone(), ns());
    let before = node_ids(&w.gns).await?;
    let old_uid = sets.get(DAEMONSET).await?.metadata.uid;
    sets.delete(DAEMONSET, &DeleteParams::orphan()).await?;
    wait_condition(
        &w.clusters,
        CONDITION_NODE_LOCAL_POOLS_READY,
        "False",
        Some(REASON_WAITING_FOR_PREVIOUS_NODE_LOCAL_POOL_POD),
        Duration::from_secs(120),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    ensure!(
        sets.get_opt(DAEMONSET).await?.is_none(),
        "{DAEMONSET} was recreated while the old pods still run"
    );
    println!(
        "pools: DaemonSet deleted out of band: not recreated while its pods live ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    let selector = format!("{LABEL_CLUSTER}={NAME},{LABEL_NODE_LOCAL_POOL}={POOL}");
    w.pods
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels(&selector),
        )
        .await?;
    wait(
        &format!("{DAEMONSET} recreated"),
        Duration::from_secs(180),
        || async {
            Ok(sets
                .get_opt(DAEMONSET)
                .await?
                .is_some_and(|d| d.metadata.uid != old_uid))
        },
    )
    .await?;
    wait_condition(
        &w.clusters,
        CONDITION_NODE_LOCAL_POOLS_READY,
        "True",
        None,
        Duration::from_secs(600),
    )
    .await?;
    wait_ready(&w.clusters, Duration::from_secs(300)).await?;
    let after = node_ids(&w.gns).await?;
    ensure!(
        before == after,
        "identities changed across the cold restart: {before:?} -> {after:?}"
    );
    read_back_via(w, "n3").await?;
    println!(
        "pools: every pool pod killed at once: same identities, Ready, every object read back ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// n2's node key copied onto n1's metadata disk (n1 left the pool earlier), then n1 selected
/// again: its member reports n2's node ID. The pool reports `IdentityCollision`, the layout
/// does not move and neither member is drained.
async fn collision(w: &World<'_>, nodes: &Api<Node>) -> anyhow::Result<()> {
    let t = Instant::now();
    let admin = admin_client_at(&w.client, w.sim, &pool_pod_name(&w.pods, "n2").await?).await?;
    let before = admin.layout().await?;
    // The identity is the node key: n1's disk gets n2's key (its own database, so the copy
    // starts whatever n2 is writing at the time).
    let from = w.sim.host_path("n2", METADATA_DIR);
    let to = w.sim.host_path("n1", METADATA_DIR);
    for entry in std::fs::read_dir(&to)? {
        let entry = entry?;
        if entry.file_name() == MARKER {
            continue;
        }
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    for key in ["node_key", "node_key.pub"] {
        std::fs::copy(from.join(key), to.join(key))
            .with_context(|| format!("copying n2's {key} onto n1"))?;
    }
    label_node(nodes, "n1", Some(POOL)).await?;
    wait_condition(
        &w.clusters,
        CONDITION_NODE_LOCAL_POOLS_READY,
        "False",
        Some(REASON_IDENTITY_COLLISION),
        Duration::from_secs(300),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(15)).await;
    let after = admin.layout().await?;
    ensure!(
        after.version == before.version && after.roles.len() == before.roles.len(),
        "the layout moved during an identity collision: version {} -> {}, roles {} -> {}",
        before.version,
        after.version,
        before.roles.len(),
        after.roles.len()
    );
    for node in ["n1", "n2"] {
        let gn = w.gns.get(&member(node)).await?;
        ensure!(
            !gn.annotations().contains_key(ANNOTATION_DRAIN)
                && gn.metadata.deletion_timestamp.is_none(),
            "{} is being drained or deleted during an identity collision",
            member(node)
        );
    }
    println!(
        "pools: n2's node key copied onto n1: IdentityCollision, no layout write, no member drained ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Every role of the layout ends its tags with `rpc-address:<its pool pod's IP>:<RPC port>`,
/// the Pod IP being inside `spec.network.rpcPublicAddrSubnet`.
async fn rpc_addresses_from_subnet(
    w: &World<'_>,
    admin: &garage_admin::AdminClient,
) -> anyhow::Result<()> {
    let last = std::sync::Mutex::new(String::new());
    let published = wait(
        "every role tagged with its pod's address",
        Duration::from_secs(120),
        || async {
            let layout = admin.layout().await?;
            let mut wrong = Vec::new();
            for role in &layout.roles {
                let node = role
                    .tags
                    .iter()
                    .find_map(|t| t.strip_prefix("kubernetes-node:"))
                    .unwrap_or_default();
                let ip = pool_pod(&w.pods, node)
                    .await?
                    .and_then(|p| p.status?.pod_ip)
                    .unwrap_or_default();
                let want = format!("rpc-address:{ip}:{RPC_PORT}");
                if ip.is_empty() || role.tags.last() != Some(&want) {
                    wrong.push(format!("{node}: {:?}, want {want} last", role.tags));
                }
            }
            if let Ok(mut l) = last.lock() {
                *l = wrong.join("; ");
            }
            Ok(wrong.is_empty() && !layout.roles.is_empty())
        },
    )
    .await;
    published.with_context(|| {
        let last = last.lock().map(|l| l.clone()).unwrap_or_default();
        format!("the layout's tags: {last}")
    })?;
    println!("pools: every role publishes its pool pod's IP from {POD_SUBNET}");
    Ok(())
}

/// The GarageNode of the pool member on Kubernetes Node `node`.
fn member(node: &str) -> String {
    format!("{NAME}-node-local-{POOL}-{node}")
}

/// Exactly one pool GarageNode per Node of `on`, each backed by the pool, with a 64-hex node
/// ID that its Kubernetes Node records in the operator's node-ID annotation.
async fn check_members(w: &World<'_>, nodes: &Api<Node>, on: &[&str]) -> anyhow::Result<()> {
    let listed = w
        .gns
        .list(&ListParams::default().labels(&format!("{LABEL_NODE_LOCAL_POOL}={POOL}")))
        .await?
        .items;
    let mut names: Vec<String> = listed.iter().map(ResourceExt::name_any).collect();
    names.sort();
    let want: Vec<String> = on.iter().map(|n| member(n)).collect();
    ensure!(
        names == want,
        "pool GarageNodes {names:?}, expected {want:?}"
    );
    for node in on {
        let name = member(node);
        let gn = listed
            .iter()
            .find(|n| n.name_any() == name)
            .with_context(|| format!("{name} is not listed"))?;
        ensure!(
            gn.labels().get(LABEL_KUBERNETES_NODE).map(String::as_str) == Some(*node),
            "{name} is not labelled {LABEL_KUBERNETES_NODE}={node}"
        );
        ensure!(
            gn.spec.backing == Some(NodeBacking::NodeLocalPool),
            "{name} is backed by {:?}",
            gn.spec.backing
        );
        let id = gn
            .status
            .as_ref()
            .and_then(|s| s.node_id.clone())
            .with_context(|| format!("{name} has no node ID"))?;
        ensure!(
            id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{name} has node ID {id:?}, not 64 hex digits"
        );
        let recorded = nodes.get(node).await?.annotations().iter().any(|(k, v)| {
            k.starts_with(GENERATED_KEY_PREFIX) && k.ends_with(SUFFIX_NODE_ID) && *v == id
        });
        ensure!(recorded, "{node} does not record the node ID of {name}");
    }
    Ok(())
}

/// The members on `on` are still there and none is asked to drain.
async fn members_kept(gns: &Api<GarageNode>, on: &[&str]) -> anyhow::Result<()> {
    for node in on {
        let name = member(node);
        let gn = gns
            .get_opt(&name)
            .await?
            .with_context(|| format!("{name} went after a selector typo"))?;
        ensure!(
            !gn.annotations().contains_key(ANNOTATION_DRAIN),
            "{name} was asked to drain after a selector typo"
        );
    }
    Ok(())
}

/// Patches only the pool's selector to `{POOL_LABEL: value}`, every other field as it is.
/// Admission lets a selector change through once the old generation is fully prepared, so a
/// refusal is retried until then.
async fn set_selector(clusters: &Api<GarageCluster>, value: &str) -> anyhow::Result<()> {
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/spec/storage/nodeLocalPools/0/name", "value": POOL},
        {"op": "replace", "path": "/spec/storage/nodeLocalPools/0/selector",
         "value": {"matchLabels": {POOL_LABEL: value}}},
    ]))?;
    wait(
        &format!("the selector {POOL_LABEL}={value} admitted"),
        Duration::from_secs(180),
        || async {
            clusters
                .patch(
                    NAME,
                    &PatchParams::default(),
                    &Patch::<()>::Json(patch.clone()),
                )
                .await?;
            Ok(true)
        },
    )
    .await
}

/// Sets (or, with `None`, removes) the pool label of Kubernetes Node `node`.
async fn label_node(nodes: &Api<Node>, node: &str, value: Option<&str>) -> anyhow::Result<()> {
    nodes
        .patch(
            node,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {POOL_LABEL: value}}})),
        )
        .await
        .with_context(|| format!("labelling {node} {POOL_LABEL}={value:?}"))?;
    Ok(())
}

/// The keys of `map` the operator generates on Kubernetes Nodes.
fn generated(map: Option<&BTreeMap<String, String>>) -> Vec<String> {
    map.into_iter()
        .flatten()
        .map(|(k, _)| k)
        .filter(|k| k.starts_with(GENERATED_KEY_PREFIX))
        .cloned()
        .collect()
}

/// Whether Garage's `node_key` is in the metadata HostPath of `node`.
fn node_key_kept(w: &World<'_>, node: &str) -> bool {
    w.sim
        .host_path(node, METADATA_DIR)
        .join("node_key")
        .exists()
}

/// The pool pod on Kubernetes Node `node`, if any.
async fn pool_pod(pods: &Api<Pod>, node: &str) -> anyhow::Result<Option<Pod>> {
    let selector = format!("{LABEL_CLUSTER}={NAME},{LABEL_NODE_LOCAL_POOL}={POOL}");
    Ok(pods
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .into_iter()
        .find(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node)))
}

/// The name of the pool pod on `node`, which must exist.
async fn pool_pod_name(pods: &Api<Pod>, node: &str) -> anyhow::Result<String> {
    Ok(pool_pod(pods, node)
        .await?
        .with_context(|| format!("no pool pod on {node}"))?
        .name_any())
}

fn phase(p: &Pod) -> Option<&str> {
    p.status.as_ref()?.phase.as_deref()
}

/// Every written object read back byte-identical through the pool pod on `node`.
async fn read_back_via(w: &World<'_>, node: &str) -> anyhow::Result<()> {
    let store = w.store.as_ref().context("no objects were written")?;
    let endpoint = s3(w.sim, &pool_pod_name(&w.pods, node).await?)?;
    verify(store, &endpoint, &w.checksummed).await
}
