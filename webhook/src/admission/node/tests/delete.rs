//! DELETE cases: GN-D1…GN-D8 and the owner's readiness (GN-DR).

use super::Want::{Allow, Deny, DenyWith};
use super::*;
use crate::admission::Review;
use k8s_openapi::api::core::v1::Pod;

fn drained(n: Value) -> Value {
    merge(
        running(n),
        json!({"metadata": {"annotations": {"garage.rajsingh.info/drain": "true"}}}),
    )
}

fn with_drain(cluster: Value, drain: Value) -> Value {
    merge(cluster, json!({"status": {"storageDrain": drain}}))
}

fn deleting(cluster: Value) -> Value {
    merge(
        cluster,
        json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}),
    )
}

fn foreground(mut c: Context) -> Context {
    c.delete_options =
        Some(serde_json::from_value(json!({"propagationPolicy": "Foreground"})).unwrap());
    c
}

fn pod(name: &str, labels: Value, node: &str) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": NS, "labels": labels}, "spec": {"containers": [], "nodeName": node}})).unwrap()
}

#[test]
fn a_delete_without_the_stored_object_is_allowed() {
    let review: Review<'_, GarageNode> = Review {
        operation: crate::admission::Operation::Delete,
        old: None,
        new: None,
    };
    assert!(validate_node(review, &ctx(vec![])).allowed());
}

#[test]
fn delete_table() {
    let prepared = ctx(vec![with_drain(cluster(), node_drain(false))]);
    let lost_ctx = |pods: Vec<Pod>| {
        let mut c = ctx(vec![with_drain(cluster(), node_drain(true))]);
        c.pods = pods;
        c
    };
    let lost_node = merge(
        drained(storage_node()),
        json!({"metadata": {"annotations": {"garage.rajsingh.info/acknowledge-lost-source": id('a')}}}),
    );
    let pool_labels = json!({"garage.rajsingh.info/cluster": CLUSTER, "garage.rajsingh.info/tier": "storage", "garage.rajsingh.info/node-local-pool": "local-700"});
    let lost_pool = merge(
        drained(pool_node()),
        json!({"metadata": {"name": "n1", "annotations": {"garage.rajsingh.info/acknowledge-lost-source": id('a')}}}),
    );
    let no_completion = with_drain(
        cluster(),
        merge(node_drain(false), json!({"completedAt": null})),
    );
    let corrupt = with_drain(
        cluster(),
        merge(node_drain(false), json!({"targetHash": "sha256:corrupt"})),
    );
    let other_actor = with_drain(
        cluster(),
        merge(
            node_drain(false),
            json!({"actor": {"name": "n2", "uid": "other"}}),
        ),
    );
    let destroy = deleting(merge(
        cluster(),
        json!({"spec": {"deletionPolicy": "Destroy"}}),
    ));
    let prepared_not_in_layout = merge(
        storage_node(),
        json!({"metadata": {"annotations": {"garage.rajsingh.info/drain": "true"}}, "status": {"conditions": [{"type": "DrainPrepared", "status": "True", "reason": "PreparedNotInLayout", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1}]}}),
    );
    let federated = with_drain(
        merge(
            cluster(),
            json!({"spec": {"remoteClusters": [{"name": "b", "zone": "b", "connection": {"adminApiEndpoint": "http://b:3903"}}]}}),
        ),
        node_drain(false),
    );
    let federated_assumed = merge(
        federated.clone(),
        json!({"spec": {"layoutManagement": {"drain": {"unverifiedPeersPolicy": "AssumeConsistent"}}}}),
    );
    let unhealthy = with_drain(
        merge(
            cluster(),
            json!({"status": {"health": {"storageNodesOk": 2}}}),
        ),
        node_drain(false),
    );
    let mut with_external_sibling = ctx(vec![with_drain(cluster(), node_drain(false))]);
    with_external_sibling.garage_nodes = vec![gn(merge(
        external_node(),
        json!({"metadata": {"name": "ext"}}),
    ))];
    let loop_a = json!({"metadata": {"name": "a", "namespace": NS}, "spec": {"gateway": {"replicas": 1}, "connectTo": {"clusterRef": {"name": "b"}}}});
    let loop_b = json!({"metadata": {"name": "b", "namespace": NS}, "spec": {"gateway": {"replicas": 1}, "connectTo": {"clusterRef": {"name": "a"}}}});
    let cases: Vec<(&str, Value, Context, Want)> = vec![
        (
            "unprepared storage node",
            storage_node(),
            ctx(vec![cluster()]),
            DenyWith("GN-D7", "prepared operation"),
        ),
        (
            "storage node without parent",
            storage_node(),
            ctx(vec![]),
            DenyWith("GN-D2", "parent GarageCluster garage/garage is absent"),
        ),
        ("gateway without parent", gateway_node(), ctx(vec![]), Allow),
        (
            "empty clusterRef name",
            merge(
                storage_node(),
                json!({"spec": {"clusterRef": {"name": ""}}}),
            ),
            ctx(vec![]),
            Allow,
        ),
        (
            "cyclic owner chain",
            merge(
                storage_node(),
                json!({"spec": {"clusterRef": {"name": "a"}}}),
            ),
            ctx(vec![loop_a, loop_b]),
            DenyWith("GN-D3", "resolving canonical Garage layout owner"),
        ),
        (
            "parent replacing a pod",
            drained(storage_node()),
            ctx(vec![rolling_cluster("other")]),
            DenyWith(
                "GN-D4",
                "cannot be deleted while GarageCluster garage/garage is replacing managed pod UID old-pod",
            ),
        ),
        (
            "prepared drain",
            drained(storage_node()),
            prepared.clone(),
            Allow,
        ),
        (
            "prepared drain, foreground",
            drained(storage_node()),
            foreground(prepared.clone()),
            DenyWith("GN-D7", "unsafe for a positive-capacity GarageNode"),
        ),
        (
            "drain annotation missing",
            running(storage_node()),
            prepared.clone(),
            DenyWith("GN-D5", "drain is not prepared for deletion"),
        ),
        (
            "drain record without completedAt",
            drained(storage_node()),
            ctx(vec![no_completion]),
            DenyWith("GN-D5", "terminal drain preparation is invalid"),
        ),
        (
            "corrupt target hash",
            drained(storage_node()),
            ctx(vec![corrupt]),
            DenyWith("GN-D5", "targetHash"),
        ),
        (
            "drain owned by another node",
            drained(storage_node()),
            ctx(vec![other_actor]),
            DenyWith("GN-D5", "is owned by GarageNode garage/n2"),
        ),
        (
            "drain with no known identity",
            merge(drained(storage_node()), json!({"status": {"nodeId": null}})),
            prepared.clone(),
            DenyWith("GN-D5", "no trusted exact identity"),
        ),
        (
            "node in another incarnation",
            merge(
                drained(storage_node()),
                json!({"metadata": {"uid": "recreated"}}),
            ),
            prepared.clone(),
            Deny("GN-D5"),
        ),
        (
            "lost source, pod gone",
            lost_node.clone(),
            lost_ctx(vec![]),
            Allow,
        ),
        (
            "lost source, pod still exists",
            lost_node.clone(),
            lost_ctx(vec![pod("n1-0", json!({}), "worker-a")]),
            DenyWith("GN-D7", "still exists"),
        ),
        (
            "lost source without acknowledgement",
            drained(storage_node()),
            lost_ctx(vec![]),
            DenyWith("GN-D5", "acknowledge-lost-source does not name it"),
        ),
        (
            "lost pool source, pod on its Node",
            lost_pool.clone(),
            lost_ctx(vec![pod("pool-xyz", pool_labels.clone(), "worker-a")]),
            DenyWith("GN-D7", "still runs on Kubernetes Node worker-a"),
        ),
        (
            "lost pool source, pod on another Node",
            lost_pool,
            lost_ctx(vec![pod("pool-abc", pool_labels, "worker-b")]),
            Allow,
        ),
        (
            "parent Destroy deletion cascades, foreground",
            storage_node(),
            foreground(ctx(vec![destroy])),
            Allow,
        ),
        (
            "parent terminal Drain, foreground",
            storage_node(),
            foreground(ctx(vec![deleting(with_drain(cluster(), cluster_drain()))])),
            Allow,
        ),
        (
            "parent terminal Drain with corrupt token",
            storage_node(),
            ctx(vec![with_drain(
                cluster(),
                merge(cluster_drain(), json!({"targetHash": "sha256:corrupt"})),
            )]),
            DenyWith(
                "GN-D5",
                "parent GarageCluster terminal drain preparation is invalid",
            ),
        ),
        (
            "prepared without layout",
            prepared_not_in_layout.clone(),
            ctx(vec![cluster()]),
            Allow,
        ),
        (
            "prepared without layout, foreground",
            prepared_not_in_layout,
            foreground(ctx(vec![cluster()])),
            Deny("GN-D7"),
        ),
        (
            "gateway, foreground, parent live",
            gateway_node(),
            foreground(ctx(vec![cluster()])),
            DenyWith("GN-D6", "managed gateway GarageNode"),
        ),
        (
            "gateway, background",
            gateway_node(),
            ctx(vec![cluster()]),
            Allow,
        ),
        (
            "gateway, foreground, parent deleting",
            gateway_node(),
            foreground(ctx(vec![deleting(cluster())])),
            Allow,
        ),
        (
            "federated parent without AssumeConsistent",
            drained(storage_node()),
            ctx(vec![federated]),
            DenyWith("GN-D7", "AssumeConsistent"),
        ),
        (
            "federated parent with AssumeConsistent",
            drained(storage_node()),
            ctx(vec![federated_assumed]),
            Allow,
        ),
        (
            "external sibling without AssumeConsistent",
            drained(storage_node()),
            with_external_sibling,
            Deny("GN-D7"),
        ),
        (
            "owner not fully healthy",
            drained(storage_node()),
            ctx(vec![unhealthy]),
            DenyWith("GN-DR", "every storage node up"),
        ),
    ];
    for (name, node, c, want) in cases {
        check(name, &delete(node, &c), &want);
    }
}
