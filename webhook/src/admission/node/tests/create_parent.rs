//! CREATE cases that depend on the parent: GN-K4 (live owner) and GN-K5
//! (the layout owner's rollout and drain fence).

use super::Want::{Allow, Deny, DenyWith};
use super::*;

#[test]
fn create_parent_table() {
    let pool_undeclared = merge(pool_node(), json!({"spec": {"nodeLocalPoolName": "other"}}));
    let forged_uid = merge(
        pool_node(),
        json!({"metadata": {"ownerReferences": [{"apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageCluster", "name": CLUSTER, "uid": "forged", "controller": true}]}}),
    );
    let edge = json!({
        "metadata": {"name": "edge", "namespace": NS, "uid": "edge-uid"},
        "spec": {"gateway": {"replicas": 1}, "connectTo": {"clusterRef": {"name": CLUSTER}}}
    });
    let loop_a = json!({"metadata": {"name": "a", "namespace": NS}, "spec": {"gateway": {"replicas": 1}, "connectTo": {"clusterRef": {"name": "b"}}}});
    let loop_b = json!({"metadata": {"name": "b", "namespace": NS}, "spec": {"gateway": {"replicas": 1}, "connectTo": {"clusterRef": {"name": "a"}}}});
    let on_edge = |n: Value| merge(n, json!({"spec": {"clusterRef": {"name": "edge"}}}));
    let on_a = merge(
        gateway_node(),
        json!({"spec": {"clusterRef": {"name": "a"}}}),
    );
    let rolling_by_condition = merge(
        cluster(),
        json!({"status": {"conditions": [{"type": "StorageRolloutReady", "status": "False", "reason": "RollingOut", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}),
    );
    let draining = merge(
        cluster(),
        json!({"status": {"storageDrain": node_drain(false)}}),
    );
    let cases: Vec<(&str, Value, Context, Want)> = vec![
        (
            "pool member of the live parent",
            pool_node(),
            ctx(vec![cluster()]),
            Allow,
        ),
        (
            "pool member with forged owner UID",
            forged_uid,
            ctx(vec![cluster()]),
            DenyWith("GN-K4", "owner UID does not match"),
        ),
        (
            "pool member of an undeclared pool",
            pool_undeclared,
            ctx(vec![cluster()]),
            DenyWith("GN-K4", "is not declared"),
        ),
        (
            "pool member without live parent",
            pool_node(),
            ctx(vec![]),
            DenyWith(
                "GN-K4",
                "verifying node-local-pool-backed GarageNode parent",
            ),
        ),
        (
            "ordinary node without parent",
            storage_node(),
            ctx(vec![]),
            Allow,
        ),
        (
            "parent replacing a pod",
            storage_node(),
            ctx(vec![rolling_cluster("other")]),
            DenyWith("GN-K5", "is replacing managed pod UID old-pod"),
        ),
        (
            "parent rolling out by condition",
            storage_node(),
            ctx(vec![rolling_by_condition]),
            DenyWith("GN-K5", "an unknown previous pod UID"),
        ),
        (
            "parent draining",
            storage_node(),
            ctx(vec![draining]),
            DenyWith("GN-K5", "storage-drain transaction \"tx-1\""),
        ),
        (
            "edge gateway whose owner rolls out",
            on_edge(gateway_node()),
            ctx(vec![edge.clone(), rolling_cluster("other")]),
            Deny("GN-K5"),
        ),
        (
            "edge gateway of a settled owner",
            on_edge(gateway_node()),
            ctx(vec![edge, cluster()]),
            Allow,
        ),
        (
            "cyclic connectTo chain",
            on_a,
            ctx(vec![loop_a, loop_b]),
            DenyWith("GN-K5", "cyclic GarageCluster connectTo.clusterRef chain"),
        ),
    ];
    for (name, node, c, want) in cases {
        check(name, &create(node, &c), &want);
    }
}
