//! Volume cases: source shape (GN-C21, GN-VS), legacy neutralisation
//! (GN-U9), immutability (GN-U13) and VolumeAttributesClass
//! (GN-VAC1…GN-VAC3, GN-W9).

use super::Want::{Allow, Deny, DenyWith, Warn};
use super::*;

fn data(v: Value) -> Value {
    merge(storage_node(), json!({"spec": {"storage": {"data": v}}}))
}

fn metadata(v: Value) -> Value {
    merge(
        storage_node(),
        json!({"spec": {"storage": {"metadata": v}}}),
    )
}

fn paths(v: Value) -> Value {
    merge(
        storage_node(),
        json!({"spec": {"storage": {"data": null, "dataPaths": v}}}),
    )
}

fn finalizer(n: Value) -> Value {
    merge(
        n,
        json!({"metadata": {"finalizers": ["garagenode.garage.rajsingh.info/finalizer"]}}),
    )
}

/// The node as the operator generates it for an Auto slot.
fn auto_child(n: Value) -> Value {
    merge(
        n,
        json!({"metadata": {
            "labels": {"app.kubernetes.io/managed-by": "operator"},
            "ownerReferences": [{"apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster", "name": CLUSTER, "uid": CLUSTER_UID, "controller": true}]
        }}),
    )
}

#[test]
fn volume_shape_table() {
    let c = ctx(vec![cluster()]);
    let cases: Vec<(&str, Value, Want)> = vec![
        (
            "EmptyDir without size",
            data(json!({"type": "EmptyDir", "size": null})),
            Warn("spec.storage.data is an EmptyDir: an eviction"),
        ),
        (
            "EmptyDir with size",
            data(json!({"type": "EmptyDir", "size": "1Gi"})),
            Warn("loses the blocks stored there"),
        ),
        (
            "EmptyDir metadata",
            metadata(json!({"type": "EmptyDir"})),
            Warn(
                "spec.storage.metadata is an EmptyDir: an eviction or reschedule of this node's pod (a node drain, for one) loses its metadata",
            ),
        ),
        (
            "EmptyDir data path",
            paths(json!([{"size": "1Gi"}, {"type": "EmptyDir"}])),
            Warn("spec.storage.dataPaths[1] is an EmptyDir"),
        ),
        (
            "bare data volume",
            data(json!({"size": null})),
            DenyWith(
                "GN-VS",
                "must specify existingClaim, size, or type=EmptyDir",
            ),
        ),
        (
            "metadata readOnly",
            metadata(json!({"readOnly": true})),
            DenyWith("GN-C21", "readOnly applies only to multi-HDD"),
        ),
        (
            "data readOnly",
            data(json!({"readOnly": true})),
            DenyWith("GN-C21", "readOnly applies only to multi-HDD"),
        ),
        (
            "readOnly-only dataPath",
            paths(json!([{"size": "1Gi"}, {"readOnly": true}])),
            DenyWith("GN-VS", "readOnly does not provide a Kubernetes volume"),
        ),
        (
            "dataPath existingClaim and readOnly",
            paths(json!([{"size": "1Gi"}, {"existingClaim": "old", "readOnly": true}])),
            Allow,
        ),
        (
            "dataPath existingClaim with advertised size",
            paths(json!([{"existingClaim": "hdd", "size": "4Ti"}])),
            Allow,
        ),
        (
            "EmptyDir with existingClaim",
            data(json!({"type": "EmptyDir", "existingClaim": "c"})),
            DenyWith("GN-VS", "not allowed with EmptyDir type"),
        ),
        (
            "EmptyDir with storage class",
            data(json!({"type": "EmptyDir", "storageClassName": "fast"})),
            Deny("GN-VS"),
        ),
        (
            "EmptyDir with selector",
            data(json!({"type": "EmptyDir", "selector": {"matchLabels": {"a": "b"}}})),
            Deny("GN-VS"),
        ),
        (
            "EmptyDir with labels",
            data(json!({"type": "EmptyDir", "labels": {"a": "b"}})),
            Deny("GN-VS"),
        ),
        (
            "existingClaim with selector",
            data(
                json!({"existingClaim": "c", "size": null, "selector": {"matchLabels": {"a": "b"}}}),
            ),
            DenyWith("GN-VS", "already bound or user-managed"),
        ),
        (
            "existingClaim with storage class",
            data(json!({"existingClaim": "c", "storageClassName": "fast"})),
            Deny("GN-VS"),
        ),
        (
            "bad selector key",
            data(json!({"selector": {"matchLabels": {"bad key": "x"}}})),
            DenyWith("GN-VS", "storage.data.selector"),
        ),
        (
            "bad selector operator in dataPath",
            paths(
                json!([{"size": "1Gi", "selector": {"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]}}]),
            ),
            DenyWith("GN-VS", "storage.dataPaths[0].selector"),
        ),
        (
            "snapshot interval 5m",
            merge(
                storage_node(),
                json!({"spec": {"storage": {"metadataAutoSnapshotInterval": "5m"}}}),
            ),
            DenyWith("GN-C21", "at least 600 seconds"),
        ),
        (
            "snapshot interval invalid",
            merge(
                storage_node(),
                json!({"spec": {"storage": {"metadataAutoSnapshotInterval": "invalid"}}}),
            ),
            DenyWith("GN-C21", "must be a Garage duration"),
        ),
        (
            "snapshot interval 1h 30m",
            merge(
                storage_node(),
                json!({"spec": {"storage": {"metadataAutoSnapshotInterval": "1h 30m"}}}),
            ),
            Allow,
        ),
        (
            "data and dataPaths together",
            merge(
                storage_node(),
                json!({"spec": {"storage": {"dataPaths": [{"size": "1Gi"}]}}}),
            ),
            DenyWith("GN-C21", "mutually exclusive"),
        ),
        (
            "storage node without data",
            merge(storage_node(), json!({"spec": {"storage": {"data": null}}})),
            DenyWith("GN-C21", "storage.data or storage.dataPaths is required"),
        ),
        (
            "gateway with data",
            merge(
                gateway_node(),
                json!({"spec": {"storage": {"data": {"size": "1Gi"}}}}),
            ),
            DenyWith("GN-C21", "not allowed on gateway nodes"),
        ),
        (
            "gateway with dataPaths",
            merge(
                gateway_node(),
                json!({"spec": {"storage": {"dataPaths": [{"size": "1Gi"}]}}}),
            ),
            Deny("GN-C21"),
        ),
        (
            "VolumeAttributesClass on data",
            data(
                json!({"volumeAttributesClassName": "fast-pool-3", "storageClassName": "xenorchestra-shared"}),
            ),
            Allow,
        ),
        (
            "VolumeAttributesClass on every role",
            merge(
                storage_node(),
                json!({"spec": {"storage": {"metadata": {"volumeAttributesClassName": "a.b-c"}, "data": null, "dataPaths": [{"size": "1Gi", "volumeAttributesClassName": "fast"}]}}}),
            ),
            Allow,
        ),
        (
            "VolumeAttributesClass with EmptyDir",
            data(json!({"type": "EmptyDir", "volumeAttributesClassName": "fast"})),
            DenyWith("GN-VAC2", "only valid for PersistentVolumeClaim volumes"),
        ),
        (
            "VolumeAttributesClass with existingClaim",
            data(
                json!({"existingClaim": "mine", "size": null, "volumeAttributesClassName": "fast"}),
            ),
            DenyWith("GN-VAC1", "cannot be combined with existingClaim"),
        ),
        (
            "VolumeAttributesClass with selector",
            data(
                json!({"selector": {"matchLabels": {"pv": "a"}}, "volumeAttributesClassName": "fast"}),
            ),
            Warn("statically bound PersistentVolume"),
        ),
    ];
    for (name, node, want) in cases {
        check(name, &create(node, &c), &want);
    }
}

#[test]
fn volume_update_table() {
    let c = ctx(vec![cluster()]);
    let vac = |class: Option<&str>| data(json!({"volumeAttributesClassName": class}));
    let legacy_empty_dir = data(
        json!({"type": "EmptyDir", "storageClassName": "fast", "selector": {"matchLabels": {"a": "b"}}, "accessModes": ["ReadWriteOnce"], "labels": {"x": "y"}}),
    );
    let legacy_claim = data(
        json!({"existingClaim": "c", "size": null, "selector": {"matchLabels": {"a": "b"}}, "labels": {"x": "y"}}),
    );
    let bad_selector = data(json!({"selector": {"matchLabels": {"bad key": "x"}}}));
    let ro_metadata = metadata(json!({"readOnly": true, "size": null}));
    let ro_data = data(json!({"readOnly": true, "size": null}));
    let ro_path = paths(json!([{"size": "1Gi"}, {"readOnly": true, "path": "/data/old"}]));
    let cases: Vec<(&str, Value, Value, &Context, Want)> = vec![
        (
            "size growth",
            storage_node(),
            data(json!({"size": "200Gi"})),
            &c,
            Allow,
        ),
        (
            "same size spelled differently",
            data(json!({"size": "1Gi"})),
            data(json!({"size": "1024Mi"})),
            &c,
            Allow,
        ),
        (
            "size shrink",
            storage_node(),
            data(json!({"size": "50Gi"})),
            &c,
            DenyWith("GN-U13", "may only grow"),
        ),
        (
            "storage class change",
            storage_node(),
            data(json!({"storageClassName": "fast"})),
            &c,
            DenyWith(
                "GN-U13",
                "volume source, path, class, access modes, and readOnly state are immutable",
            ),
        ),
        (
            "selector change on live data",
            data(json!({"selector": {"matchLabels": {"pv": "a"}}})),
            data(json!({"selector": {"matchLabels": {"pv": "b"}}})),
            &c,
            DenyWith("GN-U13", "immutable"),
        ),
        (
            "access modes change",
            storage_node(),
            data(json!({"accessModes": ["ReadWriteOncePod"]})),
            &c,
            Deny("GN-U13"),
        ),
        (
            "existingClaim size change",
            paths(json!([{"existingClaim": "hdd", "size": "4Ti"}])),
            paths(json!([{"existingClaim": "hdd", "size": "5Ti"}])),
            &c,
            DenyWith("GN-U13", "is immutable for existingClaim \"hdd\""),
        ),
        (
            "metadata removed",
            storage_node(),
            metadata(Value::Null),
            &c,
            DenyWith("GN-U13", "volume source is immutable"),
        ),
        (
            "data switched to dataPaths",
            storage_node(),
            paths(json!([{"size": "100Gi"}])),
            &c,
            DenyWith("GN-U13", "topology is immutable"),
        ),
        (
            "dataPath added",
            paths(json!([{"size": "1Gi"}])),
            paths(json!([{"size": "1Gi"}, {"size": "1Gi"}])),
            &c,
            Deny("GN-U13"),
        ),
        (
            "legacy EmptyDir fields, finalizer only",
            legacy_empty_dir.clone(),
            finalizer(legacy_empty_dir.clone()),
            &c,
            Warn("never affected the rendered Kubernetes volume"),
        ),
        (
            "legacy EmptyDir fields removed",
            legacy_empty_dir.clone(),
            data(json!({"type": "EmptyDir"})),
            &c,
            Allow,
        ),
        (
            "legacy EmptyDir label changed",
            legacy_empty_dir.clone(),
            merge(
                legacy_empty_dir,
                json!({"spec": {"storage": {"data": {"labels": {"x": "z"}}}}}),
            ),
            &c,
            DenyWith("GN-U9", "was ignored by the released renderer"),
        ),
        (
            "legacy existingClaim fields removed",
            legacy_claim.clone(),
            data(json!({"existingClaim": "c", "size": null})),
            &c,
            Allow,
        ),
        (
            "legacy existingClaim selector changed",
            legacy_claim.clone(),
            merge(
                legacy_claim,
                json!({"spec": {"storage": {"data": {"selector": {"matchLabels": {"a": "c"}}}}}}),
            ),
            &c,
            Deny("GN-U9"),
        ),
        (
            "malformed dynamic selector removed",
            bad_selector.clone(),
            data(json!({"selector": null})),
            &c,
            Allow,
        ),
        (
            "malformed dynamic selector replaced",
            bad_selector.clone(),
            data(json!({"selector": {"matchLabels": {"bad key": "y"}}})),
            &c,
            Deny("GN-U9"),
        ),
        (
            "malformed dynamic selector kept",
            bad_selector.clone(),
            finalizer(bad_selector),
            &c,
            Warn("never affected"),
        ),
        (
            "readOnly-only metadata, finalizer only",
            ro_metadata.clone(),
            finalizer(ro_metadata.clone()),
            &c,
            Warn("spec.storage.metadata contains unchanged released fields"),
        ),
        (
            "readOnly-only metadata gains a size",
            ro_metadata.clone(),
            metadata(json!({"readOnly": true, "size": "10Gi"})),
            &c,
            Allow,
        ),
        (
            "readOnly-only data cleared and sized",
            ro_data.clone(),
            data(json!({"readOnly": null, "size": "10Gi"})),
            &c,
            Allow,
        ),
        (
            "readOnly removed from a sourced volume",
            data(json!({"readOnly": true})),
            data(json!({"readOnly": null})),
            &c,
            Allow,
        ),
        (
            "readOnly-only data, finalizer only",
            ro_data.clone(),
            finalizer(ro_data),
            &c,
            Warn("never affected"),
        ),
        (
            "readOnly-only dataPath, finalizer only",
            ro_path.clone(),
            finalizer(ro_path.clone()),
            &c,
            Warn("spec.storage.dataPaths[1]"),
        ),
        (
            "readOnly-only dataPath gains a size",
            ro_path.clone(),
            paths(json!([{"size": "1Gi"}, {"readOnly": true, "path": "/data/old", "size": "1Ti"}])),
            &c,
            Allow,
        ),
        (
            "readOnly-only dataPath changes path",
            ro_path.clone(),
            paths(json!([{"size": "1Gi"}, {"readOnly": true, "path": "/data/new"}])),
            &c,
            DenyWith("GN-U13", "immutable"),
        ),
        (
            "GN-U13 readOnly-only dataPath gains a size and a new path",
            ro_path.clone(),
            paths(json!([{"size": "1Gi"}, {"readOnly": true, "path": "/data/new", "size": "1Ti"}])),
            &c,
            DenyWith(
                "GN-U13",
                "path, class, access modes, and readOnly state are immutable",
            ),
        ),
        (
            "GN-U13 readOnly-only dataPath gains an existingClaim at its path",
            ro_path.clone(),
            paths(
                json!([{"size": "1Gi"}, {"readOnly": true, "path": "/data/old", "existingClaim": "legacy"}]),
            ),
            &c,
            Allow,
        ),
        (
            "GN-U13 readOnly-only dataPath gains a source and drops readOnly",
            ro_path,
            paths(json!([{"size": "1Gi"}, {"path": "/data/old", "size": "1Ti"}])),
            &c,
            DenyWith("GN-U13", "readOnly state are immutable"),
        ),
        (
            "GN-U13 readOnly-only metadata gains a classed source",
            metadata(json!({"readOnly": true, "size": null})),
            metadata(json!({"size": "10Gi", "storageClassName": "fast"})),
            &c,
            Allow,
        ),
        (
            "manual node: class changed on a live volume",
            vac(Some("gold")),
            vac(Some("silver")),
            &c,
            Allow,
        ),
        (
            "manual node: class added to a live volume",
            storage_node(),
            vac(Some("gold")),
            &c,
            Allow,
        ),
        (
            "manual node: class removed from a live volume",
            vac(Some("gold")),
            vac(None),
            &c,
            DenyWith("GN-VAC3", "set an explicit default VolumeAttributesClass"),
        ),
        (
            "manual node: dataPath class removed",
            paths(json!([{"size": "1Gi", "volumeAttributesClassName": "gold"}])),
            paths(json!([{"size": "1Gi"}])),
            &c,
            Deny("GN-VAC3"),
        ),
        (
            "auto child: operator removes the class",
            auto_child(vac(Some("gold"))),
            auto_child(vac(None)),
            &c,
            Allow,
        ),
        (
            "auto child: operator changes the class",
            auto_child(vac(Some("gold"))),
            auto_child(vac(Some("silver"))),
            &c,
            Allow,
        ),
        (
            "auto child: storage class still immutable",
            auto_child(storage_node()),
            auto_child(data(json!({"storageClassName": "fast"}))),
            &c,
            Deny("GN-U13"),
        ),
        (
            "ejected node (no managed-by label) follows manual rules",
            auto_child(vac(Some("gold"))),
            merge(auto_child(vac(None)), json!({"metadata": {"labels": null}})),
            &c,
            Deny("GN-VAC3"),
        ),
        (
            "class added together with existingClaim",
            data(json!({"existingClaim": "c", "size": null})),
            data(json!({"existingClaim": "c", "size": null, "volumeAttributesClassName": "gold"})),
            &c,
            Deny("GN-VAC1"),
        ),
    ];
    for (name, old, new, c, want) in cases {
        check(name, &update(old, new, c), &want);
    }
}

#[test]
fn a_garage_node_container_gets_no_privilege() {
    let c = ctx(vec![cluster()]);
    let with = |sc: Value| {
        merge(
            storage_node(),
            json!({"spec": {"containerSecurityContext": sc}}),
        )
    };
    let cases: Vec<(&str, Value, Want)> = vec![
        (
            "privileged",
            with(json!({"privileged": true})),
            DenyWith("HA-PRIV", "garageSecurity.allowPrivileged"),
        ),
        (
            "added capability",
            with(json!({"capabilities": {"add": ["NET_ADMIN"]}})),
            DenyWith("HA-PRIV", "NET_ADMIN"),
        ),
        (
            "dropped capabilities",
            with(json!({"capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": true})),
            Allow,
        ),
    ];
    for (name, node, want) in cases {
        check(name, &create(node, &c), &want);
    }
    let privileged = with(json!({"privileged": true}));
    let relabelled = merge(
        privileged.clone(),
        json!({"metadata": {"labels": {"team": "x"}}}),
    );
    let v = update(privileged, relabelled, &c);
    assert!(
        !v.violations.iter().any(|x| x.rule == "HA-PRIV"),
        "an unchanged context is not judged again: {v:?}"
    );
}
