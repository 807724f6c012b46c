#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use shared_types::garage_cluster::v1beta2::NodeLocalPoolSpec;
use shared_types::keys::scheduling_gate::SCHEDULING_GATE_NODE_LOCAL_POOL_ACTIVATION;

use super::*;
use crate::desired::config;
use crate::desired::secrets::{admin_token_source, rpc_secret_source};
use crate::desired::test_support::cluster;
use crate::pools::capability::Verdict;
use shared_types::conditions::reason;

const ID_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const ID_B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const DS_UID: &str = "ds-uid";

fn pool(name: &str, value: &str) -> NodeLocalPoolSpec {
    serde_json::from_value(json!({
        "name": name, "capacity": "1Gi",
        "metadata": {"hostPath": format!("/m/{name}")}, "data": {"hostPath": format!("/d/{name}")},
        "selector": {"matchLabels": {"pool": value}},
    }))
    .unwrap()
}

/// Everything the decision reads, editable per test.
struct World {
    c: GarageCluster,
    nodes: Vec<Node>,
    daemonsets: Vec<DaemonSet>,
    config_maps: Vec<ConfigMap>,
    pods: Vec<Pod>,
    members: Vec<GarageNode>,
    in_layout: BTreeMap<String, bool>,
    topology_ready: bool,
    foreign_paths: Vec<(String, String)>,
    committed_roles: Vec<garage_api_types::LayoutRole>,
    /// The probe's verdict; a fresh proof unless a test says otherwise.
    gate: Option<Verdict>,
}

impl World {
    /// Pool `local` selecting `pool=local`; Nodes with the given `pool` label values.
    fn new(nodes: &[(&str, Option<&str>)]) -> Self {
        let mut c = cluster(0);
        c.spec.storage.as_mut().unwrap().node_local_pools = Some(vec![pool("local", "local")]);
        let nodes = nodes
            .iter()
            .map(|(n, v)| {
                let labels = v.map_or(json!({}), |v| json!({"pool": v}));
                serde_json::from_value(json!({"metadata": {"name": n, "labels": labels}})).unwrap()
            })
            .collect();
        Self {
            c,
            nodes,
            daemonsets: vec![],
            config_maps: vec![],
            pods: vec![],
            members: vec![],
            in_layout: BTreeMap::new(),
            topology_ready: false,
            foreign_paths: vec![],
            committed_roles: vec![],
            gate: Some(Verdict::Proven(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)),
        }
    }

    fn s(&self) -> Settings {
        Settings::from_cluster(&self.c).unwrap()
    }

    fn plan(&self) -> PoolPlan {
        let s = self.s();
        let rev = config::revision(&self.c, &s).unwrap();
        decide(&PoolFacts {
            cluster: &self.c,
            settings: &s,
            config: &rev,
            rpc_secret: &rpc_secret_source(&self.c, &s),
            admin_token: &admin_token_source(&self.c, &s),
            nodes: &self.nodes,
            daemonsets: &self.daemonsets,
            config_maps: &self.config_maps,
            pods: &self.pods,
            members: &self.members,
            in_layout: &self.in_layout,
            topology_ready: self.topology_ready,
            foreign_paths: &self.foreign_paths,
            committed_roles: &self.committed_roles,
            gate: self.gate.as_ref(),
        })
        .unwrap()
    }

    fn node_mut(&mut self, name: &str) -> &mut Node {
        self.nodes
            .iter_mut()
            .find(|n| n.name_any() == name)
            .unwrap()
    }

    /// Marks `node` active for `pool`.
    fn activate(&mut self, node: &str, pool: &str) {
        let key = desired_pool::activation_key(&self.s(), pool);
        self.node_mut(node)
            .metadata
            .labels
            .get_or_insert_default()
            .insert(key, ACTIVE.into());
    }

    /// The pool's DaemonSet exists with [`DS_UID`], as this spec renders it.
    fn with_daemonset(&mut self) {
        let s = self.s();
        let rev = config::revision(&self.c, &s).unwrap();
        let local = s.pools.iter().find(|p| p.name == "local").unwrap();
        let own = desired_pool::config_revision(&self.c, &s, local).unwrap();
        let mut ds = desired_pool::daemonset(PoolInputs {
            cluster: &self.c,
            settings: &s,
            pool: local,
            config: own.as_ref().unwrap_or(&rev),
            rpc_secret: &rpc_secret_source(&self.c, &s),
            admin_token: &admin_token_source(&self.c, &s),
        })
        .unwrap();
        ds.metadata.uid = Some(DS_UID.into());
        ds.metadata.generation = Some(1);
        self.daemonsets.push(ds);
        self.config_maps.extend(own.map(|r| r.config_map));
    }

    /// A pool pod of DaemonSet `ds` pinned to `node`, gated or bound there.
    fn pod(&mut self, name: &str, ds: &str, node: &str, gated: bool) {
        let mut v = json!({
            "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "1",
                "labels": {label::LABEL_NODE_LOCAL_POOL: "local", label::LABEL_CLUSTER: "garage"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": ds, "controller": true}]},
            "spec": {
                "containers": [{"name": "garage", "image": "x"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
                }}},
            },
        });
        if gated {
            v["spec"]["schedulingGates"] =
                json!([{"name": SCHEDULING_GATE_NODE_LOCAL_POOL_ACTIVATION}]);
        } else {
            v["spec"]["nodeName"] = json!(node);
        }
        self.pods.push(serde_json::from_value(v).unwrap());
    }

    /// A member of `local` on `node` reporting `id`, placed in the layout or not.
    fn member(&mut self, node: &str, id: Option<&str>, placed: bool) {
        let s = self.s();
        let p = pool("local", "local");
        let mut gn = desired_pool::member_node(&self.c, &s, &p, node, None).unwrap();
        gn.status = Some(shared_types::garage_node::GarageNodeStatus {
            node_id: id.map(str::to_owned),
            ..Default::default()
        });
        self.in_layout.insert(gn.name_any(), placed);
        self.members.push(gn);
    }
}

fn reason_of(plan: &PoolPlan) -> (bool, &'static str) {
    let c = plan.condition.as_ref().unwrap();
    (c.status, c.reason)
}

#[test]
fn a_new_pool_gets_its_daemonset_and_activations_behind_the_probe() {
    let w = World::new(&[("n1", Some("local")), ("n2", Some("local")), ("n3", None)]);
    let plan = w.plan();
    assert_eq!(plan.create_daemonsets.len(), 1);
    assert!(plan.daemonsets.is_empty());
    assert!(plan.needs_probe);
    let key = desired_pool::activation_key(&w.s(), "local");
    assert_eq!(
        plan.activate,
        vec![("n1".to_owned(), key.clone()), ("n2".to_owned(), key)]
    );
    assert!(plan.release.is_empty() && plan.create_members.is_empty());
    assert_eq!(plan.pending, 2);
    assert_eq!(
        reason_of(&plan),
        (false, reason::REASON_WAITING_FOR_MEMBERS)
    );
}

#[test]
fn a_gated_pod_of_the_current_daemonset_on_an_active_node_is_released() {
    let mut w = World::new(&[("n1", Some("local"))]);
    w.with_daemonset();
    w.activate("n1", "local");
    w.pod("p1", DS_UID, "n1", true);
    let plan = w.plan();
    assert_eq!(
        plan.release,
        vec![Release {
            pod: "p1".into(),
            node: "n1".into(),
            member: "garage-node-local-local-n1".into()
        }]
    );
    assert!(plan.activate.is_empty());
}

#[test]
fn a_pod_of_a_retired_daemonset_stays_gated_and_fences_the_recreation() {
    let mut w = World::new(&[("n1", Some("local"))]);
    w.activate("n1", "local");
    // The DaemonSet was deleted out of band; its pod still exists.
    w.pod("old", "gone-uid", "n1", false);
    let plan = w.plan();
    assert!(
        plan.daemonsets.is_empty() && plan.create_daemonsets.is_empty(),
        "no DaemonSet while an old pod lives"
    );
    assert!(plan.release.is_empty());
    assert_eq!(
        reason_of(&plan),
        (
            false,
            reason::REASON_WAITING_FOR_PREVIOUS_NODE_LOCAL_POOL_POD
        )
    );
    // A current DaemonSet's gated pod beside a live older pod on the same Node stays gated.
    w.with_daemonset();
    w.pod("new", DS_UID, "n1", true);
    assert!(w.plan().release.is_empty());
}

#[test]
fn a_scheduled_pod_becomes_a_member_bound_to_the_nodes_identity_record() {
    let mut w = World::new(&[("n1", Some("local"))]);
    w.with_daemonset();
    w.activate("n1", "local");
    w.pod("p1", DS_UID, "n1", false);
    let record = desired_pool::node_id_key(&w.s(), "local");
    w.node_mut("n1")
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(record, ID_A.into());
    let plan = w.plan();
    assert_eq!(plan.create_members.len(), 1);
    let gn = &plan.create_members[0];
    assert_eq!(gn.name_any(), "garage-node-local-local-n1");
    assert_eq!(
        gn.annotations()
            .get(shared_types::keys::annotation::ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID)
            .map(String::as_str),
        Some(ID_A)
    );
}

#[test]
fn a_placed_member_has_its_identity_recorded_on_its_node() {
    let mut w = World::new(&[("n1", Some("local"))]);
    w.with_daemonset();
    w.activate("n1", "local");
    w.pod("p1", DS_UID, "n1", false);
    w.member("n1", Some(ID_A), false);
    assert!(
        w.plan().record_ids.is_empty(),
        "not before the role is committed"
    );
    w.in_layout
        .insert("garage-node-local-local-n1".into(), true);
    let plan = w.plan();
    assert_eq!(
        plan.record_ids,
        vec![(
            "n1".to_owned(),
            desired_pool::node_id_key(&w.s(), "local"),
            ID_A.to_owned()
        )]
    );
    assert_eq!(reason_of(&plan), (true, reason::REASON_CONVERGED));
}

#[test]
fn a_selector_that_matches_nothing_keeps_every_member() {
    let mut w = World::new(&[("n1", Some("typo")), ("n2", Some("typo"))]);
    w.with_daemonset();
    w.member("n1", Some(ID_A), true);
    w.member("n2", Some(ID_B), true);
    w.topology_ready = true;
    let plan = w.plan();
    assert!(plan.retire.is_empty());
    assert!(plan.deactivate.is_empty());
    assert_eq!(
        reason_of(&plan),
        (false, reason::REASON_WAITING_FOR_MEMBERS)
    );
}

#[test]
fn a_deselected_member_retires_only_after_its_replacement_is_in_the_layout() {
    let mut w = World::new(&[("n1", None), ("n2", Some("local"))]);
    w.with_daemonset();
    w.activate("n1", "local");
    w.activate("n2", "local");
    w.member("n1", Some(ID_A), true);
    w.pod("p2", DS_UID, "n2", false);
    w.member("n2", Some(ID_B), false);
    let plan = w.plan();
    assert_eq!(plan.retire, vec!["garage-node-local-local-n1".to_owned()]);
    assert!(!plan.retire_now, "the replacement is not in the layout yet");
    assert!(
        plan.deactivate.is_empty(),
        "a member's own finalizer takes its label"
    );
    assert_eq!(
        reason_of(&plan),
        (false, reason::REASON_WAITING_FOR_REPLACEMENT)
    );
    w.in_layout
        .insert("garage-node-local-local-n2".into(), true);
    w.topology_ready = true;
    let plan = w.plan();
    assert!(plan.retire_now);
    assert_eq!(reason_of(&plan), (false, reason::REASON_DRAINING));
}

#[test]
fn a_node_moved_straight_to_another_pool_is_blocked() {
    let mut w = World::new(&[("n1", Some("b"))]);
    w.c.spec.storage.as_mut().unwrap().node_local_pools =
        Some(vec![pool("a", "a"), pool("b", "b")]);
    w.activate("n1", "a");
    let plan = w.plan();
    let key_b = desired_pool::activation_key(&w.s(), "b");
    assert!(!plan.activate.iter().any(|(_, k)| *k == key_b));
    assert_eq!(
        reason_of(&plan),
        (false, reason::REASON_DIRECT_NODE_LOCAL_POOL_MOVE_BLOCKED)
    );
}

#[test]
fn two_members_with_one_identity_stop_membership_changes() {
    let mut w = World::new(&[
        ("n1", Some("local")),
        ("n2", Some("local")),
        ("n3", Some("local")),
    ]);
    w.with_daemonset();
    w.member("n1", Some(ID_A), true);
    w.member("n2", Some(ID_A), true);
    let plan = w.plan();
    assert!(plan.activate.is_empty(), "n3 is not activated");
    assert!(!plan.retire_now);
    let c = plan.condition.unwrap();
    assert_eq!(c.reason, reason::REASON_IDENTITY_COLLISION);
    assert!(
        c.message
            .contains("garage-node-local-local-n1, garage-node-local-local-n2")
    );
}

#[test]
fn a_removed_pool_retires_its_members_then_its_daemonset_and_labels_go() {
    let mut w = World::new(&[("n1", Some("local"))]);
    w.with_daemonset();
    w.activate("n1", "local");
    w.member("n1", Some(ID_A), true);
    w.c.spec.storage.as_mut().unwrap().node_local_pools = Some(vec![]);
    w.topology_ready = true;
    let plan = w.plan();
    assert_eq!(plan.retire, vec!["garage-node-local-local-n1".to_owned()]);
    assert!(
        plan.delete_daemonsets.is_empty(),
        "not while a member remains"
    );
    w.members.clear();
    let plan = w.plan();
    assert_eq!(
        plan.delete_daemonsets,
        vec!["garage-storage-local".to_owned()]
    );
    assert_eq!(plan.deactivate.len(), 1, "the orphan activation label goes");
}

#[test]
fn a_host_path_another_clusters_pool_mounts_stops_the_pool() {
    let mut w = World::new(&[("n1", Some("local"))]);
    w.foreign_paths = vec![("DaemonSet other/garage-storage-x".into(), "/d".into())];
    let plan = w.plan();
    assert!(plan.daemonsets.is_empty() && plan.activate.is_empty());
    let c = plan.condition.unwrap();
    assert_eq!(c.reason, reason::REASON_HOST_PATH_CONFLICT);
    assert!(
        c.message
            .contains("/d/local overlaps /d of DaemonSet other/garage-storage-x"),
        "{}",
        c.message
    );
    // A sibling path with a common prefix only is not an overlap.
    assert!(!overlap("/data/a", "/data/ab"));
    assert!(overlap("/data/a/", "/data/a/b"));
}

#[test]
fn without_a_fresh_proof_the_pools_write_nothing_and_say_why() {
    let unavailable = Verdict::Unavailable {
        reason: reason::REASON_SCHEDULING_GATES_UNAVAILABLE,
        message: "the API server dropped the scheduling gate".into(),
    };
    let pending = Verdict::Pending("the gated probe pod is being created".into());
    for (case, gate, why) in [
        (
            "never probed",
            None,
            reason::REASON_SCHEDULING_GATE_PROBE_PENDING,
        ),
        (
            "probe pending",
            Some(pending),
            reason::REASON_SCHEDULING_GATE_PROBE_PENDING,
        ),
        (
            "gates unavailable",
            Some(unavailable),
            reason::REASON_SCHEDULING_GATES_UNAVAILABLE,
        ),
    ] {
        // A new pool on a selected Node: its DaemonSet would be created.
        let mut w = World::new(&[("n1", Some("local"))]);
        w.gate = gate;
        let plan = w.plan();
        assert!(plan.run_probe && plan.needs_probe, "{case}");
        assert!(
            plan.create_daemonsets.is_empty()
                && plan.daemonsets.is_empty()
                && plan.activate.is_empty()
                && plan.claims.is_empty()
                && plan.create_members.is_empty()
                && plan.release.is_empty(),
            "{case}: pool writes without a proof: {plan:?}"
        );
        let c = plan.condition.as_ref().unwrap();
        assert!(!c.status, "{case}");
        assert_eq!(c.reason, why, "{case}");
    }
    // With the proof the same world creates the DaemonSet.
    let w = World::new(&[("n1", Some("local"))]);
    let plan = w.plan();
    assert!(!plan.run_probe && plan.create_daemonsets.len() == 1);
}

#[test]
fn a_daemonset_update_names_the_version_the_decision_checked() {
    let mut w = World::new(&[("n1", Some("local"))]);
    w.with_daemonset();
    w.activate("n1", "local");
    w.pod("p1", DS_UID, "n1", false);
    w.daemonsets[0].metadata.resource_version = Some("4711".into());
    let plan = w.plan();
    assert_eq!(plan.daemonsets.len(), 1, "{:?}", reason_of(&plan));
    // The writer sends it as a precondition: a DaemonSet changed or deleted since this
    // decision is refused by the API server, never overwritten with a layout checked
    // against another version.
    assert_eq!(
        plan.daemonsets[0].metadata.resource_version.as_deref(),
        Some("4711")
    );
    assert!(plan.create_daemonsets.is_empty());
}

#[test]
fn a_daemonset_being_deleted_is_not_current_and_not_recreated_under_its_pods() {
    let mut w = World::new(&[("n1", Some("local"))]);
    w.with_daemonset();
    w.activate("n1", "local");
    w.pod("p1", DS_UID, "n1", false);
    w.daemonsets[0].metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
    let plan = w.plan();
    assert!(plan.daemonsets.is_empty() && plan.create_daemonsets.is_empty());
    assert_eq!(
        reason_of(&plan),
        (
            false,
            reason::REASON_WAITING_FOR_PREVIOUS_NODE_LOCAL_POOL_POD
        )
    );
    // Its pods gone but the object still finishing its deletion: still nothing created.
    w.pods.clear();
    let plan = w.plan();
    assert!(plan.create_daemonsets.is_empty());
}

#[test]
fn unknown_foreign_paths_stop_every_pool() {
    // What observe reports when it cannot list other clusters' pool workloads.
    let mut w = World::new(&[("n1", Some("local"))]);
    w.foreign_paths = vec![("an unknown workload".into(), "/".into())];
    let plan = w.plan();
    assert!(plan.create_daemonsets.is_empty() && plan.activate.is_empty());
    assert_eq!(reason_of(&plan), (false, reason::REASON_HOST_PATH_CONFLICT));
}

/// The declared pools of the world's cluster.
fn pools_mut(w: &mut World) -> &mut Vec<NodeLocalPoolSpec> {
    w.c.spec
        .storage
        .as_mut()
        .unwrap()
        .node_local_pools
        .get_or_insert_default()
}

/// Pool `local`'s data as `dataPaths` (with a single `data` when `paths` is `None`).
fn set_paths(w: &mut World, paths: Option<serde_json::Value>) {
    let local = pools_mut(w).iter_mut().find(|p| p.name == "local").unwrap();
    match paths {
        Some(p) => {
            local.data = None;
            local.data_paths = Some(serde_json::from_value(p).unwrap());
        }
        None => {
            local.data_paths = None;
            local.data = Some(serde_json::from_value(json!({"hostPath": "/d/local"})).unwrap());
        }
    }
}

fn disks_ab() -> serde_json::Value {
    json!([
        {"path": "/data/a", "hostPath": "/d/a", "capacity": "1Gi"},
        {"path": "/data/b", "hostPath": "/d/b", "capacity": "1Gi"},
    ])
}

#[test]
fn a_multi_disk_pool_gets_its_own_revision_and_its_daemonset_mounts_it() {
    let mut w = World::new(&[("n1", Some("local"))]);
    set_paths(&mut w, Some(disks_ab()));
    let plan = w.plan();
    assert_eq!(plan.configs.len(), 1);
    let rev = &plan.configs[0];
    let ds = &plan.create_daemonsets[0];
    let pod = ds.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let config = pod
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == "config")
        .unwrap();
    assert_eq!(config.config_map.as_ref().unwrap().name, rev.name);
    // A single-disk pool keeps the shared revision.
    set_paths(&mut w, None);
    assert!(w.plan().configs.is_empty());
}

/// (case, rolled out, desired now, refused with these words; `None` when allowed)
type LayoutCase = (
    &'static str,
    Option<serde_json::Value>,
    Option<serde_json::Value>,
    Option<&'static str>,
);

#[test]
fn disks_may_be_added_or_marked_read_only_but_never_removed_or_remapped() {
    let cases: Vec<LayoutCase> = vec![
        ("unchanged", Some(disks_ab()), Some(disks_ab()), None),
        (
            "a disk added and the first marked readOnly",
            Some(disks_ab()),
            Some(json!([
                {"path": "/data/a", "hostPath": "/d/a", "readOnly": true},
                {"path": "/data/b", "hostPath": "/d/b", "capacity": "1Gi"},
                {"path": "/data/c", "hostPath": "/d/c", "capacity": "1Gi"},
            ])),
            None,
        ),
        (
            "the single data HostPath kept at /data/data beside a new disk",
            None,
            Some(json!([
                {"path": "/data/data", "hostPath": "/d/local", "capacity": "1Gi"},
                {"path": "/data/c", "hostPath": "/d/c", "capacity": "1Gi"},
            ])),
            None,
        ),
        (
            "a disk removed",
            Some(disks_ab()),
            Some(json!([{"path": "/data/a", "hostPath": "/d/a", "capacity": "1Gi"}])),
            Some(
                "spec.storage.nodeLocalPools[\"local\"].dataPaths removes /data/b (hostPath /d/b)",
            ),
        ),
        (
            "a disk remapped",
            Some(disks_ab()),
            Some(json!([
                {"path": "/data/a", "hostPath": "/d/a", "capacity": "1Gi"},
                {"path": "/data/b", "hostPath": "/d/x", "capacity": "1Gi"},
            ])),
            Some("remaps /data/b from hostPath /d/b to /d/x"),
        ),
        (
            "the single data HostPath dropped for other disks",
            None,
            Some(disks_ab()),
            Some("removes /data/data (hostPath /d/local)"),
        ),
        (
            "a disk loosened to DirectoryOrCreate",
            Some(disks_ab()),
            Some(json!([
                {"path": "/data/a", "hostPath": "/d/a", "capacity": "1Gi", "hostPathType": "DirectoryOrCreate"},
                {"path": "/data/b", "hostPath": "/d/b", "capacity": "1Gi"},
            ])),
            Some("loosens the hostPathType of /data/a"),
        ),
    ];
    for (name, before, after, refused) in cases {
        let mut w = World::new(&[("n1", Some("local"))]);
        set_paths(&mut w, before);
        w.with_daemonset();
        w.activate("n1", "local");
        set_paths(&mut w, after);
        let plan = w.plan();
        let c = plan.condition.clone().unwrap();
        match refused {
            None => {
                assert_eq!(plan.daemonsets.len(), 1, "{name}: {}", c.message);
                assert_ne!(
                    c.reason,
                    reason::REASON_DISK_LAYOUT_CHANGE_BLOCKED,
                    "{name}"
                );
            }
            Some(words) => {
                assert!(
                    plan.daemonsets.is_empty()
                        && plan.create_daemonsets.is_empty()
                        && plan.configs.is_empty()
                        && plan.release.is_empty()
                        && plan.create_members.is_empty(),
                    "{name}: something of the pool is still written"
                );
                assert!(!c.status, "{name}");
                assert_eq!(
                    c.reason,
                    reason::REASON_DISK_LAYOUT_CHANGE_BLOCKED,
                    "{name}"
                );
                assert!(c.message.contains(words), "{name}: {}", c.message);
                assert!(
                    c.message.contains("remove the whole pool"),
                    "{name}: the message says what to do: {}",
                    c.message
                );
            }
        }
    }
}

/// The plan refuses the pool's disk layout with a message containing every one of `words`:
/// nothing of the pool is written.
fn assert_blocked(w: &World, words: &[&str]) {
    let plan = w.plan();
    assert!(plan.daemonsets.is_empty() && plan.create_daemonsets.is_empty());
    let c = plan.condition.unwrap();
    assert_eq!(c.reason, reason::REASON_DISK_LAYOUT_CHANGE_BLOCKED);
    for word in words {
        assert!(c.message.contains(word), "{word}: {}", c.message);
    }
}

#[test]
fn a_record_that_disagrees_with_the_mounts_or_cannot_be_read_stops_the_pool() {
    let mut w = World::new(&[("n1", Some("local"))]);
    set_paths(&mut w, Some(disks_ab()));
    w.with_daemonset();
    let key = shared_types::keys::annotation::ANNOTATION_STORAGE_DISK_LAYOUT;
    let annotations = w.daemonsets[0].metadata.annotations.get_or_insert_default();
    let mut record: serde_json::Value = serde_json::from_str(&annotations[key]).unwrap();
    record["dataPaths"][1]["hostPath"] = json!("/d/elsewhere");
    annotations.insert(key.into(), record.to_string());
    assert_blocked(
        &w,
        &["mounts other HostPaths than its recorded disk layout"],
    );

    let annotations = w.daemonsets[0].metadata.annotations.get_or_insert_default();
    annotations.insert(key.into(), "{".into());
    assert_blocked(&w, &["unreadable"]);

    // A DaemonSet from before the record is judged by its mounts.
    let annotations = w.daemonsets[0].metadata.annotations.get_or_insert_default();
    annotations.remove(key);
    assert_eq!(w.plan().daemonsets.len(), 1);
    let only_a = json!([{"path": "/data/a", "hostPath": "/d/a", "capacity": "1Gi"}]);
    set_paths(&mut w, Some(only_a.clone()));
    assert_blocked(&w, &["per DaemonSet garage-storage-local's mounts"]);

    // Deleted out of band: only its config revision remembers the disks.
    set_paths(&mut w, Some(disks_ab()));
    w.daemonsets.clear();
    w.config_maps.clear();
    w.with_daemonset();
    w.daemonsets.clear();
    assert_eq!(w.config_maps.len(), 1);
    set_paths(&mut w, Some(only_a));
    assert_blocked(
        &w,
        &[
            "removes /data/b",
            "per config revision garage-storage-local-config-",
        ],
    );
}

#[test]
fn every_data_path_takes_part_in_the_overlap_checks() {
    // (case, dataPaths of `local`, a foreign HostPath, the words of the conflict)
    for (name, paths, foreign, want) in [
        (
            "another cluster's DaemonSet under a data path",
            disks_ab(),
            Some("/d/b/inner"),
            "pool local: /d/b overlaps /d/b/inner of DaemonSet other/x",
        ),
        (
            "two of the pool's own data paths",
            json!([
                {"path": "/data/a", "hostPath": "/d/a", "capacity": "1Gi"},
                {"path": "/data/b", "hostPath": "/d/a/b", "capacity": "1Gi"},
            ]),
            None,
            "pool local: /d/a/b overlaps its own /d/a",
        ),
        (
            "a data path inside the metadata directory",
            json!([{"path": "/data/a", "hostPath": "/m/local/data", "capacity": "1Gi"}]),
            None,
            "pool local: /m/local/data overlaps its own /m/local",
        ),
    ] {
        let mut w = World::new(&[("n1", Some("local"))]);
        set_paths(&mut w, Some(paths));
        w.foreign_paths = foreign
            .map(|p| vec![("DaemonSet other/x".to_owned(), p.to_owned())])
            .unwrap_or_default();
        let plan = w.plan();
        assert!(
            plan.create_daemonsets.is_empty() && plan.activate.is_empty(),
            "{name}"
        );
        let c = plan.condition.unwrap();
        assert_eq!(c.reason, reason::REASON_HOST_PATH_CONFLICT, "{name}");
        assert!(c.message.contains(want), "{name}: {}", c.message);
    }
    // Another pool of the same cluster on one of the data disks.
    let mut w = World::new(&[("n1", Some("local")), ("n2", Some("other"))]);
    set_paths(&mut w, Some(disks_ab()));
    let mut other = pool("other", "other");
    other.data = Some(serde_json::from_value(json!({"hostPath": "/d/b"})).unwrap());
    pools_mut(&mut w).push(other);
    let c = w.plan().condition.unwrap();
    assert_eq!(c.reason, reason::REASON_HOST_PATH_CONFLICT);
    assert!(
        c.message.contains("/d/b overlaps pool other's /d/b"),
        "{}",
        c.message
    );
}

/// What pools record about members: identity pins, HostPath claims, RPC address tags.
mod records;
