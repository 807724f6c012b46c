use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use shared_types::common::VolumeType;
use shared_types::garage_cluster::common::{DataPath, DataPathVolumeConfig, VolumeConfig};
use shared_types::garage_cluster::v1beta2::GarageCluster;

use super::*;
use crate::desired::test_support::cluster;

fn q(s: &str) -> Option<Quantity> {
    Some(Quantity(s.into()))
}

/// A writable path with a capacity and a claim of `size`.
fn path(p: &str, capacity: Option<&str>, size: Option<&str>) -> DataPath {
    DataPath {
        path: p.into(),
        capacity: capacity.and_then(q),
        read_only: None,
        volume: size.map(|s| DataPathVolumeConfig {
            size: q(s),
            ..Default::default()
        }),
    }
}

fn read_only(p: &str) -> DataPath {
    DataPath {
        read_only: Some(true),
        ..path(p, None, Some("1Gi"))
    }
}

/// A writable path of 1Gi.
fn w(p: &str) -> DataPath {
    path(p, Some("1Gi"), None)
}

/// A one-member cluster whose `data` has `paths` and no top-level size, as admission lets
/// it be written.
fn cluster_with(paths: Vec<DataPath>) -> GarageCluster {
    let mut c = cluster(1);
    let data = c
        .spec
        .storage
        .as_mut()
        .and_then(|s| s.data.as_mut())
        .unwrap();
    data.size = None;
    data.paths = Some(paths);
    c
}

fn storage_with(paths: Vec<DataPath>) -> StorageSpec {
    cluster_with(paths).spec.storage.unwrap()
}

#[test]
fn no_paths_is_the_single_directory() {
    let storage = cluster(3).spec.storage.unwrap();
    assert_eq!(cluster_data_dirs(&storage), Ok(None));
}

#[test]
fn capacities_are_bytes_rounded_up_and_read_only_entries_have_none() {
    let dirs = cluster_data_dirs(&storage_with(vec![
        // capacity wins over the volume size
        path("/data/a", Some("1Gi"), Some("2Gi")),
        // no capacity: the volume's size
        path("/data/b", None, Some("1.5Ki")),
        // milli-bytes round up to a whole byte, never a suffix Garage would misread
        path("/data/c", Some("1000001m"), None),
        read_only("/data/old"),
    ]))
    .unwrap()
    .unwrap();
    let got: Vec<(&str, Option<u64>)> =
        dirs.iter().map(|d| (d.path.as_str(), d.capacity)).collect();
    assert_eq!(
        got,
        [
            ("/data/a", Some(1 << 30)),
            ("/data/b", Some(1536)),
            ("/data/c", Some(1001)),
            ("/data/old", None),
        ]
    );
    assert_eq!(writable_bytes(&dirs), (1 << 30) + 1536 + 1001);
}

#[test]
fn a_path_without_its_own_size_takes_the_top_level_size() {
    let mut storage = storage_with(vec![path("/data/a", None, None)]);
    storage.data.as_mut().unwrap().size = q("3Gi");
    let dirs = cluster_data_dirs(&storage).unwrap().unwrap();
    assert_eq!(dirs[0].capacity, Some(3 << 30));
}

#[test]
fn shapes_garage_or_the_pod_could_not_run_are_refused() {
    let cases: Vec<(&str, Vec<DataPath>, &str)> = vec![
        ("relative", vec![w("data/a")], "absolute"),
        ("dot-dot", vec![w("/data/../etc")], "absolute"),
        ("trailing slash", vec![w("/data/a/")], "absolute"),
        ("double slash", vec![w("/data//a")], "absolute"),
        ("root", vec![w("/")], "absolute"),
        ("control", vec![w("/data/a\n")], "absolute"),
        ("metadata", vec![w("/data/metadata")], "/data/metadata"),
        ("parent of metadata", vec![w("/data")], "/data/metadata"),
        ("inside the config", vec![w("/etc/garage/x")], "/etc/garage"),
        ("secrets", vec![w("/secrets")], "/secrets/rpc"),
        (
            "duplicate",
            vec![w("/data/a"), w("/data/a")],
            "overlaps paths[0]",
        ),
        (
            "nested",
            vec![w("/data/a"), w("/data/a/b")],
            "overlaps paths[0]",
        ),
        (
            "no capacity",
            vec![path("/data/a", None, None)],
            "neither capacity",
        ),
        ("zero", vec![path("/data/a", Some("0"), None)], "positive"),
        (
            "garbage",
            vec![path("/data/a", Some("1GB"), None)],
            "positive",
        ),
        (
            "only read-only",
            vec![read_only("/data/old")],
            "writable directory",
        ),
    ];
    for (name, paths, want) in cases {
        let e = cluster_data_dirs(&storage_with(paths)).unwrap_err();
        let DesiredError::Invalid { field, message } = &e else {
            panic!("{name}: {e}");
        };
        assert_eq!(*field, "spec.storage.data.paths", "{name}");
        assert!(message.contains(want), "{name}: {message}");
    }
    // Siblings that share a prefix do not overlap.
    assert!(
        cluster_data_dirs(&storage_with(vec![
            w("/data/a"),
            w("/data/ab"),
            w("/data/data"),
        ]))
        .is_ok()
    );
}

#[test]
fn generated_paths_inherit_claim_fields_but_never_the_class() {
    let mut storage = storage_with(vec![
        DataPath {
            volume: Some(DataPathVolumeConfig {
                size: q("2Gi"),
                storage_class_name: Some("ssd".into()),
                volume_attributes_class_name: Some("fast".into()),
                ..Default::default()
            }),
            ..w("/data/a")
        },
        path("/data/b", Some("5Gi"), None),
        DataPath {
            volume: Some(DataPathVolumeConfig {
                type_: Some(VolumeType::EmptyDir),
                ..Default::default()
            }),
            ..w("/data/scratch")
        },
        read_only("/data/old"),
    ]);
    let data: &mut VolumeConfig = storage.data.as_mut().unwrap();
    data.volume_attributes_class_name = Some("top".into());
    data.access_modes = Some(vec!["ReadWriteOncePod".into()]);
    let v = node_data_paths(data);
    assert_eq!(v.len(), 4);
    // Its own class, size and attributes class; access modes from the top level.
    assert_eq!(v[0].path.as_deref(), Some("/data/a"));
    assert_eq!(v[0].size, q("2Gi"));
    assert_eq!(v[0].storage_class_name.as_deref(), Some("ssd"));
    assert_eq!(v[0].volume_attributes_class_name.as_deref(), Some("fast"));
    assert_eq!(
        v[0].access_modes.as_deref(),
        Some(&["ReadWriteOncePod".to_owned()][..])
    );
    // No volume: the capacity sizes the claim, the top-level class backs it, and the
    // top-level attributes class does not apply.
    assert_eq!(v[1].size, q("5Gi"));
    assert_eq!(v[1].storage_class_name.as_deref(), Some("local-sim"));
    assert_eq!(v[1].volume_attributes_class_name, None);
    // An EmptyDir takes no claim field at all.
    assert_eq!(v[2].type_, Some(VolumeType::EmptyDir));
    assert_eq!(
        (
            v[2].storage_class_name.as_ref(),
            v[2].access_modes.as_ref(),
            v[2].size.as_ref()
        ),
        (None, None, Some(&Quantity("1Gi".into())))
    );
    assert_eq!(v[3].read_only, Some(true));
    assert_eq!(v[1].read_only, None, "false is not written");
}

#[test]
fn a_node_fits_only_the_directories_of_the_shared_config() {
    use crate::desired::Settings;
    use crate::desired::nodes::auto_storage_node;
    let c = cluster_with(vec![w("/data/a"), read_only("/data/old")]);
    let s = Settings::from_cluster(&c).unwrap();
    let generated = auto_storage_node(&c, &s, 0).unwrap();
    assert_eq!(check_node(&generated, &s), Ok(()));

    // The single data volume beside a paths cluster.
    let plain = cluster(1);
    let single = auto_storage_node(&plain, &Settings::from_cluster(&plain).unwrap(), 0).unwrap();
    let e = check_node(&single, &s).unwrap_err();
    assert!(matches!(e, DesiredError::Unsupported(f) if f.starts_with("spec.storage.data ")));
    // Paths beside a single-directory cluster, or other paths, or another read-only mark.
    let plain_s = Settings::from_cluster(&plain).unwrap();
    assert!(matches!(
        check_node(&generated, &plain_s),
        Err(DesiredError::Unsupported(f)) if f.starts_with("spec.storage.dataPaths")
    ));
    let changed = |change: fn(&mut Vec<NodeVolumeConfig>)| {
        let mut n = generated.clone();
        let storage = n.spec.storage.as_mut();
        change(storage.and_then(|s| s.data_paths.as_mut()).unwrap());
        n
    };
    let moved = changed(|p| p[0].path = None);
    assert!(check_node(&moved, &s).is_err(), "mounted at /data/data-0");
    assert!(check_node(&changed(|p| p[1].read_only = None), &s).is_err());
    // Capacities are the cluster's to declare: another size still fits.
    assert_eq!(check_node(&changed(|p| p[0].size = None), &s), Ok(()));
    // One data volume beside the single directory fits, as always.
    assert_eq!(check_node(&single, &plain_s), Ok(()));
}

#[test]
fn names_and_default_mounts_follow_the_go_operator() {
    assert_eq!(volume_name(0), "data-0");
    assert_eq!(mount_path(&NodeVolumeConfig::default(), 2), "/data/data-2");
    let v = NodeVolumeConfig {
        path: Some("/mnt/hdd1".into()),
        ..Default::default()
    };
    assert_eq!(mount_path(&v, 2), "/mnt/hdd1");
}
