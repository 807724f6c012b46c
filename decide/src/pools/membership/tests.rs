#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use super::*;

fn node(name: &str, labels: serde_json::Value) -> Node {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

fn pool(name: &str, selector: serde_json::Value) -> NodeLocalPoolSpec {
    serde_json::from_value(json!({
        "name": name, "capacity": "1Gi",
        "metadata": {"hostPath": "/m"}, "data": {"hostPath": "/d"},
        "selector": selector,
    }))
    .unwrap()
}

fn pod(uid: &str, ds: &str, target: &str, gated_: bool, bound: Option<&str>) -> Pod {
    let mut v = json!({
        "metadata": {"name": format!("p-{uid}"), "uid": uid, "ownerReferences": [{
            "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": ds, "controller": true
        }]},
        "spec": {
            "containers": [{"name": "garage", "image": "x"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [target]}]}]
            }}},
        },
    });
    if gated_ {
        v["spec"]["schedulingGates"] =
            json!([{"name": SCHEDULING_GATE_NODE_LOCAL_POOL_ACTIVATION}]);
    }
    if let Some(n) = bound {
        v["spec"]["nodeName"] = json!(n);
    }
    serde_json::from_value(v).unwrap()
}

#[test]
fn selectors_need_content_and_follow_kubernetes_operators() {
    let labels: BTreeMap<String, String> = [
        ("pool".to_string(), "a".to_string()),
        ("disk".to_string(), "ssd".to_string()),
    ]
    .into();
    let sel = |v: serde_json::Value| serde_json::from_value::<LabelSelector>(v).unwrap();
    assert!(!selects(None, &labels));
    assert!(
        !selects(Some(&sel(json!({}))), &labels),
        "an empty selector selects nothing"
    );
    assert!(selects(
        Some(&sel(json!({"matchLabels": {"pool": "a"}}))),
        &labels
    ));
    assert!(!selects(
        Some(&sel(json!({"matchLabels": {"pool": "b"}}))),
        &labels
    ));
    let expr = |op: &str, values: serde_json::Value| {
        sel(json!({"matchExpressions": [{"key": "disk", "operator": op, "values": values}]}))
    };
    assert!(selects(Some(&expr("In", json!(["ssd", "nvme"]))), &labels));
    assert!(!selects(Some(&expr("NotIn", json!(["ssd"]))), &labels));
    assert!(selects(Some(&expr("Exists", json!(null))), &labels));
    assert!(!selects(Some(&expr("DoesNotExist", json!(null))), &labels));
    assert!(!selects(Some(&expr("Gt", json!(["1"]))), &labels));
}

#[test]
fn a_node_two_pools_select_belongs_to_neither() {
    let nodes = vec![
        node("n1", json!({"pool": "a"})),
        node("n2", json!({"pool": "a", "fast": "yes"})),
        node("n3", json!({"pool": "b"})),
    ];
    let pools = vec![
        pool("a", json!({"matchLabels": {"pool": "a"}})),
        pool("fast", json!({"matchLabels": {"fast": "yes"}})),
        pool("empty", json!({"matchLabels": {"pool": "none"}})),
    ];
    let m = membership(&pools, &nodes);
    assert_eq!(m.members["a"], vec!["n1".to_string()]);
    assert!(m.members["fast"].is_empty());
    assert!(
        m.members["empty"].is_empty(),
        "a pool matching nothing is still listed"
    );
    assert_eq!(m.conflicts["n2"], vec!["a".to_string(), "fast".to_string()]);
}

#[test]
fn a_gate_is_lifted_only_for_the_current_daemonset_on_an_active_free_node() {
    let key = "garage.rajsingh.info/gc-x-node-local-pool-y";
    let nodes = vec![node("n1", json!({key: "true"})), node("n2", json!({}))];
    let selected = vec!["n1".to_string(), "n2".to_string()];
    let current = pod("p1", "ds-2", "n1", true, None);
    fn check<'a>(
        key: &'a str,
        selected: &'a [String],
        nodes: &'a [Node],
        pods: &'a [Pod],
    ) -> GateCheck<'a> {
        GateCheck {
            daemonset_uid: "ds-2",
            activation: (key, "true"),
            selected,
            nodes,
            pool_pods: pods,
        }
    }
    assert_eq!(
        may_release(
            &current,
            &check(key, &selected, &nodes, std::slice::from_ref(&current))
        ),
        Ok(())
    );
    // A late pod of a retired DaemonSet keeps its gate.
    let old = pod("p0", "ds-1", "n1", true, None);
    assert!(
        may_release(
            &old,
            &check(key, &selected, &nodes, std::slice::from_ref(&old))
        )
        .unwrap_err()
        .contains("current DaemonSet")
    );
    // An older pod still running on that Node fences the new one.
    let running = pod("p0", "ds-1", "n1", false, Some("n1"));
    assert!(
        may_release(
            &current,
            &check(key, &selected, &nodes, &[current.clone(), running])
        )
        .unwrap_err()
        .contains("still exists")
    );
    // No activation on the Node, or the Node left the selection: stays gated.
    let on_n2 = pod("p2", "ds-2", "n2", true, None);
    assert!(
        may_release(
            &on_n2,
            &check(key, &selected, &nodes, std::slice::from_ref(&on_n2))
        )
        .unwrap_err()
        .contains("activation")
    );
    let only_current = [current.clone()];
    let narrowed = check(key, &[], &nodes, &only_current);
    assert!(
        may_release(&current, &narrowed)
            .unwrap_err()
            .contains("no longer selected")
    );
}
