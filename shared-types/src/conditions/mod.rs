//! Status condition vocabulary of the garage-operator resources.
//!
//! Every `type` and `reason` string that the operator puts into a `status.conditions[]` entry (or
//! looks for in one) is declared here, so controllers, webhooks and tests never write the literal
//! themselves. The operator is the only writer of these conditions; users only read them.
//!
//! Layout:
//! - condition types live in one sub-module per resource kind ([`common`], [`cluster`], [`node`],
//!   [`bucket`], [`key`], [`admin_token`], [`reference_grant`]);
//! - every reason lives in [`reason`], because several reasons are shared between conditions
//!   (and, in one case, between a reason and a legacy condition type);
//! - [`kubernetes`] holds the few upstream Pod condition strings the operator inspects.
//!
//! Types documented as "compatibility only" still exist in the published API but the current
//! controllers never set them; they are kept so that old objects and clients keep parsing.

/// Condition types that every Garage custom resource can carry.
pub mod common {
    /// `Ready`: the resource has been reconciled completely and is usable. Set by the operator
    /// on every kind (clusters, nodes, buckets, keys, admin tokens and reference grants).
    pub const CONDITION_READY: &str = "Ready";
    /// `Reconciling`: a reconcile pass is under way. Compatibility only; never set by the
    /// current controllers.
    pub const CONDITION_RECONCILING: &str = "Reconciling";
    /// `Degraded`: the resource works but is not fully healthy. Compatibility only; never set
    /// by the current controllers.
    pub const CONDITION_DEGRADED: &str = "Degraded";
    /// `Error`: reconciliation hit an error. Compatibility only; never set by the current
    /// controllers.
    pub const CONDITION_ERROR: &str = "Error";
}

/// Condition types written by the operator on `GarageCluster` objects.
pub mod cluster {
    /// `ClusterHealthy`: the Garage cluster as a whole reports healthy. Compatibility only.
    pub const CONDITION_CLUSTER_HEALTHY: &str = "ClusterHealthy";
    /// `LayoutApplied`: the desired Garage layout has been applied. Compatibility only.
    pub const CONDITION_LAYOUT_APPLIED: &str = "LayoutApplied";
    /// `LayoutStaged`: layout changes are staged but not yet applied. Compatibility only.
    pub const CONDITION_LAYOUT_STAGED: &str = "LayoutStaged";
    /// `NodesConnected`: every Garage node is connected. Compatibility only.
    pub const CONDITION_NODES_CONNECTED: &str = "NodesConnected";
    /// `FederationReady`: multi-cluster federation works. Compatibility only.
    pub const CONDITION_FEDERATION_READY: &str = "FederationReady";
    /// `StatefulSetReady`: the cluster StatefulSet is ready. Compatibility only.
    pub const CONDITION_STATEFUL_SET_READY: &str = "StatefulSetReady";
    /// `ServicesReady`: the cluster Services exist and are ready. Compatibility only.
    pub const CONDITION_SERVICES_READY: &str = "ServicesReady";
    /// `GatewayConnected`: whether gateway and storage processes reach each other over RPC.
    /// Set by the operator; `False` also when the admin token is missing or the Admin API is
    /// unreachable.
    pub const CONDITION_GATEWAY_CONNECTED: &str = "GatewayConnected";
    /// `PublicEndpointReady`: the `spec.publicEndpoint` settings are valid and the Services
    /// they describe have been reconciled by the operator.
    pub const CONDITION_PUBLIC_ENDPOINT_READY: &str = "PublicEndpointReady";
    /// `GatewayTombstones`: `True` when the operator found stale gateway layout roles but left
    /// them in place because automatic layout application is turned off.
    pub const CONDITION_GATEWAY_TOMBSTONES: &str = "GatewayTombstones";
    /// `LegacySTSMigrated`: progress of the one-off move from the old cluster-wide storage
    /// StatefulSet to per-`GarageNode` workloads (`True`/`Completed`, `False`/`InProgress` or
    /// `False`/`Failed`).
    pub const CONDITION_LEGACY_STS_MIGRATED: &str = "LegacySTSMigrated";
    /// `QuorumAtRisk`: `True` when at least one partition no longer has a write quorum.
    pub const CONDITION_QUORUM_AT_RISK: &str = "QuorumAtRisk";
    /// `RemoteClustersHealthy`: overall reachability of the federated remote clusters; `False`
    /// once one has been unreachable for longer than the staleness threshold.
    pub const CONDITION_REMOTE_CLUSTERS_HEALTHY: &str = "RemoteClustersHealthy";
    /// `FederationConfigured`: `False` when `remoteClusters` is set but this cluster advertises
    /// no `rpc_public_addr` that remotes could dial.
    pub const CONDITION_FEDERATION_CONFIGURED: &str = "FederationConfigured";
    /// `PeerUnreachable`: `True` when a Garage peer has been down for longer than the sustained
    /// threshold.
    pub const CONDITION_PEER_UNREACHABLE: &str = "PeerUnreachable";
    /// `GatewayLayoutDegraded`: `True` when a gateway `GarageNode` owned by the operator has
    /// lost its capacity-less role in the Garage layout.
    pub const CONDITION_GATEWAY_LAYOUT_DEGRADED: &str = "GatewayLayoutDegraded";
    /// `ManagementHandleReady`: for a connection-only cluster, whether the external Admin API
    /// answers; it decides the reported phase.
    pub const CONDITION_MANAGEMENT_HANDLE_READY: &str = "ManagementHandleReady";
    /// `StorageScaleDownBlocked`: `True` when an Auto-mode storage scale-down was refused
    /// because fewer roles than the replication factor would remain.
    pub const CONDITION_STORAGE_SCALE_DOWN_BLOCKED: &str = "StorageScaleDownBlocked";
    /// `StorageTopologyReady`: the default StatefulSet/PVC storage group has exactly its desired
    /// members and no older layout version is still draining.
    pub const CONDITION_STORAGE_TOPOLOGY_READY: &str = "StorageTopologyReady";
    /// `NodeLocalPoolsReady`: every node-local pool has converged on the Kubernetes Nodes its
    /// selector picks; also reports capability-probe and drain blockers for pools.
    pub const CONDITION_NODE_LOCAL_POOLS_READY: &str = "NodeLocalPoolsReady";
    /// `StorageRolloutReady`: every identity backed by a `GarageNode` or a pool runs the desired
    /// pod template revision (pods are replaced one at a time with `OnDelete`).
    pub const CONDITION_STORAGE_ROLLOUT_READY: &str = "StorageRolloutReady";
    /// `StorageDrainReady`: the cluster-wide storage drain transaction is idle, or has finished
    /// collecting its terminal evidence.
    pub const CONDITION_STORAGE_DRAIN_READY: &str = "StorageDrainReady";
    /// `StorageVolumeAttributesReady`: roll-up of the VolumeAttributesClass state of the
    /// generated `GarageNode`s and edge-gateway claims. Informational: it does not feed `Ready`
    /// or the phase.
    pub const CONDITION_STORAGE_VOLUME_ATTRIBUTES_READY: &str = "StorageVolumeAttributesReady";
    /// `StorageCapacityLow`: `True` while a storage member's data or metadata partition, as
    /// Garage reports it, has less free space than the reconciler's threshold; new drains and
    /// new storage rollouts wait meanwhile. Absent while Garage cannot be read and no shortage
    /// was known before.
    pub const CONDITION_STORAGE_CAPACITY_LOW: &str = "StorageCapacityLow";
    /// `StorageExpansionInProgress`: `True` while a member's claims are growing to a larger
    /// size; that member's layout capacity stays at what its disks have proven until every
    /// claim reports the new size. Absent when nothing grows.
    pub const CONDITION_STORAGE_EXPANSION_IN_PROGRESS: &str = "StorageExpansionInProgress";
    /// `StorageExpansionBlocked`: `True` while a member's claim cannot grow (its StorageClass
    /// does not allow expansion, or the API server refused it); the member keeps its capacity.
    /// Absent otherwise.
    pub const CONDITION_STORAGE_EXPANSION_BLOCKED: &str = "StorageExpansionBlocked";
    /// `ServiceMonitorReady`: while `spec.monitoring.enabled` is true, whether the
    /// ServiceMonitor `<cluster>-garage` is in place (`False` when the API server does not
    /// serve the kind). Absent while monitoring is off.
    pub const CONDITION_SERVICE_MONITOR_READY: &str = "ServiceMonitorReady";
}

/// Condition types written by the operator on `GarageNode` objects.
///
/// The legacy `Draining` node condition type shares its string with a reason and is therefore
/// declared once, as [`REASON_DRAINING`](crate::conditions::reason::REASON_DRAINING).
pub mod node {
    /// `NodeDiscovered`: the Garage node ID is known. Compatibility only.
    pub const CONDITION_NODE_DISCOVERED: &str = "NodeDiscovered";
    /// `InLayout`: the node holds a role in the layout. Compatibility only (see
    /// `status.inLayout`).
    pub const CONDITION_IN_LAYOUT: &str = "InLayout";
    /// `NodeConnected`: the node is connected. Compatibility only (see `status.connected`).
    pub const CONDITION_NODE_CONNECTED: &str = "NodeConnected";
    /// `DrainPrepared`: `True` only once a `drain` request removed the role while the process
    /// was still running and the block-migration proof finished; deleting the node is then safe.
    pub const CONDITION_DRAIN_PREPARED: &str = "DrainPrepared";
    /// `Cycling`: an add-before-remove replacement requested with the `cycle` annotation is in
    /// progress; `False` means it is blocked and nothing was changed.
    pub const CONDITION_CYCLING: &str = "Cycling";
    /// `Suspended`: reconciliation of this node (or cluster) is paused, by the user's maintenance setting,
    /// by the parent cluster's maintenance, or by the operator itself.
    pub const CONDITION_SUSPENDED: &str = "Suspended";
    /// `VolumeAttributesClassApplied`: `True` once every managed claim of the node that should
    /// carry a VolumeAttributesClass reports it as current. Absent when no class is requested.
    pub const CONDITION_VOLUME_ATTRIBUTES_CLASS_APPLIED: &str = "VolumeAttributesClassApplied";
    /// `StorageExpansionInProgress`: `True` while one of the node's claims is growing to the
    /// size its volume asks for. Absent when nothing grows. The cluster's roll-up has the same
    /// type, so the string is declared there once.
    pub const CONDITION_STORAGE_EXPANSION_IN_PROGRESS: &str =
        super::cluster::CONDITION_STORAGE_EXPANSION_IN_PROGRESS;
    /// `StorageExpansionBlocked`: `True` while one of the node's claims cannot grow to the size
    /// its volume asks for. Absent otherwise. Same string as the cluster's roll-up.
    pub const CONDITION_STORAGE_EXPANSION_BLOCKED: &str =
        super::cluster::CONDITION_STORAGE_EXPANSION_BLOCKED;
}

/// Condition types written by the operator on `GarageBucket` objects.
pub mod bucket {
    /// `BucketCreated`: the bucket exists in Garage. Compatibility only.
    pub const CONDITION_BUCKET_CREATED: &str = "BucketCreated";
    /// `QuotaConfigured`: bucket quotas are in place. Compatibility only.
    pub const CONDITION_QUOTA_CONFIGURED: &str = "QuotaConfigured";
    /// `WebsiteConfigured`: website hosting is configured. Compatibility only.
    pub const CONDITION_WEBSITE_CONFIGURED: &str = "WebsiteConfigured";
    /// `LifecycleConfigured`: outcome of pushing the lifecycle rules to Garage (reasons
    /// `Applied` or `ApplyFailed`).
    pub const CONDITION_LIFECYCLE_CONFIGURED: &str = "LifecycleConfigured";
    /// `AliasesConfigured`: bucket aliases are in place. Compatibility only.
    pub const CONDITION_ALIASES_CONFIGURED: &str = "AliasesConfigured";
    /// `BucketLookupStuck`: reading the bucket from the Admin API keeps timing out; the user is
    /// pointed at an `Aliases` repair on the parent cluster.
    pub const CONDITION_BUCKET_LOOKUP_STUCK: &str = "BucketLookupStuck";
    /// `BucketMetadataDegraded`: the bucket info returned by Garage cannot be decoded; after a
    /// few failures in a row the operator requests a `Tables` repair itself.
    pub const CONDITION_BUCKET_METADATA_DEGRADED: &str = "BucketMetadataDegraded";
    /// `DeletionBlocked`: `True` while a deleted GarageBucket waits because its Garage bucket
    /// still holds objects or unfinished uploads (`deletionPolicy: Delete`).
    pub const CONDITION_DELETION_BLOCKED: &str = "DeletionBlocked";
}

/// Condition types of `GarageKey` objects (apart from `Ready`, all compatibility only).
pub mod key {
    /// `KeyCreated`: the access key exists in Garage. Compatibility only.
    pub const CONDITION_KEY_CREATED: &str = "KeyCreated";
    /// `SecretCreated`: the credentials Secret was written. Compatibility only.
    pub const CONDITION_SECRET_CREATED: &str = "SecretCreated";
    /// `PermissionsConfigured`: bucket permissions are granted. Compatibility only.
    pub const CONDITION_PERMISSIONS_CONFIGURED: &str = "PermissionsConfigured";
    /// `KeyExpired`: the key has expired. Compatibility only; expiry is shown through
    /// `status.phase` instead.
    pub const CONDITION_KEY_EXPIRED: &str = "KeyExpired";
}

/// Condition types of `GarageAdminToken` objects (apart from `Ready`, all compatibility only).
pub mod admin_token {
    /// `TokenCreated`: the admin token exists in Garage. Compatibility only.
    pub const CONDITION_TOKEN_CREATED: &str = "TokenCreated";
    /// `TokenSecretCreated`: the token Secret was written. Compatibility only.
    pub const CONDITION_TOKEN_SECRET_CREATED: &str = "TokenSecretCreated";
    /// `TokenExpired`: the token has expired. Compatibility only.
    pub const CONDITION_TOKEN_EXPIRED: &str = "TokenExpired";
}

/// Condition types of `GarageReferenceGrant` objects besides `Ready`.
pub mod reference_grant {
    /// `InUse`: set by the operator to say whether some cross-namespace reference currently
    /// relies on the grant.
    pub const CONDITION_IN_USE: &str = "InUse";
}

/// Upstream Kubernetes Pod condition strings that the operator reads but never writes.
pub mod kubernetes {
    /// `PodScheduled`: the standard Pod condition checked on the scheduling-gate capability
    /// probe Pod.
    pub const CONDITION_POD_SCHEDULED: &str = "PodScheduled";
    /// `SchedulingGated`: reason kube-scheduler gives on `PodScheduled=False` while a gate is
    /// still present; the operator takes it as proof that scheduling gates are honoured.
    pub const REASON_SCHEDULING_GATED: &str = "SchedulingGated";
}

pub mod reason;

#[cfg(test)]
mod tests {
    use super::{admin_token, bucket, cluster, common, key, kubernetes, node};
    use super::{reason as r, reference_grant as grant};
    use std::collections::HashSet;

    /// Every condition type declared in this module (the shared `Draining` string is listed
    /// with the reasons).
    const TYPES: &[&str] = &[
        common::CONDITION_READY,
        common::CONDITION_RECONCILING,
        common::CONDITION_DEGRADED,
        common::CONDITION_ERROR,
        cluster::CONDITION_CLUSTER_HEALTHY,
        cluster::CONDITION_LAYOUT_APPLIED,
        cluster::CONDITION_LAYOUT_STAGED,
        cluster::CONDITION_NODES_CONNECTED,
        cluster::CONDITION_FEDERATION_READY,
        cluster::CONDITION_STATEFUL_SET_READY,
        cluster::CONDITION_SERVICES_READY,
        cluster::CONDITION_GATEWAY_CONNECTED,
        cluster::CONDITION_PUBLIC_ENDPOINT_READY,
        cluster::CONDITION_GATEWAY_TOMBSTONES,
        cluster::CONDITION_LEGACY_STS_MIGRATED,
        cluster::CONDITION_QUORUM_AT_RISK,
        cluster::CONDITION_REMOTE_CLUSTERS_HEALTHY,
        cluster::CONDITION_FEDERATION_CONFIGURED,
        cluster::CONDITION_PEER_UNREACHABLE,
        cluster::CONDITION_GATEWAY_LAYOUT_DEGRADED,
        cluster::CONDITION_MANAGEMENT_HANDLE_READY,
        cluster::CONDITION_STORAGE_SCALE_DOWN_BLOCKED,
        cluster::CONDITION_STORAGE_TOPOLOGY_READY,
        cluster::CONDITION_NODE_LOCAL_POOLS_READY,
        cluster::CONDITION_STORAGE_ROLLOUT_READY,
        cluster::CONDITION_STORAGE_DRAIN_READY,
        cluster::CONDITION_STORAGE_VOLUME_ATTRIBUTES_READY,
        cluster::CONDITION_STORAGE_CAPACITY_LOW,
        cluster::CONDITION_STORAGE_EXPANSION_IN_PROGRESS,
        cluster::CONDITION_STORAGE_EXPANSION_BLOCKED,
        cluster::CONDITION_SERVICE_MONITOR_READY,
        node::CONDITION_NODE_DISCOVERED,
        node::CONDITION_IN_LAYOUT,
        node::CONDITION_NODE_CONNECTED,
        node::CONDITION_DRAIN_PREPARED,
        node::CONDITION_CYCLING,
        node::CONDITION_SUSPENDED,
        node::CONDITION_VOLUME_ATTRIBUTES_CLASS_APPLIED,
        bucket::CONDITION_BUCKET_CREATED,
        bucket::CONDITION_QUOTA_CONFIGURED,
        bucket::CONDITION_WEBSITE_CONFIGURED,
        bucket::CONDITION_LIFECYCLE_CONFIGURED,
        bucket::CONDITION_ALIASES_CONFIGURED,
        bucket::CONDITION_BUCKET_LOOKUP_STUCK,
        bucket::CONDITION_BUCKET_METADATA_DEGRADED,
        bucket::CONDITION_DELETION_BLOCKED,
        key::CONDITION_KEY_CREATED,
        key::CONDITION_SECRET_CREATED,
        key::CONDITION_PERMISSIONS_CONFIGURED,
        key::CONDITION_KEY_EXPIRED,
        admin_token::CONDITION_TOKEN_CREATED,
        admin_token::CONDITION_TOKEN_SECRET_CREATED,
        admin_token::CONDITION_TOKEN_EXPIRED,
        grant::CONDITION_IN_USE,
        kubernetes::CONDITION_POD_SCHEDULED,
    ];

    /// Every reason declared in this module.
    const REASONS: &[&str] = &[
        r::REASON_CLUSTER_READY,
        r::REASON_NOT_ALL_REPLICAS_READY,
        r::REASON_STORAGE_TOPOLOGY_NOT_READY,
        r::REASON_LAYOUT_NOT_READY,
        r::REASON_ROLE_REMOVAL_UNAVAILABLE,
        r::REASON_IDENTITY_CHANGED,
        r::REASON_RETIRED_CLAIMS,
        r::REASON_CLAIM_DELETING,
        r::REASON_CLAIM_REPLACED,
        r::REASON_FOREIGN_STAGED_CHANGES,
        r::REASON_RECONCILE_SUCCESS,
        r::REASON_RECONCILE_FAILED,
        r::REASON_RECONCILE_IN_PROGRESS,
        r::REASON_GARAGE_API_ERROR,
        r::REASON_NOT_FOUND,
        r::REASON_CREATING,
        r::REASON_UPDATING,
        r::REASON_DELETING,
        r::REASON_WAITING_FOR_DEPENDENCY,
        r::REASON_CLUSTER_NOT_READY,
        r::REASON_CLUSTER_DELETING,
        r::REASON_EXPIRED,
        r::REASON_VALIDATION_FAILED,
        r::REASON_ADMIN_TOKEN_MISSING,
        r::REASON_ADMIN_UNREACHABLE,
        r::REASON_GATEWAY_CONNECTED,
        r::REASON_PARTIALLY_CONNECTED,
        r::REASON_FORWARD_ONLY,
        r::REASON_NODES_OFFLINE,
        r::REASON_PER_NODE_NOT_IMPLEMENTED,
        r::REASON_GATEWAY_TOMBSTONES_PENDING,
        r::REASON_GATEWAY_ROLES_PRESENT,
        r::REASON_GATEWAY_ROLE_MISSING,
        r::REASON_QUORUM_OK,
        r::REASON_QUORUM_LOST,
        r::REASON_ALL_REMOTES_CONNECTED,
        r::REASON_REMOTES_STALE,
        r::REASON_MISSING_RPC_PUBLIC_ADDR,
        r::REASON_FEDERATION_CONFIGURED,
        r::REASON_PEERS_REACHABLE,
        r::REASON_PEERS_UNREACHABLE,
        r::REASON_SCALE_DOWN_WOULD_BREAK_QUORUM,
        r::REASON_SCALE_DOWN_SAFE,
        r::REASON_CONVERGED,
        r::REASON_WAITING_FOR_LAYOUT_SYNC,
        r::REASON_ADDING_MEMBERS,
        r::REASON_DRAINING_MEMBER,
        r::REASON_WAITING_FOR_REPLACEMENT,
        r::REASON_WAITING_FOR_MEMBERS,
        r::REASON_WAITING_FOR_DRAIN_SAFETY,
        r::REASON_DIRECT_NODE_LOCAL_POOL_MOVE_BLOCKED,
        r::REASON_WAITING_FOR_PREVIOUS_NODE_LOCAL_POOL_POD,
        r::REASON_DRAINING,
        r::REASON_REPLICATION_UNSAFE,
        r::REASON_IDENTITY_COLLISION,
        r::REASON_SELECTOR_CONFLICT,
        r::REASON_HOST_PATH_CONFLICT,
        r::REASON_DISK_LAYOUT_CHANGE_BLOCKED,
        r::REASON_UNSUPPORTED_KUBERNETES_VERSION,
        r::REASON_SCHEDULING_GATES_UNAVAILABLE,
        r::REASON_SCHEDULING_GATE_CAPABILITY_UNKNOWN,
        r::REASON_SCHEDULING_GATE_PROBE_PENDING,
        r::REASON_MEMBER_LIMIT_EXCEEDED,
        r::REASON_GARAGE_ROLE_LIMIT_EXCEEDED,
        r::REASON_STORAGE_ROLLOUT_WAITING,
        r::REASON_STORAGE_ROLLOUT_INITIALIZING,
        r::REASON_STORAGE_ROLLING_OUT,
        r::REASON_COMPLETED,
        r::REASON_STORAGE_DRAIN_IDLE,
        r::REASON_UNSUPPORTED_CONSISTENCY_MODE,
        r::REASON_WAITING_FOR_STORAGE_ROLLOUT,
        r::REASON_WAITING_FOR_CLUSTER_HEALTH,
        r::REASON_UNVERIFIED_PEERS_BLOCKED,
        r::REASON_IN_PROGRESS,
        r::REASON_FAILED,
        r::REASON_CYCLE_PROVISIONING,
        r::REASON_CYCLE_SYNCING,
        r::REASON_CYCLE_BLOCKED,
        r::REASON_CANCELLATION_BLOCKED,
        r::REASON_NODE_DRAIN_PREPARING,
        r::REASON_NODE_DRAIN_PREPARED,
        r::REASON_PREPARED_NOT_IN_LAYOUT,
        r::REASON_NODE_DRAIN_BLOCKED,
        r::REASON_MAINTENANCE_SUSPENDED,
        r::REASON_CLUSTER_MAINTENANCE_SUSPENDED,
        r::REASON_OPERATOR_SUSPENDED,
        r::REASON_APPLIED,
        r::REASON_WAITING_FOR_BIND,
        r::REASON_MODIFY_IN_PROGRESS,
        r::REASON_INFEASIBLE,
        r::REASON_UNSUPPORTED,
        r::REASON_RESIZING,
        r::REASON_CAPACITY_HELD,
        r::REASON_EXPANSION_REFUSED,
        r::REASON_SERVICE_MONITOR_KIND_MISSING,
        r::REASON_APPLY_FAILED,
        r::REASON_BUCKET_READY,
        r::REASON_BUCKET_LOOKUP_STUCK,
        r::REASON_METADATA_DECODE_ERROR,
        r::REASON_RETIRED_WORKLOAD_LIMIT,
        r::REASON_KEY_READY,
        r::REASON_GRANT_PRESENT,
        r::REASON_ACTIVE_REFERENCES,
        r::REASON_NO_REFERENCES,
        kubernetes::REASON_SCHEDULING_GATED,
    ];

    /// `metav1.Condition.reason`: 1..=1024 chars matching
    /// `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`.
    fn is_valid_reason(s: &str) -> bool {
        let b = s.as_bytes();
        let (Some(first), Some(last)) = (b.first(), b.last()) else {
            return false;
        };
        let allowed = |&c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':');
        b.len() <= 1024
            && first.is_ascii_alphabetic()
            && (last.is_ascii_alphanumeric() || *last == b'_')
            && b.iter().all(allowed)
    }

    /// Name part of a Kubernetes qualified name: at most 63 chars matching
    /// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`. Condition types carry no prefix, so this is
    /// the whole `metav1.Condition.type` rule for them.
    fn is_valid_type(s: &str) -> bool {
        let b = s.as_bytes();
        let (Some(first), Some(last)) = (b.first(), b.last()) else {
            return false;
        };
        b.len() <= 63
            && first.is_ascii_alphanumeric()
            && last.is_ascii_alphanumeric()
            && b.iter()
                .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    }

    #[test]
    fn every_string_is_declared_once() {
        let mut seen = HashSet::new();
        for s in TYPES.iter().chain(REASONS) {
            assert!(
                seen.insert(*s),
                "{s:?} is declared by more than one constant"
            );
        }
        assert_eq!(seen.len(), TYPES.len() + REASONS.len());
    }

    #[test]
    fn condition_types_are_valid() {
        // The legacy GarageNode `Draining` type is declared among the reasons.
        for t in TYPES.iter().chain([&r::REASON_DRAINING]) {
            assert!(is_valid_type(t), "invalid condition type {t:?}");
        }
    }

    #[test]
    fn reasons_match_the_condition_reason_pattern() {
        for r in REASONS {
            assert!(is_valid_reason(r), "invalid condition reason {r:?}");
        }
    }

    #[test]
    fn validators_reject_malformed_input() {
        for bad in ["", "1Ready", "Ready:", "Ready-Now", "Ready ", "Reädy"] {
            assert!(!is_valid_reason(bad), "{bad:?} accepted as reason");
        }
        assert!(is_valid_reason("A") && is_valid_reason("A_b,c:D_"));
        let too_long = "x".repeat(64);
        for bad in ["", "-Ready", "Ready.", "a/b", too_long.as_str()] {
            assert!(!is_valid_type(bad), "{bad:?} accepted as type");
        }
    }
}
