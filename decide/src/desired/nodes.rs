//! One generated GarageNode per slot of the Auto default storage group,
//! and the shape of any GarageNode (managed or external).

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use shared_types::common::ClusterReference;
use shared_types::garage_cluster::common::VolumeConfig;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::{
    GarageNode, GarageNodeSpec, NodeBacking, NodeStorageConfig, NodeVolumeConfig,
};
use shared_types::keys::{annotation, label, tag};

use super::{DesiredError, Settings, controller_ref, data_dirs, labels, rendered_hash};
use crate::names;
use garage_api_types::NodeId;

/// The GarageNode of Auto slot `ordinal`.
pub fn auto_storage_node(
    c: &GarageCluster,
    s: &Settings,
    ordinal: u32,
) -> Result<GarageNode, DesiredError> {
    auto_storage_node_as(c, s, ordinal, &names::auto_storage_node(&s.name, ordinal))
}

/// The GarageNode that fills Auto slot `ordinal` under `name`: the slot's own name, or the
/// name of the sibling a cycle promoted into it (`<slot>-cycle`). Everything but the name and
/// the pod tag it implies is the slot's.
pub fn auto_storage_node_as(
    c: &GarageCluster,
    s: &Settings,
    ordinal: u32,
    name: &str,
) -> Result<GarageNode, DesiredError> {
    let name = name.to_owned();
    let slot = names::auto_storage_node(&s.name, ordinal);
    let storage = c.spec.storage.as_ref();
    let spec = GarageNodeSpec {
        zone_from: c.spec.zone_from.clone(),
        capacity: Some(Quantity(s.capacity.to_string())),
        storage: Some(NodeStorageConfig {
            metadata: storage.and_then(|st| st.metadata.as_ref()).map(node_volume),
            // With paths each directory is its own volume, as the shared garage.toml lists
            // them; the top-level volume only lends them its defaults.
            data: storage
                .and_then(|st| st.data.as_ref())
                .filter(|_| s.data_dirs.is_none())
                .map(node_volume),
            data_paths: storage
                .and_then(|st| st.data.as_ref())
                .filter(|_| s.data_dirs.is_some())
                .map(data_dirs::node_data_paths),
            ..Default::default()
        }),
        env: storage.and_then(|st| st.env.clone()),
        env_from: storage.and_then(|st| st.env_from.clone()),
        network: network(super::node_config::auto_rpc_public_addr(c, ordinal)),
        ..generated_spec(s, &name, c)
    };
    generated(
        c,
        s,
        &name,
        labels::generated_node_labels(&s.name, &slot),
        spec,
    )
}

/// What every generated node's spec starts from: its cluster, the cluster's zone, and the
/// cluster's default tags with its pod's name.
fn generated_spec(s: &Settings, name: &str, c: &GarageCluster) -> GarageNodeSpec {
    let mut tags = user_tags(c.spec.default_node_tags.as_deref().unwrap_or_default());
    tags.push(names::node_pod(name));
    GarageNodeSpec {
        cluster_ref: ClusterReference {
            name: s.name.clone(),
            ..Default::default()
        },
        zone: s.zone.clone(),
        tags: Some(tags),
        ..Default::default()
    }
}

/// `network.rpcPublicAddr` set to `addr`, when there is one.
fn network(addr: Option<String>) -> Option<shared_types::garage_node::NodeNetworkConfig> {
    addr.map(|addr| shared_types::garage_node::NodeNetworkConfig {
        rpc_public_addr: Some(addr),
    })
}

/// The generated GarageNode `name` with `spec`: controlled by the cluster, labelled, and
/// annotated with the hash of what it renders.
fn generated(
    c: &GarageCluster,
    s: &Settings,
    name: &str,
    labels: std::collections::BTreeMap<String, String>,
    spec: GarageNodeSpec,
) -> Result<GarageNode, DesiredError> {
    let annotations = std::collections::BTreeMap::from([(
        annotation::ANNOTATION_RENDERED_HASH.to_owned(),
        rendered_hash(&spec),
    )]);
    Ok(GarageNode {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(s.namespace.clone()),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![controller_ref(c)?]),
            ..Default::default()
        },
        spec,
        status: None,
    })
}

/// The GarageNode of generated gateway `ordinal` of a cluster with storage and gateway
/// tiers: capacity-less, its metadata claim from `spec.gateway.metadata` (1Gi by default),
/// its zone the cluster's (a gateway never takes one from a Node label: it would count toward
/// zone redundancy while storing nothing).
pub fn auto_gateway_node(
    c: &GarageCluster,
    s: &Settings,
    ordinal: u32,
) -> Result<GarageNode, DesiredError> {
    let name = names::auto_gateway_node(&s.name, ordinal);
    let gateway = c.spec.gateway.as_ref();
    let spec = GarageNodeSpec {
        gateway: Some(true),
        storage: Some(NodeStorageConfig {
            metadata: gateway
                .and_then(|g| g.metadata.as_ref())
                .map(node_volume)
                .map(gateway_metadata),
            ..Default::default()
        }),
        network: network(super::node_config::gateway_rpc_public_addr(c, ordinal)),
        ..generated_spec(s, &name, c)
    };
    let labels = labels::generated_tier_node_labels(&s.name, &name, label::value::TIER_GATEWAY);
    generated(c, s, &name, labels, spec)
}

/// A gateway's metadata volume with the default size written in when it names none (nor an
/// existing claim, nor an emptyDir): a GarageNode's volume must say what backs it.
fn gateway_metadata(mut v: NodeVolumeConfig) -> NodeVolumeConfig {
    let backed = v.size.is_some()
        || v.existing_claim.as_ref().is_some_and(|c| !c.is_empty())
        || v.type_ == Some(shared_types::common::VolumeType::EmptyDir);
    if !backed {
        v.size = Some(Quantity(
            super::statefulset::GATEWAY_METADATA_SIZE.to_owned(),
        ));
    }
    v
}

/// The ordinal of a generated gateway name of this cluster, if `node` is one.
pub fn gateway_ordinal(cluster: &str, node: &str) -> Option<u32> {
    let rest = node.strip_prefix(cluster)?.strip_prefix("-gateway-")?;
    let ordinal: u32 = rest.parse().ok()?;
    (names::auto_gateway_node(cluster, ordinal) == node).then_some(ordinal)
}

/// The ordinal of an Auto slot name of this cluster, if `node` is one.
pub fn auto_ordinal(cluster: &str, node: &str) -> Option<u32> {
    let rest = node.strip_prefix(cluster)?.strip_prefix("-storage-")?;
    let ordinal: u32 = rest.parse().ok()?;
    (names::auto_storage_node(cluster, ordinal) == node).then_some(ordinal)
}

/// The Auto slot a generated node of `cluster` fills: the slot its `auto-node-slot` label
/// names, else the one its name names once every `-cycle` suffix a cycle added is taken off.
/// A label naming no slot of this cluster (drifted, or written by hand) is not trusted.
pub fn slot_of(cluster: &str, node: &GarageNode) -> Option<u32> {
    let labelled = node
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(label::LABEL_AUTO_NODE_SLOT))
        .and_then(|slot| auto_ordinal(cluster, slot));
    labelled.or_else(|| {
        let name = node.metadata.name.as_deref()?;
        let mut base = name;
        while let Some(rest) = base.strip_suffix(CYCLE_SUFFIX) {
            base = rest;
        }
        auto_ordinal(cluster, base)
    })
}

/// What a cycle appends to its source's name to name the sibling.
pub const CYCLE_SUFFIX: &str = "-cycle";

/// True when `node` is an Auto storage node generated for the cluster with `uid`: controlled
/// by it and labelled as operator-generated. User-made GarageNodes never match.
pub fn is_generated_by(node: &GarageNode, uid: &str) -> bool {
    super::is_controlled_by(node, uid)
        && node.metadata.labels.as_ref().is_some_and(|l| {
            l.get(label::LABEL_APP_MANAGED_BY).map(String::as_str)
                == Some(label::value::MANAGED_BY_GENERATED_NODE)
        })
}

/// User tags with the operator's reserved prefixes removed (defense in depth: admission
/// rejects them, but a bypassed webhook must not let a user forge ownership tags).
pub fn user_tags(tags: &[String]) -> Vec<String> {
    tags.iter()
        .filter(|t| !tag::RESERVED_TAG_PREFIXES.iter().any(|p| t.starts_with(p)))
        .cloned()
        .collect()
}

fn node_volume(v: &VolumeConfig) -> NodeVolumeConfig {
    NodeVolumeConfig {
        access_modes: v.access_modes.clone(),
        annotations: v.annotations.clone(),
        labels: v.labels.clone(),
        selector: v.selector.clone(),
        size: v.size.clone(),
        storage_class_name: v.storage_class_name.clone(),
        type_: v.type_,
        volume_attributes_class_name: v.volume_attributes_class_name.clone(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desired::test_support::cluster;

    #[test]
    fn slot_nodes_copy_volumes_capacity_and_tags() {
        let mut c = cluster(3);
        c.spec.default_node_tags = Some(vec!["rack-1".into(), "cluster:forged".into()]);
        c.spec
            .storage
            .as_mut()
            .unwrap()
            .data
            .as_mut()
            .unwrap()
            .volume_attributes_class_name = Some("fast".into());
        let s = Settings::from_cluster(&c).unwrap();
        let n = auto_storage_node(&c, &s, 1).unwrap();
        assert_eq!(n.metadata.name.as_deref(), Some("garage-storage-1"));
        assert_eq!(n.spec.cluster_ref.name, "garage");
        assert_eq!(n.spec.zone, "default");
        assert_eq!(n.spec.capacity, Some(Quantity((1u64 << 30).to_string())));
        assert_eq!(
            n.spec.tags.as_deref(),
            Some(&["rack-1".to_owned(), "garage-storage-1-0".to_owned()][..])
        );
        let storage = n.spec.storage.as_ref().unwrap();
        let data = storage.data.as_ref().unwrap();
        assert_eq!(data.storage_class_name.as_deref(), Some("local-sim"));
        assert_eq!(data.volume_attributes_class_name.as_deref(), Some("fast"));
        assert!(is_generated_by(&n, "uid-1"));
        assert!(!is_generated_by(&n, "other"));
        let hash = &n.metadata.annotations.as_ref().unwrap()[annotation::ANNOTATION_RENDERED_HASH];
        let again = auto_storage_node(&c, &s, 1).unwrap();
        assert_eq!(
            hash,
            &again.metadata.annotations.unwrap()[annotation::ANNOTATION_RENDERED_HASH]
        );
    }

    #[test]
    fn slot_nodes_of_a_paths_cluster_carry_data_paths_and_the_summed_capacity() {
        let c = crate::desired::test_support::paths_cluster(1);
        let s = Settings::from_cluster(&c).unwrap();
        let n = auto_storage_node(&c, &s, 0).unwrap();
        // The layout role: 600Mi + 2Gi, the read-only directory adds nothing.
        let sum = (600u64 << 20) + (2 << 30);
        assert_eq!(n.spec.capacity, Some(Quantity(sum.to_string())));
        let storage = n.spec.storage.as_ref().unwrap();
        assert!(
            storage.data.is_none(),
            "data XOR dataPaths, as admission wants"
        );
        let paths = storage.data_paths.as_ref().unwrap();
        let got: Vec<(Option<&str>, Option<&str>, Option<bool>)> = paths
            .iter()
            .map(|p| {
                (
                    p.path.as_deref(),
                    p.volume_attributes_class_name.as_deref(),
                    p.read_only,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (Some("/data/fast"), Some("fast"), None),
                (Some("/data/slow"), Some("slow"), None),
                (Some("/data/old"), None, Some(true)),
            ]
        );
        assert_eq!(shape(&n), Ok(NodeShape::Managed));
    }

    #[test]
    fn gateway_nodes_are_capacity_less_with_a_metadata_claim_only() {
        let mut c = cluster(3);
        c.spec.gateway = Some(shared_types::garage_cluster::v1beta2::GatewaySpec {
            rpc_public_addr: Some("gw-{ordinal}.example.com:3901".into()),
            ..Default::default()
        });
        c.spec.zone_from = Some(shared_types::common::ZoneSource {
            node_label: "topology.kubernetes.io/zone".into(),
        });
        let s = Settings::from_cluster(&c).unwrap();
        let n = auto_gateway_node(&c, &s, 1).unwrap();
        assert_eq!(n.metadata.name.as_deref(), Some("garage-gateway-1"));
        assert!(is_gateway(&n));
        assert_eq!(n.spec.capacity, None);
        assert_eq!(n.spec.zone_from, None, "gateways keep the cluster zone");
        let storage = n.spec.storage.as_ref().unwrap();
        assert!(storage.data.is_none() && storage.data_paths.is_none());
        assert_eq!(
            n.spec.network.clone().unwrap().rpc_public_addr.as_deref(),
            Some("gw-1.example.com:3901")
        );
        assert!(is_generated_by(&n, "uid-1"));
        assert_eq!(
            n.metadata.labels.clone().unwrap()[label::LABEL_TIER],
            label::value::TIER_GATEWAY
        );
        assert_eq!(gateway_ordinal("garage", "garage-gateway-1"), Some(1));
        // A class alone gets the default size, as admission wants a backing named.
        c.spec.gateway.as_mut().unwrap().metadata = Some(VolumeConfig {
            storage_class_name: Some("fast".into()),
            ..Default::default()
        });
        let g = auto_gateway_node(&c, &s, 0).unwrap();
        let metadata = g.spec.storage.unwrap().metadata.unwrap();
        assert_eq!(metadata.size, Some(Quantity("1Gi".into())));
        assert_eq!(metadata.storage_class_name.as_deref(), Some("fast"));
        assert_eq!(gateway_ordinal("garage", "garage-storage-1"), None);
        assert_eq!(gateway_ordinal("garage", "garage-gateway-01"), None);
        assert_eq!(shape(&n), Ok(NodeShape::Managed));
    }

    #[test]
    fn ordinals_round_trip() {
        assert_eq!(auto_ordinal("g", "g-storage-12"), Some(12));
        assert_eq!(auto_ordinal("g", "g-storage-01"), None);
        assert_eq!(auto_ordinal("g", "h-storage-1"), None);
        assert_eq!(auto_ordinal("g", "g-gateway-1"), None);
    }

    #[test]
    fn a_slot_is_read_from_its_label_then_from_the_name_a_cycle_extended() {
        let node = |name: &str, slot: Option<&str>| GarageNode {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: slot
                    .map(|s| [(label::LABEL_AUTO_NODE_SLOT.to_owned(), s.to_owned())].into()),
                ..Default::default()
            },
            spec: GarageNodeSpec::default(),
            status: None,
        };
        let cases = [
            ("g-storage-1", None, Some(1)),
            ("g-storage-1-cycle", Some("g-storage-1"), Some(1)),
            ("g-storage-1-cycle-cycle", None, Some(1)),
            // The label wins over the name; a label naming no slot of this cluster does not.
            ("g-storage-1-cycle", Some("g-storage-2"), Some(2)),
            ("g-storage-1-cycle", Some("drifted"), Some(1)),
            ("g-storage-1-cycle", Some("h-storage-2"), Some(1)),
            ("renamed", Some("drifted"), None),
            ("g-storage-1-cyclex", None, None),
        ];
        for (name, slot, want) in cases {
            assert_eq!(slot_of("g", &node(name, slot)), want, "{name} {slot:?}");
        }
    }

    #[test]
    fn a_promoted_sibling_is_rendered_under_its_own_name_with_its_slot_label() {
        let c = cluster(3);
        let s = Settings::from_cluster(&c).unwrap();
        let n = auto_storage_node_as(&c, &s, 1, "garage-storage-1-cycle").unwrap();
        assert_eq!(n.metadata.name.as_deref(), Some("garage-storage-1-cycle"));
        assert_eq!(
            n.metadata.labels.as_ref().unwrap()[label::LABEL_AUTO_NODE_SLOT],
            "garage-storage-1"
        );
        assert!(
            n.spec
                .tags
                .as_ref()
                .unwrap()
                .contains(&"garage-storage-1-cycle-0".to_owned()),
            "the pod tag is the sibling's own pod"
        );
        assert!(is_generated_by(&n, "uid-1"));
    }
}

/// How the operator runs a GarageNode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeShape {
    /// A one-replica StatefulSet with its own volumes.
    Managed,
    /// The member of a node-local pool on one Kubernetes Node: its pod belongs to the pool's
    /// DaemonSet and its volumes are that Node's HostPaths.
    Pool {
        /// Pool name.
        pool: String,
        /// Kubernetes Node name.
        node: String,
    },
    /// A Garage process outside Kubernetes: no workload, only its layout role.
    External {
        /// The declared node ID.
        node_id: NodeId,
        /// `host:port` of its RPC endpoint.
        address: String,
    },
}

/// True for a gateway: a capacity-less identity that serves the APIs and stores no data.
pub fn is_gateway(node: &GarageNode) -> bool {
    node.spec.gateway == Some(true)
}

/// The shape of `node`, or the first field this operator version does not implement yet.
pub fn shape(node: &GarageNode) -> Result<NodeShape, DesiredError> {
    let spec = &node.spec;
    if spec.backing == Some(NodeBacking::NodeLocalPool) {
        let (Some(pool), Some(node)) = (&spec.node_local_pool_name, &spec.kubernetes_node_name)
        else {
            return Err(DesiredError::Invalid {
                field: "spec.nodeLocalPoolName",
                message: "a NodeLocalPool GarageNode names its pool and its Kubernetes Node".into(),
            });
        };
        return Ok(NodeShape::Pool {
            pool: pool.clone(),
            node: node.clone(),
        });
    }
    if let Some(external) = &spec.external {
        let node_id = spec
            .node_id
            .as_deref()
            .map(str::to_ascii_lowercase)
            .and_then(|id| id.parse::<NodeId>().ok())
            .ok_or_else(|| DesiredError::Invalid {
                field: "spec.nodeId",
                message: "an external node needs its 64-hex Garage node ID".into(),
            })?;
        let port = external.port.unwrap_or(3901);
        let host = if external.address.contains(':') {
            format!("[{}]", external.address)
        } else {
            external.address.clone()
        };
        return Ok(NodeShape::External {
            node_id,
            address: format!("{host}:{port}"),
        });
    }
    // Whether its data volumes fit the cluster's garage.toml is a question of the cluster
    // too: `data_dirs::check_node`.
    Ok(NodeShape::Managed)
}
