//! Table tests of GC-U5 (volume fields the released renderer ignored) and
//! its GC-S5 normalisation through both validators, as matchPolicy
//! Equivalent runs them; the harness is in `tests_legacy`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::tests::{base, del};
use super::tests_legacy::{Case, deleting, equivalent, finalizer_update, run_both, with};
use crate::admission::testing::warned;

/// An EmptyDir volume carrying every PVC field the released renderer ignored.
pub(super) fn empty_dir_with_fields() -> Value {
    json!({
        "type": "EmptyDir",
        "storageClassName": "fast",
        "selector": {"matchLabels": {"disk": "ssd"}},
        "accessModes": ["ReadWriteOnce"],
        "labels": {"a": "1", "b": "2"},
        "annotations": {"note": "legacy"}
    })
}

#[test]
fn gc_u5_released_volume_fields_on_both_versions() {
    let metadata = with(&base(), "/spec/storage/metadata", empty_dir_with_fields());
    let path_volume = with(
        &base(),
        "/spec/storage/data",
        json!({"paths": [{"path": "/data/a", "capacity": "10Gi", "volume": empty_dir_with_fields()}]}),
    );
    let malformed = with(
        &base(),
        "/spec/storage/data/selector",
        json!({"matchExpressions": [{"key": "disk", "operator": "LegacyInvalid"}]}),
    );
    let gateway = with(&base(), "/spec/gateway/metadata", empty_dir_with_fields());
    let image = |v: &Value| with(v, "/spec/image", json!("dxflrs/garage:v2.1.0"));
    let clean = json!({"type": "EmptyDir"});
    let mut cases: Vec<Case<'_>> = vec![
        (
            "GC-U5 EmptyDir metadata fields, metadata update",
            metadata.clone(),
            finalizer_update(&metadata),
            None,
            None,
        ),
        (
            "GC-U5 EmptyDir metadata fields, image change",
            metadata.clone(),
            image(&metadata),
            None,
            None,
        ),
        (
            "GC-U5 GC-S5 EmptyDir metadata fields all removed while live",
            metadata.clone(),
            with(&metadata, "/spec/storage/metadata", clean.clone()),
            None,
            None,
        ),
        (
            "GC-U5 EmptyDir metadata label value changed",
            metadata.clone(),
            with(&metadata, "/spec/storage/metadata/labels/a", json!("9")),
            Some("GC-U5"),
            Some("GC-U5"),
        ),
        (
            "GC-U5 EmptyDir metadata one of two labels removed",
            metadata.clone(),
            del(metadata.clone(), "/spec/storage/metadata/labels/b"),
            Some("GC-U5"),
            Some("GC-U5"),
        ),
        (
            "GC-U5 EmptyDir metadata gains a storage class next to released fields",
            with(
                &base(),
                "/spec/storage/metadata",
                json!({"type": "EmptyDir", "labels": {"a": "1"}}),
            ),
            with(
                &base(),
                "/spec/storage/metadata",
                json!({"type": "EmptyDir", "labels": {"a": "1"}, "storageClassName": "fast"}),
            ),
            Some("GC-U5"),
            Some("GC-U5"),
        ),
        (
            "GC-U5 data path volume fields, metadata update",
            path_volume.clone(),
            finalizer_update(&path_volume),
            None,
            None,
        ),
        (
            "GC-U5 GC-S5 data path volume fields removed while live",
            path_volume.clone(),
            with(&path_volume, "/spec/storage/data/paths/0/volume", clean),
            None,
            None,
        ),
        (
            "GC-U5 data path volume annotation changed",
            path_volume.clone(),
            with(
                &path_volume,
                "/spec/storage/data/paths/0/volume/annotations/note",
                json!("new"),
            ),
            Some("GC-U5"),
            Some("GC-U5"),
        ),
        (
            "GC-U5 malformed selector, metadata update",
            malformed.clone(),
            finalizer_update(&malformed),
            None,
            None,
        ),
        (
            "GC-U5 GC-S5 malformed selector removed while live",
            malformed.clone(),
            del(malformed.clone(), "/spec/storage/data/selector"),
            None,
            None,
        ),
        (
            "GC-U5 malformed selector replaced by a valid one",
            malformed.clone(),
            with(
                &malformed,
                "/spec/storage/data/selector",
                json!({"matchLabels": {"disk": "ssd"}}),
            ),
            Some("GC-U5"),
            Some("GC-U5"),
        ),
        (
            "GC-U5 gateway metadata fields, image change",
            gateway.clone(),
            image(&gateway),
            None,
            None,
        ),
        (
            "GC-U5 GC-S5 gateway metadata fields removed while live",
            gateway.clone(),
            with(
                &gateway,
                "/spec/gateway/metadata",
                json!({"type": "EmptyDir"}),
            ),
            None,
            None,
        ),
        (
            "GC-U5 gateway metadata selector changed",
            gateway.clone(),
            with(
                &gateway,
                "/spec/gateway/metadata/selector/matchLabels/disk",
                json!("hdd"),
            ),
            Some("GC-U5"),
            None,
        ),
        (
            "GC-U5 clean EmptyDir becomes a classed PVC at zero replicas",
            with(
                &with(&base(), "/spec/storage/replicas", json!(0)),
                "/spec/storage/metadata",
                json!({"type": "EmptyDir"}),
            ),
            with(
                &with(&base(), "/spec/storage/replicas", json!(0)),
                "/spec/storage/metadata",
                json!({"size": "1Gi", "storageClassName": "fast"}),
            ),
            None,
            None,
        ),
    ];
    for legacy in [&metadata, &path_volume, &malformed, &gateway] {
        let (old, new) = deleting(legacy);
        cases.push((
            "GC-U5 deleting cluster's finalizer removal",
            old,
            new,
            None,
            None,
        ));
    }
    run_both(cases);
    let [hub, spoke] = equivalent(&metadata, &finalizer_update(&metadata));
    for verdict in [hub, spoke] {
        let fragment = "spec.storage.metadata contains unchanged released PVC fields";
        let kept = warned(&verdict, fragment, "GC-W21");
        assert!(kept, "{:?}", verdict.warnings());
    }
    let [hub, _] = equivalent(&path_volume, &finalizer_update(&path_volume));
    assert!(
        hub.warnings()
            .iter()
            .any(|w| w.starts_with("spec.storage.data.paths[0].volume contains")),
        "{:?}",
        hub.warnings()
    );
}
