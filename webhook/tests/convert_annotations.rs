//! The reserved transport annotations and the 256 KiB budget (CONV-9).

// A failed expectation in a test is the test failing; panics are the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use shared_types::garage_cluster::v1beta2;
use support::*;
use webhook::convert::annotations::{
    ANNOTATION_V1BETA2_GATEWAY_TIER as GATEWAY, ANNOTATION_V1BETA2_NODE_LOCAL_POOLS as POOLS,
    ANNOTATION_V1BETA2_ONLY as ONLY, TOTAL_ANNOTATION_SIZE_LIMIT, annotations_size,
    check_annotation_budget, projected_v1beta1_annotation_size,
};
use webhook::convert::{ConvertError, to_v1beta1, to_v1beta2};

/// Names of a prototype that was never released; they must stay inert.
const OBSOLETE_POOLS: &str = "garage.rajsingh.info/v1beta2-storage-pools";
const OBSOLETE_MARKER: &str = "storage-pools-present";

fn pools_spec(pools: Value) -> Value {
    json!({"storage": {"replicas": 3, "metadata": volume("1Gi", "m"), "data": volume("1Ti", "d"),
        "nodeLocalPools": pools}})
}

/// (case, hub spec, existing annotations, expected marker, gateway payload?, pools payload?)
type Case = (
    &'static str,
    Value,
    Option<Value>,
    Option<&'static str>,
    bool,
    bool,
);

#[test]
fn which_shapes_get_which_annotations() {
    let rich_edge = json!({"connectTo": {"clusterRef": {"name": "g"}}, "gateway": {"replicas": 1,
        "env": [{"name": "A", "value": "1"}]}});
    let mut unified_pools = unified_spec();
    unified_pools["storage"]["nodeLocalPools"] = json!([pool("a")]);
    let cases: Vec<Case> = vec![
        (
            "storage without pools",
            json!({"storage": {"replicas": 3}}),
            None,
            None,
            false,
            false,
        ),
        (
            "empty pool list",
            pools_spec(json!([])),
            None,
            None,
            false,
            false,
        ),
        (
            "plain edge gateway",
            plain_edge_spec(),
            None,
            None,
            false,
            false,
        ),
        (
            "management handle",
            json!({"connectTo": {"clusterRef": {"name": "g"}}}),
            None,
            None,
            false,
            false,
        ),
        (
            "rich edge gateway",
            rich_edge,
            None,
            Some("gateway-tier-present"),
            true,
            false,
        ),
        (
            "unified",
            unified_spec(),
            None,
            Some("gateway-tier-present"),
            true,
            false,
        ),
        (
            "pools",
            pools_spec(json!([pool("a")])),
            None,
            Some("node-local-pools-present"),
            false,
            true,
        ),
        (
            "unified + pools: gateway first",
            unified_pools.clone(),
            None,
            Some("gateway-tier-present,node-local-pools-present"),
            true,
            true,
        ),
        (
            "user components are kept",
            unified_pools.clone(),
            Some(json!({ONLY: "mine"})),
            Some("mine,gateway-tier-present,node-local-pools-present"),
            true,
            true,
        ),
        (
            "a marker already present is not repeated",
            unified_spec(),
            Some(json!({ONLY: "gateway-tier-present,mine"})),
            Some("mine,gateway-tier-present"),
            true,
            false,
        ),
        (
            "stale payloads on the hub are not shown",
            json!({"storage": {"replicas": 1}}),
            Some(json!({GATEWAY: "{}", POOLS: "[]", ONLY: "gateway-tier-present"})),
            None,
            false,
            false,
        ),
    ];
    for (case, spec, existing, marker, gateway, pools) in cases {
        let view = to_v1beta1(hub_with(spec, existing)).expect(case);
        let annotations = annotations_of(&view.metadata);
        assert_eq!(
            annotations.get(ONLY).map(String::as_str),
            marker,
            "{case}: marker"
        );
        assert_eq!(
            annotations.contains_key(GATEWAY),
            gateway,
            "{case}: gateway payload"
        );
        assert_eq!(
            annotations.contains_key(POOLS),
            pools,
            "{case}: pools payload"
        );
    }
}

#[test]
fn payloads_restore_and_leave_no_trace_on_the_hub() {
    let mut spec = unified_spec();
    spec["storage"]["nodeLocalPools"] = json!([pool("a"), pool("b")]);
    let original = hub_with(spec, Some(json!({"keep": "me", ONLY: "mine"})));
    let view = to_v1beta1(original.clone()).unwrap();
    let gateway_payload: Value =
        serde_json::from_str(&annotations_of(&view.metadata)[GATEWAY]).unwrap();
    assert_eq!(
        gateway_payload,
        to_json(&original.spec.gateway),
        "the whole GatewaySpec travels"
    );
    let back = to_v1beta2(view).unwrap();
    assert_eq!(to_json(&back), to_json(&original));
    assert_eq!(
        annotations_of(&back.metadata),
        [
            ("keep".to_owned(), "me".to_owned()),
            (ONLY.to_owned(), "mine".to_owned())
        ]
        .into()
    );
}

#[test]
fn restore_errors_name_the_problem() {
    let pools_payload = to_json(&vec![pool("a")]).to_string();
    let gateway_payload = json!({"replicas": 2, "env": [{"name": "A"}]}).to_string();
    // (case, v1beta1 spec, annotations, expected message fragment)
    let cases: Vec<(&str, Value, Value, &str)> = vec![
        (
            "pools payload is not JSON",
            json!({"replicas": 1}),
            json!({POOLS: "not json", ONLY: "node-local-pools-present"}),
            "restore node-local pools from annotation",
        ),
        (
            "pools on a view changed to a gateway",
            json!({"replicas": 1, "gateway": true, "connectTo": {"clusterRef": {"name": "g"}}}),
            json!({POOLS: pools_payload, ONLY: "node-local-pools-present"}),
            "no longer contains a storage tier",
        ),
        (
            "pools on a view changed to a handle",
            json!({"replicas": 0, "connectTo": {"clusterRef": {"name": "g"}}}),
            json!({POOLS: pools_payload}),
            "no longer contains a storage tier",
        ),
        (
            "gateway payload is not a GatewaySpec",
            json!({"replicas": 1}),
            json!({GATEWAY: "[1]", ONLY: "gateway-tier-present"}),
            "restore the gateway tier from annotation",
        ),
        (
            "gateway payload on a handle view",
            json!({"replicas": 0, "connectTo": {"clusterRef": {"name": "g"}}}),
            json!({GATEWAY: gateway_payload}),
            "contains neither an edge gateway",
        ),
    ];
    for (case, spec, annotations, fragment) in cases {
        let err = to_v1beta2(spoke_with(spec, Some(annotations))).expect_err(case);
        let message = err.to_string();
        assert!(message.contains(fragment), "{case}: {message}");
    }
}

#[test]
fn obsolete_prototype_names_create_no_pools() {
    let view = spoke_with(
        json!({"replicas": 3, "storage": {"metadata": volume("1Gi", "m"), "data": volume("1Ti", "d")}}),
        Some(json!({OBSOLETE_POOLS: to_json(&vec![pool("a")]).to_string(), ONLY: OBSOLETE_MARKER})),
    );
    let hub = to_v1beta2(view).unwrap();
    let storage = hub.spec.storage.as_ref().unwrap();
    assert_eq!(storage.node_local_pools, None);
    // Not ours, so kept as any user annotation would be.
    assert_eq!(annotations_of(&hub.metadata)[ONLY], OBSOLETE_MARKER);
    let back = to_v1beta1(hub).unwrap();
    assert!(!annotations_of(&back.metadata).contains_key(POOLS));
}

#[test]
fn empty_payloads_restore_nothing_and_are_removed() {
    let view = spoke_with(
        json!({"replicas": 1}),
        Some(json!({GATEWAY: "", POOLS: ""})),
    );
    let hub = to_v1beta2(view).unwrap();
    assert_eq!(hub.spec.gateway, None);
    assert_eq!(hub.metadata.annotations, None);
}

/// A hub with a gateway and an annotation padded so the projection is exactly `target` bytes.
fn padded_hub(spec: Value, target: usize) -> v1beta2::GarageCluster {
    let probe = hub_with(spec.clone(), Some(json!({"pad": ""})));
    let base = projected_v1beta1_annotation_size(&probe).unwrap();
    assert!(base <= target);
    hub_with(spec, Some(json!({"pad": "x".repeat(target - base)})))
}

#[test]
fn budget_accepts_the_exact_limit_and_refuses_one_byte_more() {
    let mut spec = unified_spec();
    spec["storage"]["nodeLocalPools"] = json!([pool("a")]);
    for (shape, spec) in [("unified + pools", spec), ("plain edge", plain_edge_spec())] {
        let at_limit = padded_hub(spec.clone(), TOTAL_ANNOTATION_SIZE_LIMIT);
        assert_eq!(
            check_annotation_budget(&at_limit).unwrap(),
            TOTAL_ANNOTATION_SIZE_LIMIT,
            "{shape}"
        );
        let over = padded_hub(spec, TOTAL_ANNOTATION_SIZE_LIMIT + 1);
        let err = check_annotation_budget(&over).unwrap_err();
        assert!(
            matches!(err, ConvertError::AnnotationBudget { size, limit } if size == limit + 1),
            "{shape}: {err}"
        );
    }
}

#[test]
fn conversion_accepts_the_exact_limit_and_refuses_one_byte_more() {
    let mut spec = unified_spec();
    spec["storage"]["nodeLocalPools"] = json!([pool("a")]);
    // For a unified cluster with pools the projection is exact: both payloads are written.
    let at_limit = padded_hub(spec.clone(), TOTAL_ANNOTATION_SIZE_LIMIT);
    let view = to_v1beta1(at_limit).expect("the exact limit converts");
    assert_eq!(
        annotations_size(&annotations_of(&view.metadata)),
        TOTAL_ANNOTATION_SIZE_LIMIT
    );
    let over = padded_hub(spec, TOTAL_ANNOTATION_SIZE_LIMIT + 1);
    let err = to_v1beta1(over).unwrap_err();
    assert!(err.to_string().contains("262145 bytes"), "{err}");
}

#[test]
fn budget_rules() {
    // Nothing to carry: 0, however large the other annotations are.
    let plain = hub_with(
        json!({"storage": {"replicas": 1}}),
        Some(json!({"big": "x".repeat(300_000)})),
    );
    assert_eq!(projected_v1beta1_annotation_size(&plain).unwrap(), 0);

    // A plain edge gateway counts its payload although none is written (conservative).
    let edge = hub(plain_edge_spec());
    let payload = to_json(&edge.spec.gateway).to_string();
    let want = GATEWAY.len() + payload.len() + ONLY.len() + "gateway-tier-present".len();
    assert_eq!(projected_v1beta1_annotation_size(&edge).unwrap(), want);

    // An existing marker list is augmented, not counted twice; payload keys on the hub are skipped.
    let existing = hub_with(
        plain_edge_spec(),
        Some(json!({ONLY: "gateway-tier-present", GATEWAY: "stale"})),
    );
    assert_eq!(projected_v1beta1_annotation_size(&existing).unwrap(), want);
    let user = hub_with(plain_edge_spec(), Some(json!({ONLY: "mine"})));
    assert_eq!(
        projected_v1beta1_annotation_size(&user).unwrap(),
        want + "mine,".len()
    );
}
