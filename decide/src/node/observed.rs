//! What one GarageNode pass decides from: its parent, its workload, its pod, its claims and
//! the identity that exact pod reports. The reconciler reads it; nothing here reads or writes.

use std::sync::Arc;

use garage_api_types::NodeId;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;

use crate::desired::{DesiredError, Settings};

/// What a pass over a GarageNode found.
pub struct Observed {
    /// The node as the controller's cache holds it.
    pub node: Arc<GarageNode>,
    /// The parent cluster, read from the API server; present only when this install manages
    /// it.
    pub parent: Option<GarageCluster>,
    /// The parent's settings, when there is a parent.
    pub settings: Option<Result<Settings, DesiredError>>,
    /// The parent's current config revision exists with the content its name promises.
    pub config_published: bool,
    /// The node's StatefulSet, when it exists.
    pub statefulset: Option<StatefulSet>,
    /// The node's RPC Service exists.
    pub service_exists: bool,
    /// The pod of that StatefulSet, when it exists.
    pub pod: Option<Pod>,
    /// The identity the pod reports, proven to come from that exact pod incarnation.
    pub discovered: Option<Discovered>,
    /// A pool member's Kubernetes Node, read while the member is being deleted.
    pub host: Option<Node>,
    /// What was read of the Node its pod runs on, for `zoneFrom`.
    pub zone_host: crate::zone::HostZone,
    /// The claims its StatefulSet generates, with the class each volume asks for.
    pub claims: Vec<super::volumes::Claim>,
    /// The same claims, with the size each volume asks for.
    pub expansions: Vec<super::expansion::Sized>,
}

/// A Garage identity read from one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// Node ID.
    pub id: NodeId,
    /// UID of the pod that reported it.
    pub pod_uid: String,
    /// That pod's IP.
    pub ip: String,
}
