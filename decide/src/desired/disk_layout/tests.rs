#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use super::*;

/// A pool with metadata on `/m` and the given `dataPaths` (or the single `data` on `/d` when
/// `paths` is `None`).
fn pool(metadata_type: &str, paths: Option<serde_json::Value>) -> NodeLocalPoolSpec {
    let mut v = json!({
        "name": "local", "capacity": "1Gi",
        "metadata": {"hostPath": "/m", "hostPathType": metadata_type},
        "selector": {"matchLabels": {"pool": "local"}},
    });
    match paths {
        Some(p) => v["dataPaths"] = p,
        None => v["data"] = json!({"hostPath": "/d"}),
    }
    serde_json::from_value(v).unwrap()
}

fn two() -> serde_json::Value {
    json!([
        {"path": "/data/a", "hostPath": "/mnt/a", "capacity": "1Gi"},
        {"path": "/data/b", "hostPath": "/mnt/b", "capacity": "1Gi"},
    ])
}

#[test]
fn the_layout_of_a_pool_lists_every_data_path_with_its_type_and_read_only_mark() {
    let l = of_pool(&pool(
        "Directory",
        Some(json!([
            {"path": "/data/a", "hostPath": "/mnt/a", "capacity": "1Gi"},
            {"path": "/data/b", "hostPath": "/mnt/b", "hostPathType": "DirectoryOrCreate", "readOnly": true},
        ])),
    ));
    assert_eq!(l.metadata_host_path, "/m");
    assert_eq!(l.metadata_host_path_type, DIRECTORY);
    let got: Vec<(&str, &str, &str, bool)> = l
        .data_paths
        .iter()
        .map(|d| {
            (
                d.path.as_str(),
                d.host_path.as_str(),
                d.host_path_type.as_str(),
                d.read_only,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("/data/a", "/mnt/a", DIRECTORY, false),
            ("/data/b", "/mnt/b", DIRECTORY_OR_CREATE, true),
        ]
    );
    // The single `data` HostPath is the data path /data/data.
    let single = of_pool(&pool("Directory", None));
    assert_eq!(single.data_paths.len(), 1);
    assert_eq!(single.data_paths[0].path, DATA_DIR);
    // The record reads back as written, in the documented shape.
    let raw = l.to_json();
    let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(v["version"], 1);
    assert_eq!(v["metadataHostPath"], "/m");
    assert_eq!(v["dataPaths"][1]["readOnly"], true);
    assert_eq!(v["dataPaths"][1]["hostPath"], "/mnt/b");
    let annotations = BTreeMap::from([(ANNOTATION_STORAGE_DISK_LAYOUT.to_owned(), raw)]);
    assert_eq!(recorded(Some(&annotations)), Some(Ok(l)));
    assert_eq!(recorded(None), None);
}

#[test]
fn an_unreadable_or_unknown_record_is_an_error_not_an_absence() {
    for (raw, want) in [
        ("not json", "unreadable"),
        (
            r#"{"version":2,"metadataHostPath":"/m","metadataHostPathType":"Directory","dataPaths":[]}"#,
            "version 2",
        ),
    ] {
        let annotations = BTreeMap::from([(ANNOTATION_STORAGE_DISK_LAYOUT.to_owned(), raw.into())]);
        let err = recorded(Some(&annotations)).unwrap().unwrap_err();
        assert!(err.contains(want), "{raw}: {err}");
    }
}

/// (case, metadata type before, paths before, metadata type after, paths after, the
/// violations' telling words; empty when allowed)
type Transition = (
    &'static str,
    &'static str,
    Option<serde_json::Value>,
    &'static str,
    Option<serde_json::Value>,
    Vec<&'static str>,
);

#[test]
fn transitions_add_and_mark_read_only_but_never_detach_remap_or_loosen() {
    let field = "spec.storage.nodeLocalPools[\"local\"]";
    let cases: Vec<Transition> = vec![
        (
            "unchanged",
            "Directory",
            Some(two()),
            "Directory",
            Some(two()),
            vec![],
        ),
        (
            "a path added and the first marked readOnly",
            "Directory",
            Some(two()),
            "Directory",
            Some(json!([
                {"path": "/data/a", "hostPath": "/mnt/a", "readOnly": true},
                {"path": "/data/b", "hostPath": "/mnt/b", "capacity": "1Gi"},
                {"path": "/data/c", "hostPath": "/mnt/c", "capacity": "1Gi"},
            ])),
            vec![],
        ),
        (
            "the single data HostPath kept as the data path /data/data",
            "Directory",
            None,
            "Directory",
            Some(json!([
                {"path": "/data/data", "hostPath": "/d", "capacity": "1Gi"},
                {"path": "/data/c", "hostPath": "/mnt/c", "capacity": "1Gi"},
            ])),
            vec![],
        ),
        (
            "a type tightened",
            "DirectoryOrCreate",
            Some(
                json!([{"path": "/data/a", "hostPath": "/mnt/a", "hostPathType": "DirectoryOrCreate", "capacity": "1Gi"}]),
            ),
            "Directory",
            Some(json!([{"path": "/data/a", "hostPath": "/mnt/a", "capacity": "1Gi"}])),
            vec![],
        ),
        (
            "a path removed",
            "Directory",
            Some(two()),
            "Directory",
            Some(json!([{"path": "/data/a", "hostPath": "/mnt/a", "capacity": "1Gi"}])),
            vec!["dataPaths removes /data/b (hostPath /mnt/b)"],
        ),
        (
            "a read-only path removed too",
            "Directory",
            Some(json!([
                {"path": "/data/a", "hostPath": "/mnt/a", "readOnly": true},
                {"path": "/data/b", "hostPath": "/mnt/b", "capacity": "1Gi"},
            ])),
            "Directory",
            Some(json!([{"path": "/data/b", "hostPath": "/mnt/b", "capacity": "1Gi"}])),
            vec!["dataPaths removes /data/a"],
        ),
        (
            "a path remapped to another HostPath",
            "Directory",
            Some(two()),
            "Directory",
            Some(json!([
                {"path": "/data/a", "hostPath": "/mnt/other", "capacity": "1Gi"},
                {"path": "/data/b", "hostPath": "/mnt/b", "capacity": "1Gi"},
            ])),
            vec!["remaps /data/a from hostPath /mnt/a to /mnt/other"],
        ),
        (
            "a HostPath moved to another container path",
            "Directory",
            Some(two()),
            "Directory",
            Some(json!([
                {"path": "/data/z", "hostPath": "/mnt/a", "capacity": "1Gi"},
                {"path": "/data/b", "hostPath": "/mnt/b", "capacity": "1Gi"},
            ])),
            vec!["moves hostPath /mnt/a from /data/a to /data/z"],
        ),
        (
            "a data type loosened",
            "Directory",
            Some(two()),
            "Directory",
            Some(json!([
                {"path": "/data/a", "hostPath": "/mnt/a", "hostPathType": "DirectoryOrCreate", "capacity": "1Gi"},
                {"path": "/data/b", "hostPath": "/mnt/b", "capacity": "1Gi"},
            ])),
            vec!["loosens the hostPathType of /data/a"],
        ),
        (
            "the metadata type loosened",
            "Directory",
            Some(two()),
            "DirectoryOrCreate",
            Some(two()),
            vec!["metadata.hostPathType loosens"],
        ),
        (
            "dataPaths back to the single data HostPath elsewhere",
            "Directory",
            Some(two()),
            "Directory",
            None,
            vec!["removes /data/a", "removes /data/b"],
        ),
    ];
    for (name, mt_from, from, mt_to, to, want) in cases {
        let got = violations(
            field,
            &of_pool(&pool(mt_from, from)),
            &of_pool(&pool(mt_to, to)),
        );
        assert_eq!(got.len(), want.len(), "{name}: {got:?}");
        for (g, w) in got.iter().zip(&want) {
            assert!(g.contains(w), "{name}: {g:?} lacks {w:?}");
            assert!(g.starts_with(field), "{name}: {g:?} names no field");
        }
    }
    // The metadata HostPath itself never changes.
    let mut moved = of_pool(&pool("Directory", Some(two())));
    let from = moved.clone();
    moved.metadata_host_path = "/m2".into();
    let got = violations(field, &from, &moved);
    assert!(
        got[0].contains("metadata.hostPath changes from /m to /m2"),
        "{got:?}"
    );
}

#[test]
fn mounts_are_read_from_the_template_and_compared_without_read_only_marks() {
    let template = json!({"spec": {"template": {"spec": {
        "containers": [{"name": "garage", "image": "x", "volumeMounts": [
            {"name": "metadata", "mountPath": "/data/metadata"},
            {"name": "data-0", "mountPath": "/data/a"},
            {"name": "data-1", "mountPath": "/data/b"},
            {"name": "verify-data-0", "mountPath": "/var/run/garage-volume-markers/data-0", "readOnly": true},
            {"name": "config", "mountPath": "/etc/garage"},
        ]}],
        "volumes": [
            {"name": "metadata", "hostPath": {"path": "/m", "type": "Directory"}},
            {"name": "data-0", "hostPath": {"path": "/mnt/a", "type": "Directory"}},
            {"name": "data-1", "hostPath": {"path": "/mnt/b", "type": "Directory"}},
            {"name": "verify-data-0", "hostPath": {"path": "/mnt/a/.garage-volume-id", "type": "File"}},
            {"name": "config", "configMap": {"name": "c"}},
        ],
    }}}});
    let ds: DaemonSet = serde_json::from_value(template).unwrap();
    let actual = mounted(&ds).unwrap();
    let mut record = of_pool(&pool(
        "Directory",
        Some(json!([
            {"path": "/data/a", "hostPath": "/mnt/a", "readOnly": true},
            {"path": "/data/b", "hostPath": "/mnt/b", "capacity": "1Gi"},
        ])),
    ));
    assert!(matches_mounts(&record, &actual));
    record.data_paths.pop();
    assert!(
        !matches_mounts(&record, &actual),
        "a record missing a mounted disk disagrees"
    );
    let empty: DaemonSet = serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap();
    assert!(mounted(&empty).is_err(), "no template proves nothing");
}
