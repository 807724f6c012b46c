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

/// Settings of the cluster without its pools (the builders take the pool on its own).
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

/// The HostPath of volume `name`, if it is one.
fn host_path_of(volumes: &[Volume], name: &str) -> Option<HostPathVolumeSource> {
    volumes
        .iter()
        .find(|v| v.name == name)
        .and_then(|v| v.host_path.clone())
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
    let hp = |name: &str| host_path_of(&volumes, name).unwrap();
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

/// A pool on `paths` (its `dataPaths`) in a cluster of its own.
fn with_paths(paths: serde_json::Value) -> (GarageCluster, NodeLocalPoolSpec) {
    let mut c = cluster(0);
    let pool: NodeLocalPoolSpec = serde_json::from_value(json!({
        "name": "array",
        "capacity": "700Gi",
        "metadata": {"hostPath": "/var/lib/garage/array/metadata"},
        "dataPaths": paths,
        "selector": {"matchLabels": {"pool": "array"}},
    }))
    .unwrap();
    c.spec.storage.as_mut().unwrap().node_local_pools = Some(vec![pool.clone()]);
    (c, pool)
}

fn fast_and_archive() -> serde_json::Value {
    json!([
        {"path": "/data/fast", "hostPath": "/mnt/fast/garage", "capacity": "500Gi"},
        {"path": "/data/archive", "hostPath": "/mnt/archive/garage", "hostPathType": "DirectoryOrCreate", "readOnly": true},
    ])
}

#[test]
fn every_data_path_is_a_host_path_mounted_at_its_path_with_its_marker() {
    let (c, pool) = with_paths(fast_and_archive());
    let s = settings(&c);
    let rev = config_revision(&c, &s, &pool).unwrap().unwrap();
    let ds = daemonset(PoolInputs {
        cluster: &c,
        settings: &s,
        pool: &pool,
        config: &rev,
        rpc_secret: &rpc_secret_source(&c, &s),
        admin_token: &admin_token_source(&c, &s),
    })
    .unwrap();
    let pod = ds.spec.as_ref().unwrap().template.spec.clone().unwrap();
    let volumes = pod.volumes.unwrap();
    let hp = |name: &str| host_path_of(&volumes, name);
    let mounts = pod.containers[0].volume_mounts.clone().unwrap();
    let at = |path: &str| mounts.iter().find(|m| m.mount_path == path).unwrap();
    // (volume, HostPath, type, mounted at, marker)
    for (volume, host, kind, path, marker) in [
        (
            "data-0",
            "/mnt/fast/garage",
            "Directory",
            "/data/fast",
            true,
        ),
        (
            "data-1",
            "/mnt/archive/garage",
            "DirectoryOrCreate",
            "/data/archive",
            false,
        ),
    ] {
        let v = hp(volume).unwrap();
        assert_eq!((v.path.as_str(), v.type_.as_deref()), (host, Some(kind)));
        let m = at(path);
        assert_eq!(m.name, volume);
        // A read-only path is still mounted read-write: Garage keeps its marker there and
        // moves its blocks away.
        assert_ne!(m.read_only, Some(true), "{path}");
        let check = hp(&format!("verify-{volume}"));
        assert_eq!(check.is_some(), marker, "{volume}");
        if let Some(check) = check {
            assert_eq!(check.path, format!("{host}/.garage-volume-id"));
            assert_eq!(check.type_.as_deref(), Some("File"));
        }
    }
    assert!(
        hp("data").is_none(),
        "no single data volume beside the paths"
    );
    assert_eq!(
        volumes
            .iter()
            .find(|v| v.name == "config")
            .and_then(|v| v.config_map.as_ref())
            .map(|c| c.name.clone()),
        Some(rev.name.clone()),
        "the pool's own revision"
    );
    // The DaemonSet and its revision record the same layout.
    let record =
        &ds.metadata.annotations.as_ref().unwrap()[annotation::ANNOTATION_STORAGE_DISK_LAYOUT];
    assert_eq!(
        record,
        &rev.config_map.metadata.annotations.as_ref().unwrap()
            [annotation::ANNOTATION_STORAGE_DISK_LAYOUT]
    );
    assert_eq!(record, &disk_layout::of_pool(&pool).to_json());
}

#[test]
fn a_pool_revision_lists_each_path_with_whole_bytes_or_read_only() {
    let (c, pool) = with_paths(fast_and_archive());
    let s = settings(&c);
    let rev = config_revision(&c, &s, &pool).unwrap().unwrap();
    assert!(
        rev.name.starts_with("garage-storage-array-config-"),
        "{}",
        rev.name
    );
    let labels = rev.config_map.metadata.labels.as_ref().unwrap();
    assert_eq!(labels[label::LABEL_NODE_LOCAL_POOL], "array");
    assert_eq!(labels[label::LABEL_CLUSTER], "garage");
    assert_eq!(rev.config_map.immutable, Some(true));
    let toml = &rev.config_map.data.as_ref().unwrap()[CONFIG_KEY];
    assert!(
        toml.contains(
            "data_dir = [\n  { path = \"/data/fast\", capacity = \"536870912000\" },\n  { path = \"/data/archive\", read_only = true },\n]"
        ),
        "{toml}"
    );
    // The rest is the cluster's garage.toml.
    let shared = config::render(&c, &s).unwrap();
    assert_eq!(
        toml.lines()
            .filter(|l| !l.starts_with("  ") && *l != "]" && !l.starts_with("data_dir"))
            .collect::<Vec<_>>(),
        shared
            .lines()
            .filter(|l| !l.starts_with("data_dir"))
            .collect::<Vec<_>>()
    );
    // Another HostPath behind the same container paths is another revision: an old pod never
    // restarts on a config whose record does not match its mounts.
    let (c2, pool2) = with_paths(json!([
        {"path": "/data/fast", "hostPath": "/mnt/other", "capacity": "500Gi"},
        {"path": "/data/archive", "hostPath": "/mnt/archive/garage", "hostPathType": "DirectoryOrCreate", "readOnly": true},
    ]));
    let rev2 = config_revision(&c2, &settings(&c2), &pool2)
        .unwrap()
        .unwrap();
    assert_eq!(rev2.config_map.data, rev.config_map.data);
    assert_ne!(rev2.name, rev.name);
    // The single `data` HostPath mounts the shared revision.
    let (c, pool) = with_pool("Directory");
    assert_eq!(config_revision(&c, &settings(&c), &pool).unwrap(), None);
}

#[test]
fn the_layout_weight_is_the_pool_capacity_not_the_sum_of_its_paths() {
    let (c, pool) = with_paths(json!([
        {"path": "/data/fast", "hostPath": "/mnt/fast", "capacity": "500Gi"},
        {"path": "/data/slow", "hostPath": "/mnt/slow", "capacity": "900Gi"},
    ]));
    let gn = member_node(&c, &settings(&c), &pool, "worker-a", None).unwrap();
    assert_eq!(gn.spec.capacity, Some(Quantity("700Gi".into())));
}

#[test]
fn pool_paths_garage_or_the_pod_could_not_use_are_refused() {
    // (case, dataPaths, words of the refusal)
    for (name, paths, want) in [
        (
            "a writable path without capacity",
            json!([{"path": "/data/a", "hostPath": "/mnt/a"}]),
            "is writable",
        ),
        (
            "a zero capacity",
            json!([{"path": "/data/a", "hostPath": "/mnt/a", "capacity": "0"}]),
            "not a positive quantity",
        ),
        (
            "only read-only paths",
            json!([{"path": "/data/a", "hostPath": "/mnt/a", "readOnly": true}]),
            "every path is readOnly",
        ),
        (
            "two overlapping container paths",
            json!([
                {"path": "/data/a", "hostPath": "/mnt/a", "capacity": "1Gi"},
                {"path": "/data/a/b", "hostPath": "/mnt/b", "capacity": "1Gi"},
            ]),
            "overlaps paths[0]",
        ),
        (
            "the marker directory",
            json!([{"path": "/var/run/garage-volume-markers/x", "hostPath": "/mnt/a", "capacity": "1Gi"}]),
            "which the operator mounts",
        ),
        (
            "the metadata directory",
            json!([{"path": "/data/metadata", "hostPath": "/mnt/a", "capacity": "1Gi"}]),
            "which the operator mounts",
        ),
        (
            "a relative path",
            json!([{"path": "data/a", "hostPath": "/mnt/a", "capacity": "1Gi"}]),
            "absolute",
        ),
    ] {
        let (c, _) = with_paths(paths);
        let err = Settings::from_cluster(&c).unwrap_err();
        let DesiredError::Invalid { field, message } = &err else {
            panic!("{name}: {err}");
        };
        assert_eq!(*field, "spec.storage.nodeLocalPools[].dataPaths", "{name}");
        assert!(
            message.contains(want) && message.contains("pool array"),
            "{name}: {message}"
        );
    }
    // Both data and dataPaths, or neither.
    let (mut c, mut both) = with_paths(fast_and_archive());
    both.data = Some(HostPathVolume {
        host_path: "/mnt/d".into(),
        host_path_type: None,
    });
    c.spec.storage.as_mut().unwrap().node_local_pools = Some(vec![both]);
    assert!(
        Settings::from_cluster(&c)
            .unwrap_err()
            .to_string()
            .contains("exactly one of data and dataPaths")
    );
    let (c, _) = with_paths(fast_and_archive());
    assert!(Settings::from_cluster(&c).is_ok());
}

#[test]
fn pool_pods_keep_root_for_their_host_paths_but_no_capability() {
    let (c, pool) = with_pool("Directory");
    let pod = render(&c, &pool).spec.unwrap().template.spec.unwrap();
    let ctx = pod.security_context.unwrap();
    // The kubelet gives HostPath directories no fsGroup: root owns them.
    assert_eq!(ctx.run_as_user, None);
    assert_eq!(ctx.fs_group, None);
    assert_eq!(
        ctx.seccomp_profile.map(|s| s.type_),
        Some("RuntimeDefault".to_owned())
    );
    assert_eq!(pod.automount_service_account_token, Some(false));
    let cc = pod.containers[0].security_context.clone().unwrap();
    assert_eq!(
        cc.capabilities.and_then(|c| c.drop),
        Some(vec!["ALL".to_owned()])
    );
    assert_eq!(cc.allow_privilege_escalation, Some(false));
}
