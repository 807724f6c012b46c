//! What one GarageCluster pass decides from: the cluster's storage members (generated and
//! user-written GarageNodes), their pods, claims, workloads and config revisions, the
//! Kubernetes Nodes its pools may use, and what Garage reports through one of its pods. The
//! reconciler reads all of it once per pass; nothing here reads or writes.

use std::collections::BTreeMap;
use std::sync::Arc;

use garage_api_types::{ClusterHealth, ClusterLayout, ClusterStatus, LayoutHistory};
use k8s_openapi::api::apps::v1::{DaemonSet, StatefulSet};
use k8s_openapi::api::core::v1::{ConfigMap, Node, PersistentVolumeClaim, Pod};
use k8s_openapi::jiff::Timestamp;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;

use crate::machine::drain::ProofObservation;

/// What a pass over a live (not deleting) GarageCluster found.
pub struct Observed {
    /// The cluster as the controller's cache holds it.
    pub cluster: Arc<GarageCluster>,
    /// Generated Auto GarageNodes by ordinal.
    pub generated: BTreeMap<u32, GarageNode>,
    /// Generated GarageNodes whose slot a live node fills instead: the deleting source of a
    /// completed cycle, whose finalizer still needs the drain record that names it.
    pub retiring: Vec<GarageNode>,
    /// User-written GarageNodes that reference this cluster, cycle siblings before their
    /// promotion among them.
    pub user_nodes: Vec<GarageNode>,
    /// Generated members of node-local pools.
    pub pool_members: Vec<GarageNode>,
    /// Generated gateways (`C-gateway-N`) by ordinal, deleting ones included.
    pub gateways: BTreeMap<u32, GarageNode>,
    /// The cluster's pool DaemonSets.
    pub daemonsets: Vec<DaemonSet>,
    /// Config revisions (ConfigMaps) the cluster controls.
    pub config_maps: Vec<ConfigMap>,
    /// The Services labelled with the cluster's name: its own and its members' RPC Services.
    pub services: Vec<k8s_openapi::api::core::v1::Service>,
    /// Every Kubernetes Node, read when the cluster has or had node-local pools.
    pub k8s_nodes: Vec<Node>,
    /// HostPaths that other clusters' pool DaemonSets and pool pods mount, with who mounts
    /// them (read when this cluster declares pools).
    pub foreign_paths: Vec<(String, String)>,
    /// What the scheduling-gate probe last established in this namespace (a proof only while
    /// it is fresh), when the cluster has or had pools.
    pub gate: Option<crate::pools::capability::Verdict>,
    /// Pods of the cluster (by its `cluster` label).
    pub pods: Vec<Pod>,
    /// What Garage reports.
    pub garage: GarageView,
    /// StatefulSets of the cluster's members (by the `cluster` label).
    pub statefulsets: Vec<StatefulSet>,
    /// Claims of the cluster's members (by the `cluster` label): what their disks prove.
    pub claims: Vec<PersistentVolumeClaim>,
    /// Repair workers and block errors, read while a drain transaction is recorded.
    pub proof: Option<ProofObservation>,
    /// When this pass observed.
    pub now: Timestamp,
    /// A fresh random transaction ID, used only if this pass records a new drain.
    pub transaction_id: String,
    /// Whether the API server serves the prometheus-operator ServiceMonitor kind.
    pub monitoring_installed: bool,
    /// The Go operator's pinned Admin API token, read only while the cluster pins one.
    pub go_token: Option<super::go_token::Seen>,
    /// The edge gateways of this namespace connected to this cluster, with their pods.
    pub edges: Vec<Edge>,
}

/// An edge gateway connected to the cluster: its members join the cluster's layout.
#[derive(Clone)]
pub struct Edge {
    /// The edge GarageCluster, whose status records each member's proven identity.
    pub cluster: GarageCluster,
    /// Its gateway pods.
    pub pods: Vec<Pod>,
}

/// Garage as seen through one running storage pod.
pub enum GarageView {
    /// Nothing could be asked yet; the sentence says why.
    Unavailable(String),
    /// The reads of this pass.
    Read(Box<GarageRead>),
}

/// One pod's answers.
#[derive(Debug, Clone)]
pub struct GarageRead {
    /// `GetClusterStatus`.
    pub status: ClusterStatus,
    /// `GetClusterLayout`.
    pub layout: ClusterLayout,
    /// `GetClusterLayoutHistory`.
    pub history: LayoutHistory,
    /// `GetClusterHealth`, when it answered.
    pub health: Option<ClusterHealth>,
    /// Every storage pod has a running process that answered, and each reports every storage
    /// node connected and every partition fully replicated from where it stands.
    pub every_view_healthy: bool,
    /// `GetNodeInfo` of the answering member, read only when the recorded `buildInfo` is
    /// incomplete or no member runs its version any more (`health::build_unknown`).
    pub build: Option<garage_api_types::NodeInfo>,
    /// `GetWorkerVariable(node=*)` by node, read only when `spec.workers` sets a variable
    /// (empty otherwise, or when the read failed).
    pub worker_variables: std::collections::BTreeMap<
        garage_api_types::NodeId,
        std::collections::BTreeMap<String, String>,
    >,
}

/// True when `node` names the cluster `name` in namespace `ns` as its parent.
pub fn references(node: &GarageNode, name: &str, ns: &str) -> bool {
    node.spec.cluster_ref.name == name && node.parent_namespace() == ns
}

/// The answer with the highest layout version, the first among equals.
pub fn most_advanced<A>(
    answers: impl IntoIterator<Item = A>,
    version: impl Fn(&A) -> u64,
) -> Option<A> {
    answers
        .into_iter()
        .enumerate()
        .max_by_key(|(i, a)| (version(a), std::cmp::Reverse(*i)))
        .map(|(_, a)| a)
}

/// The cluster's GarageNodes by role.
pub struct Members {
    /// Generated Auto nodes by the slot each fills.
    pub generated: BTreeMap<u32, GarageNode>,
    /// Generated nodes a live node displaced from their slot.
    pub retiring: Vec<GarageNode>,
    /// User-written nodes of the cluster.
    pub user_nodes: Vec<GarageNode>,
    /// Generated members of node-local pools.
    pub pool_members: Vec<GarageNode>,
    /// Generated gateways by ordinal.
    pub gateways: BTreeMap<u32, GarageNode>,
}

/// Sorts the namespace's GarageNodes into the cluster's generated slots (by the slot each
/// fills), the retiring, the user-written ones (unpromoted cycle siblings among them) and the
/// pool members; nodes of other clusters are dropped.
pub fn sort_members(list: Vec<GarageNode>, name: &str, ns: &str, uid: &str) -> Members {
    let mut generated: BTreeMap<u32, GarageNode> = BTreeMap::new();
    let mut retiring = Vec::new();
    let mut user_nodes = Vec::new();
    let mut pool_members = Vec::new();
    let mut gateways = BTreeMap::new();
    for gn in list {
        if crate::desired::nodes::is_generated_by(&gn, uid)
            && matches!(
                crate::desired::nodes::shape(&gn),
                Ok(crate::desired::nodes::NodeShape::Pool { .. })
            )
        {
            pool_members.push(gn);
        } else if crate::desired::nodes::is_generated_by(&gn, uid)
            && crate::desired::nodes::is_gateway(&gn)
        {
            if let Some(ordinal) = crate::desired::nodes::gateway_ordinal(
                name,
                gn.metadata.name.as_deref().unwrap_or_default(),
            ) {
                gateways.insert(ordinal, gn);
            }
        } else if crate::desired::nodes::is_generated_by(&gn, uid) {
            if let Some(ordinal) = crate::desired::nodes::slot_of(name, &gn) {
                // Two nodes fill one slot only while a cycle's source is deleted after its
                // sibling's promotion: the live one is the slot's. Two live ones (a label
                // written by hand) both stay members: the second counts as a user node, so
                // its role is planned for and never lost from sight.
                let live = gn.metadata.deletion_timestamp.is_none();
                match generated.remove(&ordinal) {
                    Some(other) if other.metadata.deletion_timestamp.is_none() => {
                        if live {
                            user_nodes.push(gn);
                        } else {
                            retiring.push(gn);
                        }
                        generated.insert(ordinal, other);
                    }
                    Some(other) => {
                        retiring.push(other);
                        generated.insert(ordinal, gn);
                    }
                    None => {
                        generated.insert(ordinal, gn);
                    }
                }
            }
        } else if references(&gn, name, ns) {
            user_nodes.push(gn);
        }
    }
    Members {
        generated,
        retiring,
        user_nodes,
        pool_members,
        gateways,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::fixtures::{cluster, deleting, generated};
    use kube::ResourceExt;

    /// Slot 1 filled by `garage-storage-1` (deleting when `source_deleting`) and by its promoted
    /// sibling: the names of the generated slots, the retiring and the user nodes.
    fn sorted(source_deleting: bool) -> (Vec<String>, Vec<String>, Vec<String>) {
        let c = cluster(3);
        let mut source = generated(&c, 1, None);
        if source_deleting {
            source.metadata.deletion_timestamp = deleting();
        }
        let mut sibling = generated(&c, 1, None);
        sibling.metadata.name = Some("garage-storage-1-cycle".into());
        let list = vec![generated(&c, 0, None), source, sibling];
        let m = sort_members(list, "garage", "ns", "uid-1");
        let names = |v: Vec<&GarageNode>| v.iter().map(|n| n.name_any()).collect::<Vec<_>>();
        (
            names(m.generated.values().collect()),
            names(m.retiring.iter().collect()),
            names(m.user_nodes.iter().collect()),
        )
    }

    #[test]
    fn a_slot_filled_twice_keeps_the_live_node_and_both_in_sight() {
        // The source deleting after the promotion: the sibling fills the slot, the source
        // stays visible as retiring (its finalizer needs the drain record that names it).
        assert_eq!(
            sorted(true),
            (
                vec!["garage-storage-0".into(), "garage-storage-1-cycle".into()],
                vec!["garage-storage-1".into()],
                vec![]
            )
        );
        // Both live (promoted, the source's deletion not landed yet): the second is a member
        // as a user node, never dropped.
        assert_eq!(
            sorted(false),
            (
                vec!["garage-storage-0".into(), "garage-storage-1".into()],
                vec![],
                vec!["garage-storage-1-cycle".into()]
            )
        );
    }

    #[test]
    fn the_view_read_is_the_most_advanced_the_first_among_equals() {
        // (pod, layout version): a fresh pod first in order answers with version 0.
        let answers = [("fresh", 0), ("a", 5), ("b", 5), ("c", 4)];
        assert_eq!(most_advanced(answers, |a| a.1), Some(("a", 5)));
        assert_eq!(most_advanced([("only", 0)], |a| a.1), Some(("only", 0)));
        assert_eq!(most_advanced(Vec::<(&str, u64)>::new(), |a| a.1), None);
    }
}
