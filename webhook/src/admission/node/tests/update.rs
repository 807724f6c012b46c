//! UPDATE cases: GN-U1…GN-U12, cycle eligibility (GN-CY*, GN-DR) and the
//! node-local pool member behaviour.

use super::Want::{Allow, Deny, DenyWith, Warn};
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

fn image(node: Value) -> Value {
    merge(node, json!({"spec": {"image": "dxflrs/garage:v2.1.0"}}))
}

fn cycle(node: Value) -> Value {
    annotate(node, json!({"garage.rajsingh.info/cycle": "true"}))
}

#[test]
fn update_table() {
    let settled = ctx(vec![cluster()]);
    let long = |n: Value| merge(n, json!({"metadata": {"name": "n".repeat(62)}}));
    let env = |v: &str| json!({"spec": {"env": [{"name": "GARAGE_CONFIG_FILE", "value": v}]}});
    let big_env: Vec<Value> = (0..258)
        .map(|i| json!({"name": format!("V{i}"), "value": "x"}))
        .collect();
    let mut changed_env = big_env.clone();
    changed_env[0] = json!({"name": "V0", "value": "changed"});
    let legacy_labels =
        json!({"spec": {"podLabels": {"garage.rajsingh.info/storage-group": "x", "bad key": "v"}}});
    let recreated = ctx(vec![merge(
        cluster(),
        json!({"metadata": {"uid": "recreated"}}),
    )]);
    let retired = ctx(vec![merge(
        cluster(),
        json!({"spec": {"storage": {"nodeLocalPools": []}}}),
    )]);
    let pinned_pool = annotate(
        pool_node(),
        json!({"garage.rajsingh.info/node-local-pool-recovery-node-id": id('c')}),
    );
    let cases: Vec<(&str, Value, Value, &Context, Want)> = vec![
        (
            "finalizer-only update",
            storage_node(),
            with_finalizer(storage_node()),
            &settled,
            Allow,
        ),
        (
            "image change",
            storage_node(),
            image(storage_node()),
            &settled,
            Allow,
        ),
        (
            "spec change while a cycle is requested",
            cycle(storage_node()),
            image(cycle(storage_node())),
            &settled,
            DenyWith(
                "GN-U2",
                "cannot change while a cycle is requested or active",
            ),
        ),
        (
            "spec change while a cycle phase is recorded",
            merge(storage_node(), json!({"status": {"cyclePhase": "Syncing"}})),
            image(merge(
                storage_node(),
                json!({"status": {"cyclePhase": "Syncing"}}),
            )),
            &settled,
            Deny("GN-U2"),
        ),
        (
            "cycle removed after Draining with drain",
            merge(
                annotate(
                    storage_node(),
                    json!({"garage.rajsingh.info/cycle": "true", "garage.rajsingh.info/drain": "true"}),
                ),
                json!({"status": {"cyclePhase": "Draining"}}),
            ),
            merge(
                annotate(
                    storage_node(),
                    json!({"garage.rajsingh.info/drain": "true"}),
                ),
                json!({"status": {"cyclePhase": "Draining"}}),
            ),
            &settled,
            DenyWith(
                "GN-U3",
                "cannot be removed after the cycle entered Draining",
            ),
        ),
        (
            "drain set while a cycle is provisioning",
            merge(
                cycle(storage_node()),
                json!({"status": {"cyclePhase": "Provisioning"}}),
            ),
            merge(
                annotate(
                    cycle(storage_node()),
                    json!({"garage.rajsingh.info/drain": "true"}),
                ),
                json!({"status": {"cyclePhase": "Provisioning"}}),
            ),
            &settled,
            DenyWith("GN-CY4", "the cycle drains this node itself"),
        ),
        (
            "drain set by the cycle once Draining",
            merge(
                cycle(storage_node()),
                json!({"status": {"cyclePhase": "Draining"}}),
            ),
            merge(
                annotate(
                    cycle(storage_node()),
                    json!({"garage.rajsingh.info/drain": "true"}),
                ),
                json!({"status": {"cyclePhase": "Draining"}}),
            ),
            &settled,
            Allow,
        ),
        (
            "backing change",
            storage_node(),
            merge(
                storage_node(),
                json!({"spec": {"backing": "NodeLocalPool"}}),
            ),
            &settled,
            DenyWith("GN-U5", "backing is immutable"),
        ),
        (
            "gateway change",
            gateway_node(),
            merge(
                gateway_node(),
                json!({"spec": {"gateway": false, "capacity": "1Ti", "storage": {"data": {"size": "1Gi"}}}}),
            ),
            &settled,
            DenyWith("GN-U5", "gateway is immutable"),
        ),
        (
            "clusterRef change",
            storage_node(),
            merge(
                storage_node(),
                json!({"spec": {"clusterRef": {"name": "other"}}}),
            ),
            &settled,
            DenyWith("GN-U5", "clusterRef is immutable"),
        ),
        (
            "nodeId change",
            merge(storage_node(), json!({"spec": {"nodeId": id('a')}})),
            merge(storage_node(), json!({"spec": {"nodeId": id('b')}})),
            &settled,
            DenyWith("GN-U5", "nodeId is immutable"),
        ),
        (
            "nodeId case change is canonical",
            merge(storage_node(), json!({"spec": {"nodeId": id('a')}})),
            merge(storage_node(), json!({"spec": {"nodeId": id('A')}})),
            &settled,
            Allow,
        ),
        (
            "recovery pin removed",
            pinned_pool.clone(),
            pool_node(),
            &settled,
            DenyWith("GN-U5", "is immutable once set"),
        ),
        (
            "recovery pin kept",
            pinned_pool.clone(),
            with_finalizer(pinned_pool),
            &settled,
            Allow,
        ),
        (
            "external to managed",
            external_node(),
            merge(
                external_node(),
                json!({"spec": {"external": null, "storage": {"metadata": {"size": "1Gi"}, "data": {"size": "1Gi"}}}}),
            ),
            &settled,
            DenyWith("GN-U5", "external versus operator-managed"),
        ),
        (
            "pool member moved to another Kubernetes Node",
            pool_node(),
            merge(
                pool_node(),
                json!({"spec": {"kubernetesNodeName": "worker-b"}}),
            ),
            &settled,
            DenyWith("GN-U5", "kubernetesNodeName is immutable"),
        ),
        (
            "pool member moved to another pool",
            pool_node(),
            merge(pool_node(), json!({"spec": {"nodeLocalPoolName": "other"}})),
            &settled,
            DenyWith("GN-U5", "nodeLocalPoolName is immutable"),
        ),
        (
            "62-character name, finalizer only",
            long(storage_node()),
            with_finalizer(long(storage_node())),
            &settled,
            Warn("metadata.name is grandfathered"),
        ),
        (
            "62-character name, image change",
            long(storage_node()),
            image(long(storage_node())),
            &settled,
            DenyWith("GN-U6", "workload-rendering spec changes require a shorter"),
        ),
        (
            "62-character name, deleting",
            long(storage_node()),
            image(merge(
                long(storage_node()),
                json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}),
            )),
            &settled,
            Allow,
        ),
        (
            "unchanged legacy labels",
            merge(storage_node(), legacy_labels.clone()),
            with_finalizer(merge(storage_node(), legacy_labels.clone())),
            &settled,
            Warn("unchanged legacy operator-managed labels"),
        ),
        (
            "unchanged legacy invalid label",
            merge(storage_node(), legacy_labels.clone()),
            with_finalizer(merge(storage_node(), legacy_labels.clone())),
            &settled,
            Warn("unchanged legacy invalid labels"),
        ),
        (
            "reserved label value changed",
            merge(storage_node(), legacy_labels.clone()),
            merge(
                storage_node(),
                json!({"spec": {"podLabels": {"garage.rajsingh.info/storage-group": "y", "bad key": "v"}}}),
            ),
            &settled,
            DenyWith("GN-U7", "cannot be introduced or changed"),
        ),
        (
            "invalid label value changed",
            merge(storage_node(), legacy_labels.clone()),
            merge(
                storage_node(),
                json!({"spec": {"podLabels": {"garage.rajsingh.info/storage-group": "x", "bad key": "w"}}}),
            ),
            &settled,
            Deny("GN-U7"),
        ),
        (
            "legacy labels replaced by a normal one",
            merge(storage_node(), legacy_labels),
            merge(
                storage_node(),
                json!({"spec": {"podLabels": {"team": "storage"}}}),
            ),
            &settled,
            Allow,
        ),
        (
            "reserved env kept unchanged",
            merge(storage_node(), env("/etc/x")),
            with_finalizer(merge(storage_node(), env("/etc/x"))),
            &settled,
            Warn("the operator ignores them"),
        ),
        (
            "reserved env value changed",
            merge(storage_node(), env("/etc/x")),
            merge(storage_node(), env("/etc/y")),
            &settled,
            DenyWith("GN-U8", "byte-for-byte unchanged"),
        ),
        (
            "reserved env removed",
            merge(storage_node(), env("/etc/x")),
            merge(storage_node(), json!({"spec": {"env": []}})),
            &settled,
            Allow,
        ),
        (
            "reserved env introduced",
            storage_node(),
            merge(storage_node(), env("/etc/x")),
            &settled,
            Deny("GN-U8"),
        ),
        (
            "258 env entries, metadata update",
            merge(storage_node(), json!({"spec": {"env": big_env.clone()}})),
            with_finalizer(merge(
                storage_node(),
                json!({"spec": {"env": big_env.clone()}}),
            )),
            &settled,
            Warn("non-expanding"),
        ),
        (
            "258 env entries, one mutated",
            merge(storage_node(), json!({"spec": {"env": big_env}})),
            merge(storage_node(), json!({"spec": {"env": changed_env}})),
            &settled,
            DenyWith("GN-U8", "may only shrink"),
        ),
        (
            "legacy kubeConfigSecretRef, spec unchanged",
            merge(
                storage_node(),
                json!({"spec": {"clusterRef": {"kubeConfigSecretRef": {"name": "kc", "key": "k"}}}}),
            ),
            with_finalizer(merge(
                storage_node(),
                json!({"spec": {"clusterRef": {"kubeConfigSecretRef": {"name": "kc", "key": "k"}}}}),
            )),
            &settled,
            Allow,
        ),
        (
            "legacy kubeConfigSecretRef, spec changed",
            merge(
                storage_node(),
                json!({"spec": {"clusterRef": {"kubeConfigSecretRef": {"name": "kc", "key": "k"}}}}),
            ),
            image(merge(
                storage_node(),
                json!({"spec": {"clusterRef": {"kubeConfigSecretRef": {"name": "kc", "key": "k"}}}}),
            )),
            &settled,
            Deny("GN-C12"),
        ),
        (
            "ack changed once set",
            annotate(
                running(storage_node()),
                json!({"garage.rajsingh.info/drain": "true", "garage.rajsingh.info/acknowledge-lost-source": id('a')}),
            ),
            annotate(
                running(storage_node()),
                json!({"garage.rajsingh.info/drain": "true", "garage.rajsingh.info/acknowledge-lost-source": id('b')}),
            ),
            &settled,
            DenyWith("GN-U11", "one-way and immutable once set"),
        ),
        (
            "ack names another identity",
            annotate(
                running(storage_node()),
                json!({"garage.rajsingh.info/drain": "true"}),
            ),
            annotate(
                running(storage_node()),
                json!({"garage.rajsingh.info/drain": "true", "garage.rajsingh.info/acknowledge-lost-source": id('b')}),
            ),
            &settled,
            DenyWith("GN-U11", "exact known status.nodeId or spec.nodeId"),
        ),
        (
            "ack names status.nodeId",
            running(storage_node()),
            annotate(
                running(storage_node()),
                json!({"garage.rajsingh.info/drain": "true", "garage.rajsingh.info/acknowledge-lost-source": id('a')}),
            ),
            &settled,
            Allow,
        ),
        (
            "pool member whose parent changed UID",
            pool_node(),
            with_finalizer(pool_node()),
            &recreated,
            DenyWith("GN-U12", "owner UID does not match"),
        ),
        (
            "deleting pool member whose parent changed UID",
            merge(
                pool_node(),
                json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}),
            ),
            merge(
                pool_node(),
                json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": []}}),
            ),
            &recreated,
            Allow,
        ),
        (
            "retired pool keeps draining",
            pool_node(),
            annotate(pool_node(), json!({"garage.rajsingh.info/drain": "true"})),
            &retired,
            Allow,
        ),
        (
            "pool label edited",
            pool_node(),
            merge(
                pool_node(),
                json!({"metadata": {"labels": {"garage.rajsingh.info/node-local-pool": "other"}}}),
            ),
            &settled,
            Warn("operator-managed output"),
        ),
    ];
    for (name, old, new, c, want) in cases {
        check(name, &update(old, new, c), &want);
    }
}

#[test]
fn parent_freeze_table() {
    let rolling_self = ctx(vec![rolling_cluster("n1")]);
    let rolling_other = ctx(vec![rolling_cluster("other")]);
    let draining_self = ctx(vec![merge(
        cluster(),
        json!({"status": {"storageDrain": node_drain(true)}}),
    )]);
    let drained_by_cluster = ctx(vec![merge(
        cluster(),
        json!({"status": {"storageDrain": cluster_drain()}}),
    )]);
    let drain = |n: Value| annotate(n, json!({"garage.rajsingh.info/drain": "true"}));
    let lost = |n: Value| {
        annotate(
            n,
            json!({"garage.rajsingh.info/drain": "true", "garage.rajsingh.info/acknowledge-lost-source": id('a')}),
        )
    };
    let vac = |n: Value, class: &str| {
        merge(
            n,
            json!({"spec": {"storage": {"data": {"volumeAttributesClassName": class}}}}),
        )
    };
    let cases: Vec<(&str, Value, Value, &Context, Want)> = vec![
        (
            "image change on another node during rollout",
            storage_node(),
            image(storage_node()),
            &rolling_other,
            DenyWith("GN-U4", "has status.storageRollout active"),
        ),
        (
            "image change on the rollout actor",
            storage_node(),
            image(storage_node()),
            &rolling_self,
            Allow,
        ),
        (
            "zone change on the rollout actor",
            storage_node(),
            merge(storage_node(), json!({"spec": {"zone": "dc2"}})),
            &rolling_self,
            Deny("GN-U4"),
        ),
        (
            "finalizer-only update during rollout",
            storage_node(),
            with_finalizer(storage_node()),
            &rolling_other,
            Allow,
        ),
        (
            "lost-source escalation of the rollout actor",
            running(storage_node()),
            lost(running(storage_node())),
            &rolling_self,
            Allow,
        ),
        (
            "drain without ack during rollout",
            running(storage_node()),
            drain(running(storage_node())),
            &rolling_self,
            Deny("GN-U4"),
        ),
        (
            "lost-source escalation of another node",
            running(storage_node()),
            lost(running(storage_node())),
            &rolling_other,
            Deny("GN-U4"),
        ),
        (
            "image change during a drain",
            storage_node(),
            image(storage_node()),
            &draining_self,
            DenyWith("GN-U4", "storageDrain transaction \"tx-1\""),
        ),
        (
            "lost-source escalation during own drain",
            drain(running(storage_node())),
            lost(running(storage_node())),
            &draining_self,
            Allow,
        ),
        (
            "drain annotation during the parent's own drain",
            running(storage_node()),
            drain(running(storage_node())),
            &drained_by_cluster,
            Deny("GN-U4"),
        ),
        (
            "VolumeAttributesClass change during rollout",
            vac(storage_node(), "gold"),
            vac(storage_node(), "silver"),
            &rolling_other,
            Allow,
        ),
        (
            "VolumeAttributesClass change while a cycle runs",
            cycle(vac(storage_node(), "gold")),
            cycle(vac(storage_node(), "silver")),
            &rolling_other,
            Allow,
        ),
    ];
    for (name, old, new, c, want) in cases {
        check(name, &update(old, new, c), &want);
    }
}
