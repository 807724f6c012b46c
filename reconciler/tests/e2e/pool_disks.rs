//! Site P: a node-local pool on several data disks (`nodeLocalPools[].dataPaths`), on its own
//! beside the other sites, on n2..n4 under HostPath roots no other site uses.
//!
//! The admin prepares a metadata directory and two data directories on each Node, each with
//! its `.garage-volume-id` marker. A pool-only cluster runs one member per Node; its
//! DaemonSet mounts both data HostPaths (each with its marker as a `File` HostPath) and
//! records its disk layout; 200 checksummed objects land as block files under both data
//! directories on every Node. Then a third disk is prepared and added while the first is
//! marked read-only: the storage rollout replaces the pool pods one at a time (never two down,
//! same node IDs), each pod's garage.toml lists the three paths, the first `read_only`, and
//! every object reads back. A change of the pool's pod template (an environment variable)
//! rolls them the same way. Removing a path is refused by admission and restarts nothing; a
//! disk-layout record that disagrees with the DaemonSet's mounts (as an out-of-band edit would
//! leave it) stops the pool with `DiskLayoutChangeBlocked` until it is restored. Destroy leaves
//! none of this cluster's keys on the Nodes and no DaemonSet. The pool's
//! `network.rpcPublicAddrTemplate` puts each member's own address in its `rpc-address:` tag.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::conditions::cluster::{
    CONDITION_NODE_LOCAL_POOLS_READY, CONDITION_STORAGE_ROLLOUT_READY,
};
use shared_types::conditions::reason::REASON_DISK_LAYOUT_CHANGE_BLOCKED;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation::ANNOTATION_STORAGE_DISK_LAYOUT;
use shared_types::keys::label::{LABEL_CLUSTER, LABEL_NODE_LOCAL_POOL};

use reconciler::desired::disk_layout;

use crate::support::*;
use crate::{NAME, World, ns};

/// Site P after its first Destroy: the cluster created again over its disks, a direct move.
mod rebind;

/// The pool.
const POOL: &str = "disks";
/// The admin's Node label the pool selects on.
const POOL_LABEL: &str = "e2e-p/pool";
/// The Nodes in the pool.
const NODES: [&str; 3] = ["n2", "n3", "n4"];
/// This site's HostPath root (site C's is `/var/lib/garage/e2e-c`; both lie under roots admission allows by default).
const ROOT: &str = "/srv/garage-e2e-p/disks";
/// The "disk is mounted" marker in every HostPath directory.
const MARKER: &str = ".garage-volume-id";
/// The pool's DaemonSet.
const DAEMONSET: &str = "garage-storage-disks";
/// The admin token Secret the pool requires, named as the shared Admin API helpers read it.
const ADMIN_SECRET: &str = "garage-admin-token";
/// Each member's routed RPC name, published in its `rpc-address:` layout tag.
const RPC_TEMPLATE: &str = "{nodeName}.disks.e2e.test:3901";

fn metadata_dir() -> String {
    format!("{ROOT}/metadata")
}

/// The HostPath of data disk `d` (`a`, `b`, `c`).
fn disk(d: &str) -> String {
    format!("{ROOT}/data-{d}")
}

pub(crate) async fn run(w: &mut World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let nodes: Api<Node> = Api::all(w.client.clone());
    prepare(w, &[metadata_dir(), disk("a"), disk("b")])?;
    for node in NODES {
        nodes
            .patch(
                node,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {POOL_LABEL: POOL}}})),
            )
            .await?;
    }
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
    let left = setup
        .saturating_sub(t.elapsed())
        .max(Duration::from_secs(60));
    wait_ready(&w.clusters, left).await?;
    let sets: Api<DaemonSet> = Api::namespaced(w.client.clone(), ns());
    check_daemonset(&sets.get(DAEMONSET).await?, &["a", "b"])?;
    w.ids = node_ids(&w.gns).await?;
    ensure!(
        w.ids.len() == NODES.len(),
        "members {:?}, expected one per Node of {NODES:?}",
        w.ids
    );
    println!(
        "pool disks: Ready with {} members on {NODES:?}, each mounting /data/a and /data/b (markers as File HostPaths), disk layout recorded ({:.1}s)",
        w.ids.len(),
        t.elapsed().as_secs_f64()
    );

    let via = pool_pod(&w.pods, NODES[0]).await?.name_any();
    let admin = admin_client_at(&w.client, w.sim, &via).await?;
    wait(
        "the first member connected to every member",
        Duration::from_secs(120),
        || async {
            Ok(admin
                .cluster_health()
                .await
                .is_ok_and(|h| h.connected_nodes >= 3 && h.storage_nodes_up >= 3))
        },
    )
    .await?;
    rpc_addresses_published(&admin).await?;
    create_e2e_bucket(&admin).await?;
    write_checksummed(w, &admin, &via).await?;
    read_back_via(w, NODES[1]).await?;
    // A pool-only cluster: its DaemonSet pods are covered by the budget too.
    let victims = [
        pool_pod(&w.pods, NODES[0]).await?.name_any(),
        pool_pod(&w.pods, NODES[1]).await?.name_any(),
    ];
    let pods = w.pods.clone();
    crate::evictions::two_at_once(w, victims, 3, async || {
        Ok(pool_pod(&pods, NODES[2]).await?.name_any())
    })
    .await?;
    let mut counts = Vec::new();
    for node in NODES {
        for d in ["a", "b"] {
            let n = crate::data_paths::files_at_depth(&w.sim.host_path(node, &disk(d)), 3);
            ensure!(n > 0, "no block file under {} on {node}", disk(d));
            counts.push(format!("{node}:{d}={n}"));
        }
    }
    println!(
        "pool disks: {} objects written and read back; block files under both data HostPaths on every Node: {} ({:.1}s)",
        w.checksummed.len(),
        counts.join(" "),
        t.elapsed().as_secs_f64()
    );

    add_disk_and_retire_first(w, &sets).await?;
    template_change(w).await?;
    removal_refused(w, &sets).await?;
    tampered_record_stops_the_pool(w, &sets).await?;

    let ids = node_ids(&w.gns).await?;
    rebind::destroy_and_check(w, &nodes).await?;
    rebind::recreate_over_kept_disks(w, &ids).await?;
    rebind::direct_move_blocked(w, &nodes).await?;
    rebind::destroy_and_check(w, &nodes).await?;
    nodes
        .patch(
            rebind::MOVED,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {rebind::SECOND_LABEL: null}}})),
        )
        .await?;
    Api::<Secret>::namespaced(w.client.clone(), ns())
        .delete(ADMIN_SECRET, &DeleteParams::default())
        .await?;
    Ok(())
}

/// Every committed role of the pool carries, last, the `rpc-address:` tag its pool's template
/// renders for the Kubernetes Node it names.
async fn rpc_addresses_published(admin: &garage_admin::AdminClient) -> anyhow::Result<()> {
    let layout = admin.layout().await?;
    let mut seen = Vec::new();
    for role in &layout.roles {
        let node = role
            .tags
            .iter()
            .find_map(|t| t.strip_prefix("kubernetes-node:"))
            .with_context(|| {
                format!(
                    "role {} has no kubernetes-node tag: {:?}",
                    role.id, role.tags
                )
            })?;
        let want = format!("rpc-address:{}", RPC_TEMPLATE.replace("{nodeName}", node));
        ensure!(
            role.tags.last() == Some(&want),
            "role of {node} has tags {:?}; expected {want} last",
            role.tags
        );
        seen.push(want);
    }
    ensure!(
        seen.len() == NODES.len(),
        "{} roles in the layout, expected {}",
        seen.len(),
        NODES.len()
    );
    println!("pool disks: every role publishes its Node's address from the template: {seen:?}");
    Ok(())
}

/// The admin's disks, mounted: each directory with its marker on every Node.
fn prepare(w: &World<'_>, dirs: &[String]) -> anyhow::Result<()> {
    for node in NODES {
        for dir in dirs {
            let path = w.sim.host_path(node, dir);
            std::fs::create_dir_all(&path).with_context(|| format!("creating {dir} on {node}"))?;
            std::fs::File::create(path.join(MARKER))
                .with_context(|| format!("creating the marker in {dir} on {node}"))?;
        }
    }
    Ok(())
}

/// The admin token Secret, then the pool-only GarageCluster on two data disks.
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
    create_pool_cluster(
        w,
        json!([
            {"path": "/data/a", "hostPath": disk("a"), "capacity": "1Gi"},
            {"path": "/data/b", "hostPath": disk("b"), "capacity": "1Gi"},
        ]),
    )
    .await
}

/// The disks after the first is retired read-only and a third added.
fn three_disks() -> serde_json::Value {
    json!([
        {"path": "/data/a", "hostPath": disk("a"), "readOnly": true},
        {"path": "/data/b", "hostPath": disk("b"), "capacity": "1Gi"},
        {"path": "/data/c", "hostPath": disk("c"), "capacity": "1Gi"},
    ])
}

/// The pool-only GarageCluster on `data_paths`.
async fn create_pool_cluster(w: &World<'_>, data_paths: serde_json::Value) -> anyhow::Result<()> {
    let mut gc = crate::cluster_manifest();
    gc["spec"]["admin"] =
        json!({"adminTokenSecretRef": {"name": ADMIN_SECRET, "key": "admin-token"}});
    gc["spec"]["storage"] = json!({
        "layoutPolicy": "Manual",
        "replicas": 0,
        "nodeLocalPools": [{
            "name": POOL,
            "capacity": "1Gi",
            "metadata": {"hostPath": metadata_dir(), "hostPathType": "Directory"},
            "dataPaths": data_paths,
            "selector": {"matchLabels": {POOL_LABEL: POOL}},
            "network": {"rpcPublicAddrTemplate": RPC_TEMPLATE},
        }],
    });
    let gc: GarageCluster = serde_json::from_value(gc)?;
    w.clusters
        .create(&PostParams::default(), &gc)
        .await
        .context("creating the pool-only GarageCluster on two data disks")?;
    Ok(())
}

/// The DaemonSet mounts `/data/<d>` from disk `d` for each of `disks` (`Directory`), each
/// with its marker as a read-only `File` HostPath, and records exactly those disks.
fn check_daemonset(ds: &DaemonSet, disks: &[&str]) -> anyhow::Result<()> {
    let want: Vec<(String, String, String)> = disks
        .iter()
        .map(|d| (format!("/data/{d}"), disk(d), "Directory".to_owned()))
        .collect();
    let listed = |l: &disk_layout::DiskLayout| -> Vec<(String, String, String)> {
        l.data_paths
            .iter()
            .map(|d| {
                (
                    d.path.clone(),
                    d.host_path.clone(),
                    d.host_path_type.clone(),
                )
            })
            .collect()
    };
    let mounted = disk_layout::mounted(ds).map_err(anyhow::Error::msg)?;
    ensure!(
        listed(&mounted) == want,
        "the pool pods mount {:?}, expected {want:?}",
        listed(&mounted)
    );
    let record = disk_layout::recorded(ds.metadata.annotations.as_ref())
        .context("no disk layout record")?
        .map_err(anyhow::Error::msg)?;
    ensure!(
        listed(&record) == want,
        "the record lists {:?}, expected {want:?}",
        listed(&record)
    );
    let pod = ds
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .context("no pod template")?;
    for d in disks {
        let marker = format!("{}/{MARKER}", disk(d));
        let volume = pod
            .volumes
            .iter()
            .flatten()
            .find(|v| {
                v.host_path
                    .as_ref()
                    .is_some_and(|h| h.path == marker && h.type_.as_deref() == Some("File"))
            })
            .with_context(|| format!("no File HostPath for {marker}"))?;
        let read_only = pod.containers[0]
            .volume_mounts
            .iter()
            .flatten()
            .any(|m| m.name == volume.name && m.read_only == Some(true));
        ensure!(read_only, "{marker} is not mounted read-only");
    }
    Ok(())
}

/// Disk c prepared and added, disk a marked read-only: the pool pods are replaced one at a
/// time with the same identities, each runs the new garage.toml, every object reads back.
async fn add_disk_and_retire_first(w: &mut World<'_>, sets: &Api<DaemonSet>) -> anyhow::Result<()> {
    let t = Instant::now();
    prepare(w, &[disk("c")])?;
    let patch = json!([
        {"op": "test", "path": "/spec/storage/nodeLocalPools/0/name", "value": POOL},
        {"op": "replace", "path": "/spec/storage/nodeLocalPools/0/dataPaths", "value": three_disks()},
    ]);
    let (replaced, max_down) =
        roll_pool(w, "/data/c added and /data/a marked readOnly", patch).await?;
    check_daemonset(&sets.get(DAEMONSET).await?, &["a", "b", "c"])?;
    // The garage.toml each pod mounts.
    let configs: Api<ConfigMap> = Api::namespaced(w.client.clone(), ns());
    for node in NODES {
        let name = mounted_config(&pool_pod(&w.pods, node).await?)?;
        let toml = configs
            .get(&name)
            .await?
            .data
            .and_then(|d| d.get("garage.toml").cloned())
            .context("no garage.toml")?;
        for want in [
            "{ path = \"/data/a\", read_only = true }",
            "{ path = \"/data/b\", capacity = \"1073741824\" }",
            "{ path = \"/data/c\", capacity = \"1073741824\" }",
        ] {
            ensure!(
                toml.contains(want),
                "{node}'s garage.toml ({name}) lacks {want}:\n{toml}"
            );
        }
    }
    read_back_via(w, NODES[2]).await?;
    // The old revision goes once the rollout converged and no pod mounts it; the current one
    // stays, recording the new disks.
    let revisions = wait_revisions_pruned(w).await?;
    println!(
        "pool disks: /data/c added and /data/a readOnly: {replaced} pool pods replaced one at a time (at most {max_down} not Ready), same node IDs, garage.toml lists /data/a read_only, /data/b and /data/c, every object read back; pool config revisions left: {revisions:?} ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Admits `patch` (a JSON patch of the cluster; admission may hold it while an earlier change
/// is still being prepared) and waits until every pool pod has been replaced and is Ready and
/// `StorageRolloutReady=True`, sampling that at most one pool pod is down at a time; the node
/// IDs must not change. Returns how many pods were replaced and the most seen down at once.
async fn roll_pool(
    w: &World<'_>,
    what: &str,
    patch: serde_json::Value,
) -> anyhow::Result<(usize, usize)> {
    let before = pods_by_node(&w.pods).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let worst = Arc::new(AtomicUsize::new(0));
    let sampler = tokio::spawn(sample_down(w.pods.clone(), worst.clone(), stop.clone()));
    let patch: json_patch::Patch = serde_json::from_value(patch)?;
    wait(
        &format!("{what}, admitted"),
        Duration::from_secs(180),
        || async {
            w.clusters
                .patch(
                    NAME,
                    &PatchParams::default(),
                    &Patch::<()>::Json(patch.clone()),
                )
                .await?;
            Ok(true)
        },
    )
    .await?;
    let generation = w
        .clusters
        .get(NAME)
        .await?
        .metadata
        .generation
        .context("no generation")?;
    let done = wait(
        &format!("every pool pod replaced after generation {generation}"),
        Duration::from_secs(900),
        || async {
            let now = pods_by_node(&w.pods).await?;
            Ok(now.len() == before.len()
                && now.iter().all(|(node, (uid, ready))| {
                    *ready && before.get(node).map(|b| &b.0) != Some(uid)
                }))
        },
    )
    .await;
    let done = match done {
        Ok(()) => {
            wait_condition(
                &w.clusters,
                CONDITION_STORAGE_ROLLOUT_READY,
                "True",
                None,
                Duration::from_secs(300),
            )
            .await
        }
        Err(e) => Err(e),
    };
    stop.store(true, Ordering::SeqCst);
    sampler.await?;
    done?;
    let max_down = worst.load(Ordering::SeqCst);
    ensure!(
        max_down <= 1,
        "{max_down} pool pods were not Ready at once during the rollout ({what})"
    );
    let ids = node_ids(&w.gns).await?;
    ensure!(
        ids == w.ids,
        "node IDs changed across the rollout ({what}): {:?} -> {ids:?}",
        w.ids
    );
    Ok((before.len(), max_down))
}

/// A change of the pool's pod template (an environment variable) rolls the pool pods one at
/// a time like a disk change: same identities, every pod carrying the variable, every object
/// read back.
async fn template_change(w: &mut World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let patch = json!([
        {"op": "test", "path": "/spec/storage/nodeLocalPools/0/name", "value": POOL},
        {"op": "add", "path": "/spec/storage/nodeLocalPools/0/podTemplate",
         "value": {"env": [{"name": "E2E_POOL_TEMPLATE", "value": "1"}]}},
    ]);
    let (replaced, max_down) = roll_pool(w, "an env var in the pool's pod template", patch).await?;
    for node in NODES {
        let pod = pool_pod(&w.pods, node).await?;
        let env = pod
            .spec
            .as_ref()
            .and_then(|s| {
                s.containers
                    .iter()
                    .find(|c| c.name == reconciler::desired::statefulset::CONTAINER)
            })
            .and_then(|c| c.env.clone())
            .unwrap_or_default();
        ensure!(
            env.iter()
                .any(|e| e.name == "E2E_POOL_TEMPLATE" && e.value.as_deref() == Some("1")),
            "{node}'s pool pod lacks the new variable"
        );
    }
    read_back_via(w, NODES[0]).await?;
    println!(
        "pool disks: pod template change: {replaced} pool pods replaced one at a time (at most {max_down} not Ready), same node IDs, every object read back ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A spec that drops `/data/b` is refused by admission; nothing is stored or restarted.
async fn removal_refused(w: &World<'_>, sets: &Api<DaemonSet>) -> anyhow::Result<()> {
    let t = Instant::now();
    let before = pods_by_node(&w.pods).await?;
    let generation = w.clusters.get(NAME).await?.metadata.generation;
    let ds_generation = sets.get(DAEMONSET).await?.metadata.generation;
    let patch = json!([
        {"op": "test", "path": "/spec/storage/nodeLocalPools/0/dataPaths/1/path", "value": "/data/b"},
        {"op": "remove", "path": "/spec/storage/nodeLocalPools/0/dataPaths/1"},
    ]);
    let patch: json_patch::Patch = serde_json::from_value(patch)?;
    let refused = w
        .clusters
        .patch(NAME, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await;
    let message = match refused {
        Err(kube::Error::Api(e)) if e.code == 403 || e.code == 400 || e.code == 422 => e.message,
        Err(e) => anyhow::bail!("the removal of /data/b failed otherwise: {e}"),
        Ok(_) => anyhow::bail!("the removal of /data/b was admitted"),
    };
    ensure!(
        message.contains("admission webhook") && message.contains("/data/b"),
        "the removal was refused, but not by the webhook naming /data/b: {message}"
    );
    tokio::time::sleep(Duration::from_secs(10)).await;
    ensure!(
        w.clusters.get(NAME).await?.metadata.generation == generation,
        "the refused removal changed the cluster's generation"
    );
    ensure!(
        sets.get(DAEMONSET).await?.metadata.generation == ds_generation,
        "the refused removal changed the DaemonSet"
    );
    ensure!(
        pods_by_node(&w.pods).await? == before,
        "a pool pod was restarted after the refused removal"
    );
    println!(
        "pool disks: removing /data/b refused by admission ({message}); no spec stored, no DaemonSet change, no pod restarted ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The DaemonSet's disk-layout record edited out of band to list a disk it does not mount:
/// the reconciler cannot tell which is true, reports `DiskLayoutChangeBlocked` and updates
/// and restarts nothing; the record restored, the pool is ready again.
async fn tampered_record_stops_the_pool(
    w: &World<'_>,
    sets: &Api<DaemonSet>,
) -> anyhow::Result<()> {
    let t = Instant::now();
    let before = pods_by_node(&w.pods).await?;
    let ds = sets.get(DAEMONSET).await?;
    let original = ds
        .annotations()
        .get(ANNOTATION_STORAGE_DISK_LAYOUT)
        .cloned()
        .context("no disk layout record")?;
    let mut record: serde_json::Value = serde_json::from_str(&original)?;
    record["dataPaths"]
        .as_array_mut()
        .context("no dataPaths")?
        .push(json!({"path": "/data/z", "hostPath": disk("z"), "hostPathType": "Directory", "readOnly": false}));
    let annotate = |value: String| {
        Patch::Merge(json!({"metadata": {"annotations": {ANNOTATION_STORAGE_DISK_LAYOUT: value}}}))
    };
    sets.patch(
        DAEMONSET,
        &PatchParams::default(),
        &annotate(record.to_string()),
    )
    .await?;
    wait_condition(
        &w.clusters,
        CONDITION_NODE_LOCAL_POOLS_READY,
        "False",
        Some(REASON_DISK_LAYOUT_CHANGE_BLOCKED),
        Duration::from_secs(120),
    )
    .await?;
    let message = w
        .clusters
        .get(NAME)
        .await?
        .status
        .and_then(|s| s.conditions)
        .into_iter()
        .flatten()
        .find(|c| c.type_ == CONDITION_NODE_LOCAL_POOLS_READY)
        .map(|c| c.message)
        .unwrap_or_default();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let now = sets.get(DAEMONSET).await?;
    ensure!(
        now.annotations().get(ANNOTATION_STORAGE_DISK_LAYOUT) == Some(&record.to_string())
            && now.metadata.generation == ds.metadata.generation,
        "the DaemonSet was rewritten while its record disagreed with its mounts"
    );
    ensure!(
        pods_by_node(&w.pods).await? == before,
        "a pool pod was restarted while the record disagreed with the mounts"
    );
    println!(
        "pool disks: a record listing a disk the DaemonSet does not mount: {CONDITION_NODE_LOCAL_POOLS_READY}=False/{REASON_DISK_LAYOUT_CHANGE_BLOCKED} ({message}); nothing updated or restarted ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    sets.patch(DAEMONSET, &PatchParams::default(), &annotate(original))
        .await?;
    wait_condition(
        &w.clusters,
        CONDITION_NODE_LOCAL_POOLS_READY,
        "True",
        None,
        Duration::from_secs(120),
    )
    .await?;
    let ready_after = t.elapsed();
    wait_ready(&w.clusters, Duration::from_secs(120)).await?;
    ensure!(
        pods_by_node(&w.pods).await? == before,
        "a pool pod was restarted after the record was restored"
    );
    read_back_via(w, NODES[0]).await?;
    println!(
        "pool disks: record restored: {CONDITION_NODE_LOCAL_POOLS_READY}=True after {:.1}s, Ready, the same pods, every object read back ({:.1}s)",
        ready_after.as_secs_f64(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Waits until the pool has exactly one config revision, the one its pods mount; returns
/// the names seen.
async fn wait_revisions_pruned(w: &World<'_>) -> anyhow::Result<Vec<String>> {
    let configs: Api<ConfigMap> = Api::namespaced(w.client.clone(), ns());
    let selector = format!("{LABEL_CLUSTER}={NAME},{LABEL_NODE_LOCAL_POOL}={POOL}");
    let mounted = mounted_config(&pool_pod(&w.pods, NODES[0]).await?)?;
    wait(
        "the pool's old config revision pruned",
        Duration::from_secs(120),
        || async {
            let names: Vec<String> = configs
                .list(&ListParams::default().labels(&selector))
                .await?
                .items
                .iter()
                .map(ResourceExt::name_any)
                .collect();
            Ok(names == [mounted.clone()])
        },
    )
    .await?;
    Ok(vec![mounted])
}

/// The config revision pod `p` mounts.
pub(crate) fn mounted_config(p: &Pod) -> anyhow::Result<String> {
    p.spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .and_then(|v| v.iter().find(|v| v.name == "config"))
        .and_then(|v| v.config_map.as_ref())
        .map(|c| c.name.clone())
        .context("the pod mounts no config")
}

/// The live pool pods by Kubernetes Node, with their UID and readiness.
async fn pods_by_node(pods: &Api<Pod>) -> anyhow::Result<BTreeMap<String, (String, bool)>> {
    let selector = format!("{LABEL_CLUSTER}={NAME},{LABEL_NODE_LOCAL_POOL}={POOL}");
    Ok(pods
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| {
            let node = p.spec.as_ref()?.node_name.clone()?;
            let ready = p
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
            Some((node, (p.metadata.uid.clone().unwrap_or_default(), ready)))
        })
        .collect())
}

/// Twice a second until `stop`: the most pool members without a Ready pod at once.
async fn sample_down(pods: Api<Pod>, worst: Arc<AtomicUsize>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::SeqCst) {
        if let Ok(now) = pods_by_node(&pods).await {
            let up = now.values().filter(|(_, ready)| *ready).count();
            worst.fetch_max(NODES.len().saturating_sub(up), Ordering::SeqCst);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The pool pod on Kubernetes Node `node`, which must exist.
async fn pool_pod(pods: &Api<Pod>, node: &str) -> anyhow::Result<Pod> {
    let selector = format!("{LABEL_CLUSTER}={NAME},{LABEL_NODE_LOCAL_POOL}={POOL}");
    pods.list(&ListParams::default().labels(&selector))
        .await?
        .items
        .into_iter()
        .find(|p| {
            p.metadata.deletion_timestamp.is_none()
                && p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node)
        })
        .with_context(|| format!("no pool pod on {node}"))
}

/// Every written object read back byte-identical through the pool pod on `node`.
async fn read_back_via(w: &World<'_>, node: &str) -> anyhow::Result<()> {
    let store = w.store.as_ref().context("no objects were written")?;
    let endpoint = s3(w.sim, &pool_pod(&w.pods, node).await?.name_any())?;
    verify(store, &endpoint, &w.checksummed).await
}
