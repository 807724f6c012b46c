//! CREATE cases: shape rules GN-C1…GN-C21 and GN-K1…GN-K5.

use super::Want::{Allow, Deny, DenyWith, Warn};
use super::*;

fn name_of(len: usize) -> String {
    "n".repeat(len)
}

#[test]
fn create_table() {
    let c = ctx(vec![cluster()]);
    let reserved_label =
        json!({"spec": {"podLabels": {"garage.rajsingh.info/storage-group": "x"}}});
    let cases: Vec<(&str, Value, Want)> = vec![
        ("minimal managed storage node", storage_node(), Allow),
        (
            "remoteClusterRef",
            merge(
                external_node(),
                json!({"spec": {"external": {"remoteClusterRef": {"name": "x"}}}}),
            ),
            DenyWith("GN-C1", "remoteClusterRef is not supported"),
        ),
        (
            "LoadBalancer with externalIP block",
            merge(
                storage_node(),
                json!({"spec": {"publicEndpoint": {"type": "LoadBalancer", "externalIP": {}}}}),
            ),
            DenyWith("GN-C2", "externalIP is not supported"),
        ),
        (
            "NodePort without addresses",
            merge(
                storage_node(),
                json!({"spec": {"publicEndpoint": {"type": "NodePort", "nodePort": {"externalAddresses": []}}}}),
            ),
            DenyWith("GN-C2", "at least one externally reachable address"),
        ),
        (
            "Headless endpoint",
            merge(
                storage_node(),
                json!({"spec": {"publicEndpoint": {"type": "Headless"}}}),
            ),
            DenyWith("GN-C2", "Headless is not supported"),
        ),
        (
            "LoadBalancer with nodePort block",
            merge(
                storage_node(),
                json!({"spec": {"publicEndpoint": {"type": "LoadBalancer", "nodePort": {"externalAddresses": ["a"]}}}}),
            ),
            DenyWith("GN-C2", "only valid with type NodePort"),
        ),
        (
            "NodePort with addresses",
            merge(
                storage_node(),
                json!({"spec": {"publicEndpoint": {"type": "NodePort", "nodePort": {"externalAddresses": ["node-a.example"]}}}}),
            ),
            Allow,
        ),
        (
            "61-character managed name",
            merge(storage_node(), json!({"metadata": {"name": name_of(61)}})),
            Allow,
        ),
        (
            "62-character managed name",
            merge(storage_node(), json!({"metadata": {"name": name_of(62)}})),
            DenyWith("GN-C4", "maximum 61"),
        ),
        (
            "63-character external name",
            merge(external_node(), json!({"metadata": {"name": name_of(63)}})),
            Allow,
        ),
        (
            "64-character external name",
            merge(external_node(), json!({"metadata": {"name": name_of(64)}})),
            DenyWith("GN-C4", "maximum 63"),
        ),
        (
            "63-character pool member name",
            merge(pool_node(), json!({"metadata": {"name": name_of(63)}})),
            Allow,
        ),
        (
            "drain yes",
            merge(
                storage_node(),
                json!({"metadata": {"annotations": {"garage.rajsingh.info/drain": "yes"}}}),
            ),
            DenyWith("GN-C5", "must be \"true\""),
        ),
        (
            "drain on gateway",
            merge(
                gateway_node(),
                json!({"metadata": {"annotations": {"garage.rajsingh.info/drain": "true"}}}),
            ),
            DenyWith("GN-C5", "only valid on positive-capacity"),
        ),
        (
            "drain true on storage",
            merge(
                storage_node(),
                json!({"metadata": {"annotations": {"garage.rajsingh.info/drain": "true"}}}),
            ),
            Allow,
        ),
        (
            "cycle false",
            merge(
                storage_node(),
                json!({"metadata": {"annotations": {"garage.rajsingh.info/cycle": "false"}}}),
            ),
            Deny("GN-C6"),
        ),
        (
            "cycle on pool member",
            merge(
                pool_node(),
                json!({"metadata": {"annotations": {"garage.rajsingh.info/cycle": "true"}}}),
            ),
            DenyWith("GN-C6", "operator-generated node-local-pool member"),
        ),
        (
            "cycle on external",
            merge(
                external_node(),
                json!({"metadata": {"annotations": {"garage.rajsingh.info/cycle": "true"}}}),
            ),
            DenyWith("GN-C6", "external"),
        ),
        (
            "cycle on create",
            merge(
                storage_node(),
                json!({"metadata": {"annotations": {"garage.rajsingh.info/cycle": "true"}}}),
            ),
            DenyWith("GN-K2", "cannot be set when a GarageNode is created"),
        ),
        (
            "ack without drain",
            merge(
                storage_node(),
                json!({"metadata": {"annotations": {"garage.rajsingh.info/acknowledge-lost-source": id('a')}}}),
            ),
            DenyWith("GN-C7", "requires"),
        ),
        (
            "ack not an id",
            merge(
                storage_node(),
                json!({"metadata": {"annotations": {"garage.rajsingh.info/drain": "true", "garage.rajsingh.info/acknowledge-lost-source": "node-1"}}}),
            ),
            DenyWith("GN-C7", "exact lost Garage node ID"),
        ),
        (
            "ack equal to spec.nodeId",
            merge(
                storage_node(),
                json!({"metadata": {"annotations": {"garage.rajsingh.info/drain": "true", "garage.rajsingh.info/acknowledge-lost-source": id('A')}}, "spec": {"nodeId": id('a')}}),
            ),
            Warn("cannot recover blocks whose only copy"),
        ),
        (
            "ack differs from spec.nodeId",
            merge(
                storage_node(),
                json!({"metadata": {"annotations": {"garage.rajsingh.info/drain": "true", "garage.rajsingh.info/acknowledge-lost-source": id('b')}}, "spec": {"nodeId": id('a')}}),
            ),
            DenyWith("GN-K3", "same exact spec.nodeId"),
        ),
        (
            "recovery pin on pool member",
            merge(
                pool_node(),
                json!({"metadata": {"annotations": {"garage.rajsingh.info/node-local-pool-recovery-node-id": id('c')}}}),
            ),
            Allow,
        ),
        (
            "bad recovery pin",
            merge(
                pool_node(),
                json!({"metadata": {"annotations": {"garage.rajsingh.info/node-local-pool-recovery-node-id": "not-a-node-id"}}}),
            ),
            DenyWith("GN-C8", "exact retained HostPath"),
        ),
        (
            "recovery pin on ordinary node",
            merge(
                storage_node(),
                json!({"metadata": {"annotations": {"garage.rajsingh.info/node-local-pool-recovery-node-id": id('c')}}}),
            ),
            DenyWith("GN-C8", "only valid"),
        ),
        (
            "empty envFrom prefix",
            merge(
                storage_node(),
                json!({"spec": {"envFrom": [{"configMapRef": {"name": "cm"}}]}}),
            ),
            DenyWith("GN-C9", "could inject operator-reserved"),
        ),
        (
            "GARAGE_ envFrom prefix",
            merge(
                storage_node(),
                json!({"spec": {"envFrom": [{"prefix": "GARAGE_", "secretRef": {"name": "s"}}]}}),
            ),
            DenyWith("GN-C9", "envFrom[0].prefix"),
        ),
        (
            "GARAGE_ADMIN_TOKEN envFrom prefix",
            merge(
                storage_node(),
                json!({"spec": {"envFrom": [{"prefix": "GARAGE_ADMIN_TOKEN"}]}}),
            ),
            Deny("GN-C9"),
        ),
        (
            "CUSTOM_ envFrom prefix",
            merge(
                storage_node(),
                json!({"spec": {"envFrom": [{"prefix": "CUSTOM_", "configMapRef": {"name": "cm"}}]}}),
            ),
            Allow,
        ),
        (
            "non-reserved GARAGE_ variable",
            merge(
                storage_node(),
                json!({"spec": {"env": [{"name": "GARAGE_ALLOW_WORLD_READABLE_SECRETS", "value": "true"}]}}),
            ),
            Allow,
        ),
        (
            "257 env entries",
            merge(
                storage_node(),
                json!({"spec": {"env": (0..257).map(|i| json!({"name": format!("V{i}"), "value": "x"})).collect::<Vec<_>>()}}),
            ),
            DenyWith("GN-C9", "at most 256"),
        ),
        (
            "reserved pod label",
            merge(storage_node(), reserved_label),
            DenyWith("GN-C10", "operator-managed"),
        ),
        (
            "invalid pod label key",
            merge(
                storage_node(),
                json!({"spec": {"podLabels": {"bad key": "x"}}}),
            ),
            DenyWith("GN-C10", "invalid key"),
        ),
        (
            "empty clusterRef.name",
            merge(
                storage_node(),
                json!({"spec": {"clusterRef": {"name": ""}}}),
            ),
            DenyWith("GN-C11", "clusterRef.name is required"),
        ),
        (
            "kubeConfigSecretRef",
            merge(
                storage_node(),
                json!({"spec": {"clusterRef": {"kubeConfigSecretRef": {"name": "kc", "key": "config"}}}}),
            ),
            DenyWith("GN-C12", "kubeConfigSecretRef is not supported"),
        ),
        (
            "invalid clusterRef.name",
            merge(
                storage_node(),
                json!({"spec": {"clusterRef": {"name": "Bad_Cluster"}}}),
            ),
            DenyWith("GN-C12", "\"Bad_Cluster\" is invalid"),
        ),
        (
            "invalid clusterRef.namespace",
            merge(
                storage_node(),
                json!({"spec": {"clusterRef": {"namespace": "Bad_Namespace"}}}),
            ),
            DenyWith("GN-C12", "\"Bad_Namespace\" is invalid"),
        ),
        (
            "cross-namespace clusterRef",
            merge(
                storage_node(),
                json!({"spec": {"clusterRef": {"namespace": "other"}}}),
            ),
            DenyWith("GN-C13", "not permitted"),
        ),
        (
            "same namespace given explicitly",
            merge(
                storage_node(),
                json!({"spec": {"clusterRef": {"namespace": NS}}}),
            ),
            Allow,
        ),
        (
            "empty zone",
            merge(storage_node(), json!({"spec": {"zone": ""}})),
            DenyWith("GN-C14", "zone is required"),
        ),
        (
            "canonical cluster and tier tags",
            merge(
                storage_node(),
                json!({"spec": {"tags": ["cluster:garage/garage", "tier:storage", "rack:a", "media:nvme"]}}),
            ),
            Allow,
        ),
        (
            "forged cluster tag",
            merge(
                storage_node(),
                json!({"spec": {"tags": ["cluster:other/ns"]}}),
            ),
            DenyWith("GN-C15", "uses operator-managed prefix"),
        ),
        (
            "cluster-uid tag",
            merge(
                storage_node(),
                json!({"spec": {"tags": ["cluster-uid:forged"]}}),
            ),
            Deny("GN-C15"),
        ),
        (
            "rpc-address tag",
            merge(
                storage_node(),
                json!({"spec": {"tags": ["rpc-address:other.example:3901"]}}),
            ),
            Deny("GN-C15"),
        ),
        (
            "gateway tier tag on storage node",
            merge(storage_node(), json!({"spec": {"tags": ["tier:gateway"]}})),
            Deny("GN-C15"),
        ),
        (
            "canonical pool tags",
            merge(
                pool_node(),
                json!({"spec": {"tags": ["node-local-pool:local-700", "kubernetes-node:worker-a"]}}),
            ),
            Allow,
        ),
        (
            "forged pool tag",
            merge(
                pool_node(),
                json!({"spec": {"tags": ["node-local-pool:other"]}}),
            ),
            Deny("GN-C15"),
        ),
        (
            "kubernetes-node tag on ordinary node",
            merge(
                storage_node(),
                json!({"spec": {"tags": ["kubernetes-node:worker-9"]}}),
            ),
            Deny("GN-C15"),
        ),
        (
            "valid zoneFrom",
            merge(
                storage_node(),
                json!({"spec": {"zoneFrom": {"nodeLabel": "topology.kubernetes.io/zone"}}}),
            ),
            Allow,
        ),
        (
            "zoneFrom bad key",
            merge(
                storage_node(),
                json!({"spec": {"zoneFrom": {"nodeLabel": "bad key"}}}),
            ),
            DenyWith("GN-C16", "is not a valid label key"),
        ),
        (
            "zoneFrom on external",
            merge(
                external_node(),
                json!({"spec": {"zoneFrom": {"nodeLabel": "topology.kubernetes.io/zone"}}}),
            ),
            DenyWith("GN-C16", "not valid on external nodes"),
        ),
        (
            "zoneFrom on gateway",
            merge(
                gateway_node(),
                json!({"spec": {"zoneFrom": {"nodeLabel": "topology.kubernetes.io/zone"}}}),
            ),
            Warn("zoneFrom on a gateway node"),
        ),
        (
            "storage node without capacity",
            merge(storage_node(), json!({"spec": {"capacity": null}})),
            DenyWith("GN-C17", "capacity is required for storage nodes"),
        ),
        (
            "external storage node without capacity",
            merge(external_node(), json!({"spec": {"capacity": null}})),
            Deny("GN-C17"),
        ),
        (
            "gateway with metadata only, no capacity",
            gateway_node(),
            Allow,
        ),
        (
            "gateway with capacity",
            merge(gateway_node(), json!({"spec": {"capacity": "1Ti"}})),
            Warn("will be ignored for gateway nodes"),
        ),
        (
            "invalid nodeId",
            merge(storage_node(), json!({"spec": {"nodeId": "abc"}})),
            DenyWith("GN-C18", "64-character hex"),
        ),
        (
            "nodeId pin on managed node",
            merge(storage_node(), json!({"spec": {"nodeId": id('a')}})),
            Warn("expected identity pin"),
        ),
        (
            "pool member without owner",
            merge(pool_node(), json!({"metadata": {"ownerReferences": null}})),
            DenyWith("GN-C19", "require a GarageCluster controller owner"),
        ),
        (
            "pool member owned by another kind",
            merge(
                pool_node(),
                json!({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": CLUSTER, "uid": "x", "controller": true}]}}),
            ),
            Deny("GN-C19"),
        ),
        (
            "pool member without kubernetesNodeName",
            merge(pool_node(), json!({"spec": {"kubernetesNodeName": null}})),
            DenyWith("GN-C19", "kubernetesNodeName is required"),
        ),
        (
            "pool member without pool name",
            merge(pool_node(), json!({"spec": {"nodeLocalPoolName": null}})),
            Deny("GN-C19"),
        ),
        (
            "pool member with nodeId",
            merge(pool_node(), json!({"spec": {"nodeId": id('a')}})),
            DenyWith("GN-C19", "must discover"),
        ),
        (
            "pool member with storage",
            merge(
                pool_node(),
                json!({"spec": {"storage": {"metadata": {"size": "1Gi"}}}}),
            ),
            Deny("GN-C19"),
        ),
        (
            "pool member that is external",
            merge(pool_node(), json!({"spec": {"external": {"address": "x"}}})),
            Deny("GN-C19"),
        ),
        (
            "pool member that is a gateway",
            merge(pool_node(), json!({"spec": {"gateway": true}})),
            Deny("GN-C19"),
        ),
        (
            "pool member with publicEndpoint",
            merge(
                pool_node(),
                json!({"spec": {"publicEndpoint": {"type": "LoadBalancer"}}}),
            ),
            Deny("GN-C19"),
        ),
        (
            "pool member with empty network",
            merge(pool_node(), json!({"spec": {"network": {}}})),
            DenyWith("GN-C19", "rpcPublicAddr must be non-empty"),
        ),
        (
            "pool member with rpcPublicAddr",
            merge(
                pool_node(),
                json!({"spec": {"network": {"rpcPublicAddr": "worker-a.example:3901"}}}),
            ),
            Allow,
        ),
        (
            "pool member with logging",
            merge(
                pool_node(),
                json!({"spec": {"logging": {"level": "debug"}}}),
            ),
            DenyWith("GN-C19", "configure spec.logging on the parent"),
        ),
        (
            "pool member with ignored image override",
            merge(
                pool_node(),
                json!({"spec": {"image": "dxflrs/garage:v2.1.0"}}),
            ),
            Warn("podTemplate"),
        ),
        (
            "external with kubernetesNodeName",
            merge(
                external_node(),
                json!({"spec": {"kubernetesNodeName": "w"}}),
            ),
            DenyWith("GN-C20", "only valid when backing is NodeLocalPool"),
        ),
        (
            "external without nodeId",
            merge(external_node(), json!({"spec": {"nodeId": null}})),
            DenyWith("GN-C20", "nodeId is required for external nodes"),
        ),
        (
            "external with storage",
            merge(
                external_node(),
                json!({"spec": {"storage": {"metadata": {"size": "1Gi"}}}}),
            ),
            Deny("GN-C20"),
        ),
        (
            "external with port 0",
            merge(external_node(), json!({"spec": {"external": {"port": 0}}})),
            Deny("GN-C20"),
        ),
        (
            "external gateway",
            merge(
                external_node(),
                json!({"spec": {"gateway": true, "capacity": null}}),
            ),
            Allow,
        ),
        (
            "managed node without storage",
            merge(storage_node(), json!({"spec": {"storage": null}})),
            DenyWith("GN-C21", "storage is required for managed nodes"),
        ),
        (
            "managed node with pool name",
            merge(storage_node(), json!({"spec": {"nodeLocalPoolName": "p"}})),
            Deny("GN-C21"),
        ),
    ];
    let count = cases.len();
    for (name, node, want) in cases {
        check(name, &create(node, &c), &want);
    }
    assert!(count >= 70);
}

#[test]
fn every_reserved_environment_name_is_refused() {
    let c = ctx(vec![cluster()]);
    for name in crate::admission::shared::env::RESERVED_ENV {
        let node = merge(
            storage_node(),
            json!({"spec": {"env": [{"name": name, "value": "x"}]}}),
        );
        check(
            name,
            &create(node, &c),
            &DenyWith("GN-C9", "is operator-reserved"),
        );
    }
}

#[test]
fn an_obsolete_backing_never_decodes() {
    // GN-C3 is enforced by the typed enum (and the CRD enum before it).
    let node = merge(storage_node(), json!({"spec": {"backing": "StoragePool"}}));
    assert!(serde_json::from_value::<GarageNode>(node).is_err());
}
