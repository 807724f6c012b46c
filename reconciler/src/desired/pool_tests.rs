use serde_json::json;

use super::*;
use crate::desired::config;
use crate::desired::secrets::{admin_token_source, rpc_secret_source};
use crate::desired::test_support::cluster;

fn with_pool(data_type: &str) -> (GarageCluster, NodeLocalPoolSpec) {
    let mut c = cluster(0);
    let pool: NodeLocalPoolSpec = serde_json::from_value(json!({
        "name": "local",
        "capacity": "10Gi",
        "metadata": {"hostPath": "/var/lib/garage/local/metadata"},
        "data": {"hostPath": "/var/lib/garage/local/data", "hostPathType": data_type},
        "selector": {"matchLabels": {"pool": "local"}},
        "podTemplate": {"tolerations": [{"key": "dedicated", "operator": "Exists"}]},
    }))
    .unwrap();
    c.spec.storage.as_mut().unwrap().node_local_pools = Some(vec![pool.clone()]);
    (c, pool)
}

/// Settings as the cluster has them; pools are still refused there until they are wired.
fn settings(c: &GarageCluster) -> Settings {
    let mut plain = c.clone();
    plain.spec.storage.as_mut().unwrap().node_local_pools = None;
    Settings::from_cluster(&plain).unwrap()
}

fn render(c: &GarageCluster, pool: &NodeLocalPoolSpec) -> DaemonSet {
    let s = settings(c);
    let rev = config::revision(c, &s).unwrap();
    daemonset(PoolInputs {
        cluster: c,
        settings: &s,
        pool,
        config: &rev,
        rpc_secret: &rpc_secret_source(c, &s),
        admin_token: &admin_token_source(c, &s),
    })
    .unwrap()
}

#[test]
fn pods_schedule_only_from_the_private_label_and_start_gated() {
    let (c, pool) = with_pool("Directory");
    let ds = render(&c, &pool);
    let s = settings(&c);
    assert_eq!(ds.metadata.name.as_deref(), Some("garage-storage-local"));
    let spec = ds.spec.as_ref().unwrap();
    assert_eq!(
        spec.update_strategy.as_ref().unwrap().type_.as_deref(),
        Some("OnDelete")
    );
    let pod = spec.template.spec.as_ref().unwrap();
    let key = activation_key(&s, "local");
    assert!(key.starts_with("garage.rajsingh.info/gc-"));
    assert_eq!(
        pod.node_selector,
        Some(BTreeMap::from([(key.clone(), ACTIVE.to_owned())])),
        "never the user's selector"
    );
    assert_eq!(
        pod.scheduling_gates.as_ref().unwrap()[0].name,
        SCHEDULING_GATE_NODE_LOCAL_POOL_ACTIVATION
    );
    assert_eq!(
        pod.tolerations.as_ref().unwrap()[0].key.as_deref(),
        Some("dedicated"),
        "the pool's pod template is used"
    );
    // The activation key depends on the cluster's UID; the identity record does not.
    let mut again = c.clone();
    again.metadata.uid = Some("another-uid".into());
    let s2 = settings(&again);
    assert_ne!(activation_key(&s2, "local"), key);
    assert_eq!(node_id_key(&s2, "local"), node_id_key(&s, "local"));
}

#[test]
fn every_directory_host_path_mounts_its_marker_as_a_file() {
    let (c, pool) = with_pool("Directory");
    let ds = render(&c, &pool);
    let pod = ds.spec.unwrap().template.spec.unwrap();
    let volumes = pod.volumes.unwrap();
    let hp = |name: &str| {
        volumes
            .iter()
            .find(|v| v.name == name)
            .and_then(|v| v.host_path.clone())
            .unwrap()
    };
    assert_eq!(hp("metadata").type_.as_deref(), Some("Directory"));
    assert_eq!(
        hp("verify-metadata").path,
        "/var/lib/garage/local/metadata/.garage-volume-id"
    );
    assert_eq!(hp("verify-metadata").type_.as_deref(), Some("File"));
    assert_eq!(hp("verify-data").type_.as_deref(), Some("File"));
    let mounts = pod.containers[0].volume_mounts.clone().unwrap();
    let marker = mounts.iter().find(|m| m.name == "verify-data").unwrap();
    assert_eq!(marker.read_only, Some(true));
    // DirectoryOrCreate is a choice for disposable storage: no marker.
    let (c, pool) = with_pool("DirectoryOrCreate");
    let pod = render(&c, &pool).spec.unwrap().template.spec.unwrap();
    let volumes = pod.volumes.unwrap();
    assert!(volumes.iter().all(|v| v.name != "verify-data"));
    assert!(volumes.iter().any(|v| v.name == "verify-metadata"));
}

#[test]
fn a_member_names_its_pool_and_node_and_keeps_long_names_apart() {
    let (c, pool) = with_pool("Directory");
    let s = settings(&c);
    let gn = member_node(&c, &s, &pool, "worker-a", Some(&"ab".repeat(32))).unwrap();
    assert_eq!(
        gn.metadata.name.as_deref(),
        Some("garage-node-local-local-worker-a")
    );
    assert_eq!(gn.spec.backing, Some(NodeBacking::NodeLocalPool));
    assert_eq!(gn.spec.kubernetes_node_name.as_deref(), Some("worker-a"));
    assert_eq!(gn.spec.capacity, Some(Quantity("10Gi".into())));
    let labels = gn.metadata.labels.unwrap();
    assert_eq!(labels[label::LABEL_NODE_LOCAL_POOL], "local");
    assert_eq!(labels[label::LABEL_KUBERNETES_NODE], "worker-a");
    assert_eq!(
        gn.metadata.annotations.unwrap()[annotation::ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID],
        "ab".repeat(32)
    );
    let long = "a-very-long-kubernetes-node-name.with.dots.example.internal.cluster.local";
    let a = garage_node_name("garage", "local", long);
    let b = garage_node_name("garage", "local", &format!("{long}x"));
    assert!(a.len() <= 61 && names::is_dns_label(&a));
    assert_ne!(a, b);
    assert!(node_label_value(long).len() <= 63);
}
