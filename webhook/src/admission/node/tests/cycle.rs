//! Cycle start cases: GN-U10 with GN-CY0…GN-CY2 and GN-DR.

use super::Want::{Allow, Deny, DenyWith};
use super::*;

fn annotate(node: Value, annotations: Value) -> Value {
    merge(node, json!({"metadata": {"annotations": annotations}}))
}

fn with_finalizer(node: Value) -> Value {
    merge(
        node,
        json!({"metadata": {"finalizers": ["garagenode.garage.rajsingh.info/finalizer"]}}),
    )
}

fn cycle(node: Value) -> Value {
    annotate(node, json!({"garage.rajsingh.info/cycle": "true"}))
}

#[test]
fn cycle_start_table() {
    let ready = ctx(vec![cluster()]);
    let source = running(storage_node());
    let start = |n: Value| (n.clone(), cycle(n));
    let degraded = ctx(vec![merge(
        cluster(),
        json!({"spec": {"replication": {"consistencyMode": "degraded"}}}),
    )]);
    let partial = ctx(vec![merge(
        cluster(),
        json!({"status": {"health": {"partitionsAllOk": 255}}}),
    )]);
    let stale_condition = ctx(vec![merge(
        cluster(),
        json!({"metadata": {"generation": 4}}),
    )]);
    let parent_gateway_addr = ctx(vec![merge(
        cluster(),
        json!({"spec": {"gateway": {"replicas": 1, "rpcPublicAddr": "gw.example:3901"}}}),
    )]);
    let handle = json!({"metadata": {"name": CLUSTER, "namespace": NS, "generation": 2}, "spec": {"connectTo": {"adminApiEndpoint": "http://garage:3903"}}, "status": {"conditions": [{"type": "ManagementHandleReady", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 2}]}});
    let handle_ctx = ctx(vec![handle]);
    let absent = ctx(vec![]);
    let nodeport = json!({"spec": {"publicEndpoint": {"type": "NodePort", "nodePort": {"externalAddresses": ["a"]}}}});
    let cases: Vec<(&str, Value, &Context, Want)> = vec![
        // An eligible start is admitted; the cluster controller carries it out.
        ("dynamic PVC source", source.clone(), &ready, Allow),
        (
            "EmptyDir source",
            merge(
                source.clone(),
                json!({"spec": {"storage": {"data": {"type": "EmptyDir", "size": null}}}}),
            ),
            &ready,
            Allow,
        ),
        (
            "management-handle owner that is ready",
            source.clone(),
            &handle_ctx,
            Allow,
        ),
        (
            "gateway source",
            running(merge(
                gateway_node(),
                json!({"spec": {"storage": {"metadata": {"size": "1Gi"}}}}),
            )),
            &ready,
            DenyWith("GN-CY0", "gateway identities are not supported"),
        ),
        (
            "metadata existingClaim",
            merge(
                source.clone(),
                json!({"spec": {"storage": {"metadata": {"existingClaim": "meta", "size": null}}}}),
            ),
            &ready,
            DenyWith("GN-CY0", "storage.metadata.existingClaim"),
        ),
        (
            "data existingClaim",
            merge(
                source.clone(),
                json!({"spec": {"storage": {"data": {"existingClaim": "data", "size": null}}}}),
            ),
            &ready,
            DenyWith("GN-CY0", "storage.data.existingClaim"),
        ),
        (
            "dataPath existingClaim",
            merge(
                source.clone(),
                json!({"spec": {"storage": {"data": null, "dataPaths": [{"size": "1Gi"}, {"existingClaim": "hdd"}]}}}),
            ),
            &ready,
            DenyWith("GN-CY0", "storage.dataPaths[1].existingClaim"),
        ),
        (
            "fixed rpcPublicAddr",
            merge(
                source.clone(),
                json!({"spec": {"network": {"rpcPublicAddr": "n1.example:3901"}}}),
            ),
            &ready,
            DenyWith("GN-CY0", "distinct RPC endpoint"),
        ),
        (
            "NodePort endpoint",
            merge(source.clone(), nodeport),
            &ready,
            DenyWith("GN-CY0", "publicEndpoint handoff"),
        ),
        (
            "no observed pod UID",
            merge(source.clone(), json!({"status": {"observedPodUid": ""}})),
            &ready,
            DenyWith("GN-CY1", "observedPodUid"),
        ),
        (
            "disconnected",
            merge(source.clone(), json!({"status": {"connected": false}})),
            &ready,
            DenyWith("GN-CY1", "connected and committed"),
        ),
        (
            "not in layout",
            merge(source.clone(), json!({"status": {"inLayout": false}})),
            &ready,
            DenyWith("GN-CY1", "connected and committed"),
        ),
        (
            "stale generation",
            merge(source.clone(), json!({"metadata": {"generation": 2}})),
            &ready,
            DenyWith("GN-CY1", "stale"),
        ),
        (
            "draining source",
            annotate(
                source.clone(),
                json!({"garage.rajsingh.info/drain": "true"}),
            ),
            &ready,
            Deny("GN-CY1"),
        ),
        (
            "parent gateway rpcPublicAddr",
            source.clone(),
            &parent_gateway_addr,
            DenyWith("GN-CY2", "parent gateway.rpcPublicAddr"),
        ),
        (
            "owner consistency degraded",
            source.clone(),
            &degraded,
            DenyWith(
                "GN-DR",
                "requires parent spec.replication.consistencyMode: consistent",
            ),
        ),
        (
            "owner partitions not all OK",
            source.clone(),
            &partial,
            DenyWith("GN-DR", "fully replicated"),
        ),
        (
            "owner condition at an older generation",
            source.clone(),
            &stale_condition,
            DenyWith("GN-DR", "StorageRolloutReady=True at generation 4"),
        ),
        (
            "parent absent",
            source.clone(),
            &absent,
            DenyWith("GN-U10", "layout owner is absent"),
        ),
    ];
    for (name, node, c, want) in cases {
        let (old, new) = start(node);
        check(name, &update(old, new, c), &want);
    }
    // An ordinary metadata update of an existingClaim node stays allowed.
    let claim_node = merge(
        source,
        json!({"spec": {"storage": {"metadata": {"existingClaim": "meta", "size": null}}}}),
    );
    check(
        "existingClaim node metadata update",
        &update(claim_node.clone(), with_finalizer(claim_node), &ready),
        &Allow,
    );
}
