//! The drift comparison on each kind the operator patches, with the live objects shaped as the
//! API server returns them: defaults filled in, quantities canonical, empty values dropped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::first_difference;

/// A live object: `body` with server metadata around it and `status`.
fn live(mut body: Value, status: Value) -> Value {
    let object = body.as_object_mut().unwrap();
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .unwrap();
    metadata.insert("uid".into(), json!("0b6a"));
    metadata.insert("resourceVersion".into(), json!("4242"));
    metadata.insert(
        "managedFields".into(),
        json!([{"manager": "garage-reconciler"}]),
    );
    object.insert("status".into(), status);
    body
}

fn set(value: &mut Value, pointer: &str, to: Value) {
    *value.pointer_mut(pointer).expect(pointer) = to;
}

fn remove(value: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    value
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .expect(parent)
        .remove(&key.replace("~1", "/"))
        .expect(pointer);
}

fn metadata() -> Value {
    json!({
        "labels": {"app.kubernetes.io/instance": "garage", "garage.rajsingh.info/cluster": "garage"},
        "annotations": {"garage.rajsingh.info/rendered-hash": "9f2c"},
    })
}

fn service_patch() -> Value {
    json!({
        "metadata": metadata(),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": true,
            "selector": {"garage.rajsingh.info/cluster": "garage"},
            "ports": [{"name": "rpc", "port": 3901, "targetPort": 3901}],
        },
    })
}

fn service_live() -> Value {
    let mut l = live(service_patch(), json!({"loadBalancer": {}}));
    let spec = l["spec"].as_object_mut().unwrap();
    spec.insert("clusterIPs".into(), json!(["None"]));
    spec.insert("type".into(), json!("ClusterIP"));
    spec.insert("sessionAffinity".into(), json!("None"));
    spec.insert("ipFamilies".into(), json!(["IPv4"]));
    l["spec"]["ports"][0]["protocol"] = json!("TCP");
    l["metadata"]["labels"]["added-by-someone-else"] = json!("kept");
    l["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = json!("{}");
    l
}

#[test]
fn a_service_as_the_api_server_returns_it_holds_its_patch() {
    assert_eq!(first_difference(&service_patch(), &service_live()), None);
}

#[test]
fn a_service_field_or_label_changed_by_hand_is_found_by_its_path() {
    let mut l = service_live();
    set(&mut l, "/spec/ports/0/name", json!("renamed"));
    assert_eq!(
        first_difference(&service_patch(), &l).as_deref(),
        Some("spec.ports[0].name")
    );
    let mut l = service_live();
    set(&mut l, "/spec/publishNotReadyAddresses", json!(false));
    assert_eq!(
        first_difference(&service_patch(), &l).as_deref(),
        Some("spec.publishNotReadyAddresses")
    );
    let mut l = service_live();
    remove(&mut l, "/metadata/labels/garage.rajsingh.info~1cluster");
    assert_eq!(
        first_difference(&service_patch(), &l).as_deref(),
        Some("metadata.labels.garage.rajsingh.info/cluster")
    );
    let mut l = service_live();
    l["spec"]["ports"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "extra", "port": 1}));
    assert_eq!(
        first_difference(&service_patch(), &l).as_deref(),
        Some("spec.ports")
    );
}

/// The StatefulSet patch: only the fields that may change (claim templates and the selector
/// are immutable and never in it).
fn statefulset_patch() -> Value {
    json!({
        "metadata": metadata(),
        "spec": {
            "replicas": 1,
            "updateStrategy": {"type": "OnDelete"},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            "template": {
                "metadata": {"creationTimestamp": null, "labels": {"garage.rajsingh.info/node": "garage-storage-0"}},
                "spec": {
                    "hostNetwork": false,
                    "containers": [{
                        "name": "garage",
                        "image": "dxflrs/garage:v2.1.0",
                        "args": [],
                        "resources": {"requests": {"cpu": "0.5", "memory": "1024Mi"}},
                        "volumeMounts": [{"name": "meta", "mountPath": "/var/lib/garage/meta"}],
                    }],
                    "volumes": [{"name": "tmp", "emptyDir": {}}],
                },
            },
        },
    })
}

fn statefulset_live() -> Value {
    let mut l = live(
        statefulset_patch(),
        json!({"replicas": 1, "readyReplicas": 1}),
    );
    let spec = &mut l["spec"];
    spec["selector"] = json!({"matchLabels": {"garage.rajsingh.info/node": "garage-storage-0"}});
    spec["volumeClaimTemplates"] =
        json!([{"metadata": {"name": "meta"}, "spec": {"volumeMode": "Filesystem"}}]);
    spec["podManagementPolicy"] = json!("OrderedReady");
    let pod = &mut spec["template"]["spec"];
    pod.as_object_mut().unwrap().remove("hostNetwork");
    pod["dnsPolicy"] = json!("ClusterFirst");
    pod["schedulerName"] = json!("default-scheduler");
    pod["volumes"][0]["emptyDir"] = json!({});
    let container = &mut pod["containers"][0];
    container.as_object_mut().unwrap().remove("args");
    container["terminationMessagePath"] = json!("/dev/termination-log");
    container["imagePullPolicy"] = json!("IfNotPresent");
    container["resources"]["requests"] = json!({"cpu": "500m", "memory": "1Gi"});
    l
}

#[test]
fn a_statefulset_with_server_defaults_and_canonical_quantities_holds_its_patch() {
    assert_eq!(
        first_difference(&statefulset_patch(), &statefulset_live()),
        None
    );
}

#[test]
fn a_statefulset_field_changed_by_hand_is_found_but_an_immutable_one_is_not_asked_for() {
    let mut l = statefulset_live();
    set(
        &mut l,
        "/spec/template/spec/containers/0/image",
        json!("dxflrs/garage:v0.0.1"),
    );
    assert_eq!(
        first_difference(&statefulset_patch(), &l).as_deref(),
        Some("spec.template.spec.containers[0].image")
    );
    let mut l = statefulset_live();
    set(
        &mut l,
        "/spec/template/spec/containers/0/resources/requests/cpu",
        json!("2"),
    );
    assert_eq!(
        first_difference(&statefulset_patch(), &l).as_deref(),
        Some("spec.template.spec.containers[0].resources.requests.cpu")
    );
    let mut l = statefulset_live();
    set(&mut l, "/spec/updateStrategy/type", json!("RollingUpdate"));
    assert_eq!(
        first_difference(&statefulset_patch(), &l).as_deref(),
        Some("spec.updateStrategy.type")
    );
    // The claim templates cannot be patched, so a difference there asks for nothing.
    let mut l = statefulset_live();
    set(
        &mut l,
        "/spec/volumeClaimTemplates/0/spec/volumeMode",
        json!("Block"),
    );
    assert_eq!(first_difference(&statefulset_patch(), &l), None);
}

fn pdb_patch() -> Value {
    json!({
        "metadata": metadata(),
        "spec": {
            "maxUnavailable": 1,
            "selector": {"matchLabels": {"garage.rajsingh.info/cluster": "garage"}},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
    })
}

#[test]
fn a_disruption_budget_raised_by_hand_is_found() {
    let l = live(
        pdb_patch(),
        json!({"currentHealthy": 3, "disruptionsAllowed": 1}),
    );
    assert_eq!(first_difference(&pdb_patch(), &l), None);
    let mut l = l;
    set(&mut l, "/spec/maxUnavailable", json!(3));
    assert_eq!(
        first_difference(&pdb_patch(), &l).as_deref(),
        Some("spec.maxUnavailable")
    );
    // A percentage is another value, not another spelling.
    set(&mut l, "/spec/maxUnavailable", json!("1"));
    assert_eq!(
        first_difference(&pdb_patch(), &l).as_deref(),
        Some("spec.maxUnavailable")
    );
}

fn network_policy_patch() -> Value {
    json!({
        "metadata": metadata(),
        "spec": {
            "podSelector": {"matchLabels": {"garage.rajsingh.info/cluster": "garage"}},
            "policyTypes": ["Ingress"],
            "ingress": [
                {"ports": [{"port": 3900}, {"port": 3902}]},
                {"from": [{"podSelector": {"matchLabels": {"garage.rajsingh.info/cluster": "garage"}}}], "ports": [{"port": 3901}]},
            ],
        },
    })
}

#[test]
fn a_network_policy_opened_by_hand_is_found() {
    let mut l = live(network_policy_patch(), Value::Null);
    for port in l["spec"]["ingress"][0]["ports"].as_array_mut().unwrap() {
        port["protocol"] = json!("TCP");
    }
    assert_eq!(first_difference(&network_policy_patch(), &l), None);
    l["spec"]["ingress"][1]
        .as_object_mut()
        .unwrap()
        .remove("from");
    assert_eq!(
        first_difference(&network_policy_patch(), &l).as_deref(),
        Some("spec.ingress[1].from")
    );
}

fn daemonset_patch() -> Value {
    json!({
        "metadata": metadata(),
        "spec": {
            "updateStrategy": {"type": "OnDelete"},
            "template": {"spec": {"volumes": [
                {"name": "meta", "hostPath": {"path": "/srv/garage/meta", "type": "DirectoryOrCreate"}},
                {"name": "data-0", "hostPath": {"path": "/srv/garage/data", "type": "Directory"}},
            ]}},
        },
    })
}

#[test]
fn a_pool_daemonset_mount_moved_by_hand_is_found() {
    let l = live(daemonset_patch(), json!({"numberReady": 3}));
    assert_eq!(first_difference(&daemonset_patch(), &l), None);
    let mut l = l;
    set(
        &mut l,
        "/spec/template/spec/volumes/1/hostPath/path",
        json!("/elsewhere"),
    );
    assert_eq!(
        first_difference(&daemonset_patch(), &l).as_deref(),
        Some("spec.template.spec.volumes[1].hostPath.path")
    );
}

fn garage_node_patch() -> Value {
    json!({
        "metadata": {
            "labels": {"garage.rajsingh.info/auto-node-slot": "0", "garage.rajsingh.info/tier": "storage"},
            "annotations": null,
        },
        "spec": {
            "clusterRef": {"name": "garage"},
            "zone": "zone-a",
            "capacity": "1Gi",
            "gateway": false,
        },
    })
}

#[test]
fn a_generated_garage_node_keeps_its_slot_label_and_its_fields() {
    let mut l = live(garage_node_patch(), json!({"nodeId": "ab12"}));
    l["spec"]["capacity"] = json!("1073741824");
    l["spec"].as_object_mut().unwrap().remove("gateway");
    assert_eq!(first_difference(&garage_node_patch(), &l), None);
    let mut drifted = l.clone();
    set(
        &mut drifted,
        "/metadata/labels/garage.rajsingh.info~1auto-node-slot",
        json!("drifted"),
    );
    assert_eq!(
        first_difference(&garage_node_patch(), &drifted).as_deref(),
        Some("metadata.labels.garage.rajsingh.info/auto-node-slot")
    );
    let mut drifted = l;
    set(&mut drifted, "/spec/zone", json!("zone-b"));
    assert_eq!(
        first_difference(&garage_node_patch(), &drifted).as_deref(),
        Some("spec.zone")
    );
}

#[test]
fn a_value_is_never_part_of_the_answer() {
    let patch = json!({"spec": {"env": [{"name": "TOKEN", "value": "s3cr3t"}]}});
    let l = json!({"spec": {"env": [{"name": "TOKEN", "value": "other"}]}});
    let found = first_difference(&patch, &l).unwrap();
    assert_eq!(found, "spec.env[0].value");
    assert!(!found.contains("s3cr3t") && !found.contains("other"));
}

#[test]
fn quantities_compare_by_amount_and_other_strings_by_text() {
    for (a, b, same) in [
        ("1Gi", "1024Mi", true),
        ("0.5", "500m", true),
        ("1k", "1000", true),
        ("1e3", "1k", true),
        ("1Gi", "1G", false),
        ("100m", "100M", false),
        ("3901", "3900", false),
        ("zone-a", "zone-a ", false),
        ("", "0", false),
        ("-", "-", true),
    ] {
        let found = first_difference(&json!({"v": a}), &json!({"v": b}));
        assert_eq!(found.is_none(), same, "{a:?} against {b:?}");
    }
}
