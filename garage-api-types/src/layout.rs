//! The types of the cluster layout: roles, staged changes, previews, applies, history and
//! skip-dead-nodes; and what a layout or its history says (settled, draining versions).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::nodes::NodeId;

/// `GetClusterLayout` (also the answer of stage, revert and apply).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterLayout {
    /// Current layout version.
    pub version: u64,
    /// Nodes with a role in the current version.
    pub roles: Vec<LayoutRole>,
    /// Parameters the current version was computed with.
    pub parameters: LayoutParameters,
    /// Bytes per partition.
    pub partition_size: u64,
    /// Changes staged for the next version.
    pub staged_role_changes: Vec<StagedRoleChange>,
    /// Parameters staged for the next version.
    #[serde(default)]
    pub staged_parameters: Option<LayoutParameters>,
}

impl ClusterLayout {
    /// True when applying would change roles or parameters.
    pub fn has_staged_changes(&self) -> bool {
        !self.staged_role_changes.is_empty()
            || self
                .staged_parameters
                .as_ref()
                .is_some_and(|p| *p != self.parameters)
    }

    /// The role of `id` in the current version.
    pub fn role(&self, id: &NodeId) -> Option<&LayoutRole> {
        self.roles.iter().find(|r| &r.id == id)
    }
}

/// A node's role in the current layout version.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LayoutRole {
    /// The node.
    pub id: NodeId,
    /// Zone.
    pub zone: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Capacity in bytes; `None` for a gateway.
    #[serde(default)]
    pub capacity: Option<u64>,
    /// Partitions stored on the node.
    #[serde(default)]
    pub stored_partitions: Option<u64>,
    /// Bytes usable on the node (`storedPartitions` × `partitionSize`).
    #[serde(default)]
    pub usable_capacity: Option<u64>,
}

/// Layout computation parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LayoutParameters {
    /// How many zones each partition must span.
    pub zone_redundancy: ZoneRedundancy,
}

/// `{"atLeast": n}` or `"maximum"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ZoneRedundancy {
    /// Each partition in at least this many zones.
    AtLeast(u64),
    /// As many zones as there are replicas, when possible.
    Maximum,
}

/// A change staged for the next layout version, as Garage reports it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum StagedRoleChange {
    /// The node's role will be removed.
    Remove {
        /// The node.
        id: NodeId,
        /// Always true.
        remove: bool,
    },
    /// The node will get this role.
    Assign {
        /// The node.
        id: NodeId,
        /// Zone.
        zone: String,
        /// Tags.
        tags: Vec<String>,
        /// Capacity in bytes; `None` for a gateway.
        #[serde(default)]
        capacity: Option<u64>,
    },
}

impl StagedRoleChange {
    /// The node the change is about.
    pub fn id(&self) -> &NodeId {
        match self {
            Self::Remove { id, .. } | Self::Assign { id, .. } => id,
        }
    }
}

/// A role change to stage with `AdminClient::stage_layout` (in `garage-admin`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum RoleChange {
    /// Remove the node's role.
    Remove {
        /// The node.
        id: NodeId,
        /// Must be true.
        remove: bool,
    },
    /// Give the node a role. `tags` is always sent (Garage matches the variant on it) and
    /// `capacity` is sent as `null` for a gateway.
    Assign {
        /// The node.
        id: NodeId,
        /// Zone.
        zone: String,
        /// Capacity in bytes; `None` makes a gateway.
        capacity: Option<u64>,
        /// Tags.
        tags: Vec<String>,
    },
}

impl RoleChange {
    /// A storage role of `capacity` bytes.
    pub fn storage(id: NodeId, zone: impl Into<String>, capacity: u64, tags: Vec<String>) -> Self {
        Self::Assign {
            id,
            zone: zone.into(),
            capacity: Some(capacity),
            tags,
        }
    }

    /// A gateway role (no capacity, stores no data).
    pub fn gateway(id: NodeId, zone: impl Into<String>, tags: Vec<String>) -> Self {
        Self::Assign {
            id,
            zone: zone.into(),
            capacity: None,
            tags,
        }
    }

    /// Remove the node from the layout.
    pub fn remove(id: NodeId) -> Self {
        Self::Remove { id, remove: true }
    }
}

impl From<StagedRoleChange> for RoleChange {
    /// The change that stages `staged` again: what a pass that finds its own staged change
    /// compares with what it intended.
    fn from(staged: StagedRoleChange) -> Self {
        match staged {
            StagedRoleChange::Remove { id, remove } => Self::Remove { id, remove },
            StagedRoleChange::Assign {
                id,
                zone,
                tags,
                capacity,
            } => Self::Assign {
                id,
                zone,
                capacity,
                tags,
            },
        }
    }
}

impl From<RoleChange> for StagedRoleChange {
    /// How Garage reports `change` once it is staged.
    fn from(change: RoleChange) -> Self {
        match change {
            RoleChange::Remove { id, remove } => Self::Remove { id, remove },
            RoleChange::Assign {
                id,
                zone,
                capacity,
                tags,
            } => Self::Assign {
                id,
                zone,
                tags,
                capacity,
            },
        }
    }
}

/// The answer of `ApplyClusterLayout`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AppliedLayout {
    /// Garage's computation log; human-readable, do not parse.
    pub message: Vec<String>,
    /// The new layout.
    pub layout: ClusterLayout,
}

/// The answer of `PreviewClusterLayoutChanges`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum LayoutPreview {
    /// The staged changes cannot be computed (for example not enough zones or capacity).
    Error {
        /// Garage's reason.
        error: String,
    },
    /// The layout the staged changes would produce.
    Success {
        /// Garage's computation log; do not parse.
        message: Vec<String>,
        /// The would-be layout.
        #[serde(rename = "newLayout")]
        new_layout: ClusterLayout,
    },
}

/// `GetClusterLayoutHistory`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LayoutHistory {
    /// Current layout version.
    pub current_version: u64,
    /// Lowest version still acknowledged by every node.
    pub min_ack: u64,
    /// Versions still kept, with their status.
    pub versions: Vec<LayoutVersion>,
    /// Per-node update trackers; absent when Garage does not report them.
    #[serde(default)]
    pub update_trackers: Option<BTreeMap<NodeId, UpdateTrackers>>,
}

impl LayoutHistory {
    /// Versions whose data is still being moved away.
    pub fn draining_versions(&self) -> impl Iterator<Item = &LayoutVersion> {
        self.versions
            .iter()
            .filter(|v| v.status == LayoutVersionStatus::Draining)
    }

    /// True when no data movement is pending: either every version is `Current` or
    /// `Historical` (Garage then reports no trackers), or every tracked node has synced the
    /// current version. A status this client does not know counts as pending.
    pub fn is_settled(&self) -> bool {
        let pending = self.versions.iter().any(|v| {
            !matches!(
                v.status,
                LayoutVersionStatus::Current | LayoutVersionStatus::Historical
            )
        });
        !pending || self.data_migration_settled()
    }

    /// True only when trackers are reported and every tracked node has synced the current
    /// version. Garage reports trackers only while several versions are live, so missing
    /// trackers give `false`: use [`LayoutHistory::is_settled`] for "nothing pending".
    pub fn data_migration_settled(&self) -> bool {
        self.update_trackers
            .as_ref()
            .is_some_and(|t| !t.is_empty() && t.values().all(|t| t.sync >= self.current_version))
    }
}

/// One layout version of [`LayoutHistory`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LayoutVersion {
    /// Version number.
    pub version: u64,
    /// `Current`, `Draining` or `Historical`.
    pub status: LayoutVersionStatus,
    /// Nodes with a storage role in it.
    pub storage_nodes: u64,
    /// Nodes with a gateway role in it.
    pub gateway_nodes: u64,
}

/// Status of a layout version.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum LayoutVersionStatus {
    /// The version in force.
    Current,
    /// An older version whose data is still being moved.
    Draining,
    /// An older version no longer used.
    Historical,
    /// A value this client does not know; treat as possibly draining.
    Other(String),
}

impl From<String> for LayoutVersionStatus {
    fn from(s: String) -> Self {
        match s.as_str() {
            "Current" => Self::Current,
            "Draining" => Self::Draining,
            "Historical" => Self::Historical,
            _ => Self::Other(s),
        }
    }
}

/// A node's progress through layout versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTrackers {
    /// Highest version the node acknowledged.
    pub ack: u64,
    /// Highest version whose data the node has synced (the real data-movement signal).
    pub sync: u64,
    /// Highest sync version the node knows every node reached (bookkeeping; may lag).
    pub sync_ack: u64,
}

/// The answer of `ClusterLayoutSkipDeadNodes`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkipDeadNodesResult {
    /// Nodes whose ack tracker was moved to the version.
    pub ack_updated: Vec<NodeId>,
    /// Nodes whose sync tracker was moved (only with `allowMissingData`).
    pub sync_updated: Vec<NodeId>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const A: &str = "aa00000000000000000000000000000000000000000000000000000000000000";

    #[test]
    fn role_changes_encode_as_garage_expects() {
        let id: NodeId = A.parse().unwrap();
        let gw = serde_json::to_value(RoleChange::gateway(id.clone(), "z", vec![])).unwrap();
        assert_eq!(
            gw,
            json!({"id": A, "zone": "z", "capacity": null, "tags": []})
        );
        let rm = serde_json::to_value(RoleChange::remove(id)).unwrap();
        assert_eq!(rm, json!({"id": A, "remove": true}));
        let p = LayoutParameters {
            zone_redundancy: ZoneRedundancy::AtLeast(2),
        };
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"zoneRedundancy": {"atLeast": 2}})
        );
        let max: ZoneRedundancy = serde_json::from_value(json!("maximum")).unwrap();
        assert_eq!(max, ZoneRedundancy::Maximum);
    }

    #[test]
    fn missing_trackers_are_not_settled() {
        let h: LayoutHistory = serde_json::from_value(json!({
            "currentVersion": 3, "minAck": 2,
            "versions": [{"version": 3, "status": "Current", "storageNodes": 2, "gatewayNodes": 0},
                         {"version": 2, "status": "Draining", "storageNodes": 3, "gatewayNodes": 0}]
        }))
        .unwrap();
        assert!(!h.data_migration_settled());
        assert!(!h.is_settled());
        assert_eq!(h.draining_versions().count(), 1);
    }
}
