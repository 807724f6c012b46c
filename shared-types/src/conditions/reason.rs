//! Condition reasons written by the operator, grouped by the conditions that use them.
//!
//! A reason string that several conditions share is declared once, and its documentation lists
//! every condition (and object kind) that uses it. Constant names keep the `REASON_` prefix so
//! that call sites read the same whether the module is imported or not.

// --- General reconcile outcome (any kind) ---

/// `ReconcileSuccess`: the last reconcile of the object succeeded.
pub const REASON_RECONCILE_SUCCESS: &str = "ReconcileSuccess";
/// `ReconcileFailed`: the last reconcile of the object failed.
pub const REASON_RECONCILE_FAILED: &str = "ReconcileFailed";
/// `ReconcileInProgress`: a reconcile is running. Declared, not used today.
pub const REASON_RECONCILE_IN_PROGRESS: &str = "ReconcileInProgress";
/// `GarageAPIError`: a call to the Garage API failed. Declared, not used today.
pub const REASON_GARAGE_API_ERROR: &str = "GarageAPIError";
/// `NotFound`: something the object needs does not exist. Declared, not used today.
pub const REASON_NOT_FOUND: &str = "NotFound";
/// `Creating`: the object is being created. Declared, not used today.
pub const REASON_CREATING: &str = "Creating";
/// `Updating`: the object is being updated. Declared, not used today.
pub const REASON_UPDATING: &str = "Updating";
/// `Deleting`: the object is being deleted. Declared, not used today.
pub const REASON_DELETING: &str = "Deleting";
/// `WaitingForDependency`: blocked on another object. Declared, not used today.
pub const REASON_WAITING_FOR_DEPENDENCY: &str = "WaitingForDependency";
/// `ClusterNotReady`: the `GarageCluster` this object points at is not ready yet.
pub const REASON_CLUSTER_NOT_READY: &str = "ClusterNotReady";
/// `ClusterDeleting`: the `GarageCluster` this object points at is being deleted.
pub const REASON_CLUSTER_DELETING: &str = "ClusterDeleting";
/// `Expired`: the object has expired. Declared, not used today.
pub const REASON_EXPIRED: &str = "Expired";
/// `ValidationFailed`: the object failed validation. Declared, not used today.
pub const REASON_VALIDATION_FAILED: &str = "ValidationFailed";

// --- GarageCluster: admin access and gateway connectivity ---

/// `AdminTokenMissing`: `spec.admin.adminTokenSecretRef` is needed but not set.
pub const REASON_ADMIN_TOKEN_MISSING: &str = "AdminTokenMissing";
/// `AdminUnreachable`: the external Admin API cannot be reached (`ManagementHandleReady`).
pub const REASON_ADMIN_UNREACHABLE: &str = "AdminUnreachable";
/// `Connected`: gateway and storage reach each other in both directions
/// (`GatewayConnected`).
pub const REASON_GATEWAY_CONNECTED: &str = "Connected";
/// `PartiallyConnected`: only the gateway-to-storage direction works (`GatewayConnected`).
pub const REASON_PARTIALLY_CONNECTED: &str = "PartiallyConnected";
/// `ForwardOnly`: the gateway has no routable address, so one-way connectivity is accepted
/// as healthy (`GatewayConnected`).
pub const REASON_FORWARD_ONLY: &str = "ForwardOnly";
/// `NodesOffline`: no RPC connectivity in either direction (`GatewayConnected`).
pub const REASON_NODES_OFFLINE: &str = "NodesOffline";
/// `PerNodeNotImplemented`: a per-node LoadBalancer endpoint was requested on a path of the
/// reconciler that cannot provide it (`PublicEndpointReady`).
pub const REASON_PER_NODE_NOT_IMPLEMENTED: &str = "PerNodeNotImplemented";
/// `PendingRemoval`: stale gateway roles are queued but automatic application is off
/// (`GatewayTombstones`).
pub const REASON_GATEWAY_TOMBSTONES_PENDING: &str = "PendingRemoval";
/// `GatewayRolesPresent`: every operator-owned gateway holds its layout role
/// (`GatewayLayoutDegraded`).
pub const REASON_GATEWAY_ROLES_PRESENT: &str = "GatewayRolesPresent";
/// `GatewayRoleMissing`: some operator-owned gateway has no layout role
/// (`GatewayLayoutDegraded`).
pub const REASON_GATEWAY_ROLE_MISSING: &str = "GatewayRoleMissing";

// --- GarageCluster: quorum, federation and peers ---

/// `AllPartitionsQuorate`: every partition has a write quorum (`QuorumAtRisk`).
pub const REASON_QUORUM_OK: &str = "AllPartitionsQuorate";
/// `PartitionsBelowQuorum`: some partitions lack a write quorum (`QuorumAtRisk`).
pub const REASON_QUORUM_LOST: &str = "PartitionsBelowQuorum";
/// `AllConnected`: every remote cluster is reachable (`RemoteClustersHealthy`).
pub const REASON_ALL_REMOTES_CONNECTED: &str = "AllConnected";
/// `RemotesUnreachable`: some remote clusters are unreachable or stale
/// (`RemoteClustersHealthy`).
pub const REASON_REMOTES_STALE: &str = "RemotesUnreachable";
/// `MissingRPCPublicAddr`: a federated cluster advertises no `rpc_public_addr`
/// (`FederationConfigured`).
pub const REASON_MISSING_RPC_PUBLIC_ADDR: &str = "MissingRPCPublicAddr";
/// `Configured`: federation networking is set up (`FederationConfigured`).
pub const REASON_FEDERATION_CONFIGURED: &str = "Configured";
/// `AllReachable`: every Garage peer is reachable (`PeerUnreachable`).
pub const REASON_PEERS_REACHABLE: &str = "AllReachable";
/// `SustainedUnreachable`: a peer has been down past the threshold (`PeerUnreachable`).
pub const REASON_PEERS_UNREACHABLE: &str = "SustainedUnreachable";

// --- GarageCluster: storage topology, pools, rollout and drain ---

/// `WouldDropBelowReplicationFactor`: an Auto scale-down was refused because too few roles
/// would remain (`StorageScaleDownBlocked`).
pub const REASON_SCALE_DOWN_WOULD_BREAK_QUORUM: &str = "WouldDropBelowReplicationFactor";
/// `ScaleDownSafe`: no scale-down is being held back (`StorageScaleDownBlocked`).
pub const REASON_SCALE_DOWN_SAFE: &str = "ScaleDownSafe";
/// `Converged`: desired state reached. Used by `StorageTopologyReady` (membership and
/// history settled), `NodeLocalPoolsReady` (pools converged) and `StorageRolloutReady`
/// (every identity on the desired revision).
pub const REASON_CONVERGED: &str = "Converged";
/// `WaitingForLayoutSync`: another layout transition, finalization step or removal-safety
/// proof must finish first. Used by `StorageTopologyReady` and `NodeLocalPoolsReady`.
pub const REASON_WAITING_FOR_LAYOUT_SYNC: &str = "WaitingForLayoutSync";
/// `AddingMembers`: waiting for new default-group members to get their roles
/// (`StorageTopologyReady`).
pub const REASON_ADDING_MEMBERS: &str = "AddingMembers";
/// `DrainingMember`: one surplus default-group member is being drained
/// (`StorageTopologyReady`).
pub const REASON_DRAINING_MEMBER: &str = "DrainingMember";
/// `WaitingForReplacement`: new pool members must join before old ones are drained
/// (`NodeLocalPoolsReady`).
pub const REASON_WAITING_FOR_REPLACEMENT: &str = "WaitingForReplacement";
/// `WaitingForMembers`: a pool selector matches no Node, or its members are not ready yet
/// (`NodeLocalPoolsReady`).
pub const REASON_WAITING_FOR_MEMBERS: &str = "WaitingForMembers";
/// `WaitingForDrainSafety`: drain preflight (consistency mode, rollout, health, peer policy)
/// has not passed yet (`NodeLocalPoolsReady`).
pub const REASON_WAITING_FOR_DRAIN_SAFETY: &str = "WaitingForDrainSafety";
/// `DirectNodeLocalPoolMoveBlocked`: a Node was moved straight from one pool to another; it
/// must leave and be drained from the first pool beforehand (`NodeLocalPoolsReady`).
pub const REASON_DIRECT_NODE_LOCAL_POOL_MOVE_BLOCKED: &str = "DirectNodeLocalPoolMoveBlocked";
/// `WaitingForPreviousNodeLocalPoolPod`: an older pool Pod is still terminating on the
/// Node (`NodeLocalPoolsReady`).
pub const REASON_WAITING_FOR_PREVIOUS_NODE_LOCAL_POOL_POD: &str =
    "WaitingForPreviousNodeLocalPoolPod";
/// `Draining`: something is leaving the layout. Reason of `NodeLocalPoolsReady` (a retired
/// pool member), `StorageDrainReady` (the drain actor removes roles and proves block
/// migration) and `Cycling` on a `GarageNode` (the old node of a cycle drains). The same
/// string is also the legacy `GarageNode` condition type `Draining`, which is kept for
/// compatibility only.
pub const REASON_DRAINING: &str = "Draining";
/// `ReplicationUnsafe`: draining the next member would break the replication factor
/// (`NodeLocalPoolsReady`).
pub const REASON_REPLICATION_UNSAFE: &str = "ReplicationUnsafe";
/// `IdentityCollision`: two `GarageNode`s report one Garage node ID; pool membership
/// changes stop (`NodeLocalPoolsReady`).
pub const REASON_IDENTITY_COLLISION: &str = "IdentityCollision";
/// `SelectorConflict`: one Node is matched by the selectors of several pools
/// (`NodeLocalPoolsReady`).
pub const REASON_SELECTOR_CONFLICT: &str = "SelectorConflict";
/// `HostPathConflict`: a pool of another `GarageCluster` uses an overlapping HostPath on the
/// same Node (`NodeLocalPoolsReady`).
pub const REASON_HOST_PATH_CONFLICT: &str = "HostPathConflict";
/// `DiskLayoutChangeBlocked`: a node-local pool's data paths would lose or remap a data path
/// that its rolled-out disk layout records, or that record disagrees with the DaemonSet's
/// actual HostPath mounts; nothing of the pool is updated (`NodeLocalPoolsReady`).
pub const REASON_DISK_LAYOUT_CHANGE_BLOCKED: &str = "DiskLayoutChangeBlocked";
/// `UnsupportedKubernetesVersion`: the API server is older than 1.27
/// (`NodeLocalPoolsReady`).
pub const REASON_UNSUPPORTED_KUBERNETES_VERSION: &str = "UnsupportedKubernetesVersion";
/// `SchedulingGatesUnavailable`: Pod scheduling gates are rejected or ignored by the control
/// plane (`NodeLocalPoolsReady`).
pub const REASON_SCHEDULING_GATES_UNAVAILABLE: &str = "SchedulingGatesUnavailable";
/// `SchedulingGateCapabilityUnknown`: the scheduling-gate probe gave no clear answer
/// (`NodeLocalPoolsReady`).
pub const REASON_SCHEDULING_GATE_CAPABILITY_UNKNOWN: &str = "SchedulingGateCapabilityUnknown";
/// `SchedulingGateProbePending`: the gated probe Pod still waits for evidence from the
/// scheduler (`NodeLocalPoolsReady`).
pub const REASON_SCHEDULING_GATE_PROBE_PENDING: &str = "SchedulingGateProbePending";
/// `MemberLimitExceeded`: the pool selectors pick more Nodes than one cluster may hold as
/// node-local identities (255) (`NodeLocalPoolsReady`).
pub const REASON_MEMBER_LIMIT_EXCEEDED: &str = "MemberLimitExceeded";
/// `GarageRoleLimitExceeded`: the Garage layout has no room left for another
/// positive-capacity role (256) (`NodeLocalPoolsReady`).
pub const REASON_GARAGE_ROLE_LIMIT_EXCEEDED: &str = "GarageRoleLimitExceeded";
/// `Waiting`: the rollout cannot pick its next pod yet (`StorageRolloutReady`).
pub const REASON_STORAGE_ROLLOUT_WAITING: &str = "Waiting";
/// `Initializing`: identities are still being created or joining their first layout
/// (`StorageRolloutReady`).
pub const REASON_STORAGE_ROLLOUT_INITIALIZING: &str = "Initializing";
/// `RollingOut`: one pod is being replaced and the operator waits for that exact
/// replacement (`StorageRolloutReady`).
pub const REASON_STORAGE_ROLLING_OUT: &str = "RollingOut";
/// `Completed`: the work has finished. Reason of `StorageDrainReady` (terminal evidence
/// complete, handoff still pending) and of `LegacySTSMigrated=True`.
pub const REASON_COMPLETED: &str = "Completed";
/// `Idle`: no storage drain is running (`StorageDrainReady`).
pub const REASON_STORAGE_DRAIN_IDLE: &str = "Idle";
/// `UnsupportedConsistencyMode`: an automatic drain needs `consistencyMode` set to the
/// literal `consistent` (`StorageDrainReady`).
pub const REASON_UNSUPPORTED_CONSISTENCY_MODE: &str = "UnsupportedConsistencyMode";
/// `WaitingForStorageRollout`: not every managed process is proven to run in consistent
/// mode yet (`StorageDrainReady`).
pub const REASON_WAITING_FOR_STORAGE_ROLLOUT: &str = "WaitingForStorageRollout";
/// `WaitingForClusterHealth`: the cluster is not healthy enough to begin a drain
/// (`StorageDrainReady`).
pub const REASON_WAITING_FOR_CLUSTER_HEALTH: &str = "WaitingForClusterHealth";
/// `UnverifiedPeersBlocked`: external or federated positive-capacity peers exist and the
/// unverified-peer policy is `Block` (`StorageDrainReady`).
pub const REASON_UNVERIFIED_PEERS_BLOCKED: &str = "UnverifiedPeersBlocked";
/// `CapacityLow`: a storage member's data or metadata partition has less free space than the
/// threshold. Reason of `StorageCapacityLow=True`, and of `StorageDrainReady=False` and
/// `StorageRolloutReady=False` while a new drain or a new pod replacement waits for it.
pub const REASON_STORAGE_CAPACITY_LOW: &str = "CapacityLow";
/// `CapacitySufficient`: every partition Garage reports space for has at least the threshold
/// free (`StorageCapacityLow=False`).
pub const REASON_STORAGE_CAPACITY_SUFFICIENT: &str = "CapacitySufficient";
/// `InProgress`: the legacy StatefulSet migration is still running
/// (`LegacySTSMigrated=False`).
pub const REASON_IN_PROGRESS: &str = "InProgress";
/// `Failed`: the legacy StatefulSet migration failed (`LegacySTSMigrated=False`).
pub const REASON_FAILED: &str = "Failed";

// --- GarageNode: cycle, prepared drain and suspension ---

/// `SiblingProvisioning`: the replacement sibling of a cycle is being created (`Cycling`).
pub const REASON_CYCLE_PROVISIONING: &str = "SiblingProvisioning";
/// `SiblingSyncing`: the replacement sibling of a cycle is catching up (`Cycling`).
pub const REASON_CYCLE_SYNCING: &str = "SiblingSyncing";
/// `CycleBlocked`: the cycle cannot proceed; nothing was changed (`Cycling=False`).
pub const REASON_CYCLE_BLOCKED: &str = "CycleBlocked";
/// `CancellationBlocked`: withdrawing an in-flight cycle is not safe at this point, so the
/// cycle stays blocked (`Cycling`).
pub const REASON_CANCELLATION_BLOCKED: &str = "CancellationBlocked";
/// `Preparing`: the prepared drain of the node is in progress (`DrainPrepared`).
pub const REASON_NODE_DRAIN_PREPARING: &str = "Preparing";
/// `PreparedForDeletion`: the role is gone and the block proof is complete, so the node may
/// be deleted (`DrainPrepared=True`).
pub const REASON_NODE_DRAIN_PREPARED: &str = "PreparedForDeletion";
/// `PreparedNotInLayout`: the node never got a Garage identity or process, so it counts as
/// prepared without any drain work (`DrainPrepared=True`).
pub const REASON_PREPARED_NOT_IN_LAYOUT: &str = "PreparedNotInLayout";
/// `PreparationBlocked`: the prepared drain cannot proceed (`DrainPrepared=False`).
pub const REASON_NODE_DRAIN_BLOCKED: &str = "PreparationBlocked";
/// `MaintenanceSuspended`: the user paused the node through its maintenance settings
/// (`Suspended`).
pub const REASON_MAINTENANCE_SUSPENDED: &str = "MaintenanceSuspended";
/// `ClusterMaintenanceSuspended`: the parent cluster is in maintenance (`Suspended`).
pub const REASON_CLUSTER_MAINTENANCE_SUSPENDED: &str = "ClusterMaintenanceSuspended";
/// `OperatorSuspended`: a cluster-level operation of the operator (such as a factor
/// migration) holds the node (`Suspended`).
pub const REASON_OPERATOR_SUSPENDED: &str = "OperatorSuspended";

// --- VolumeAttributesClass (GarageNode; rolled up on GarageCluster) ---

/// `Applied`: the requested settings are in effect. Reason of
/// `VolumeAttributesClassApplied=True` on a `GarageNode` (every claim reports the desired
/// class), of `LifecycleConfigured=True` on a `GarageBucket` (rules pushed to Garage) and of
/// `ServiceMonitorReady=True` on a `GarageCluster` (its ServiceMonitor in place).
pub const REASON_APPLIED: &str = "Applied";
/// `WaitingForBind`: a managed claim is not bound yet, so its class cannot be changed
/// (`VolumeAttributesClassApplied`).
pub const REASON_WAITING_FOR_BIND: &str = "WaitingForBind";
/// `ModifyInProgress`: the CSI driver is still applying a class change
/// (`VolumeAttributesClassApplied`).
pub const REASON_MODIFY_IN_PROGRESS: &str = "ModifyInProgress";
/// `Infeasible`: the driver refused the class or the class does not exist
/// (`VolumeAttributesClassApplied=False`).
pub const REASON_INFEASIBLE: &str = "Infeasible";
/// `Unsupported`: the API server dropped or forbade the class field because the feature is
/// unavailable (`VolumeAttributesClassApplied=False`).
pub const REASON_UNSUPPORTED: &str = "Unsupported";

// --- Claim expansion (GarageNode; rolled up on GarageCluster) ---

/// `Resizing`: a claim asks for more than its volume reports yet, or its file system resize
/// is pending (`StorageExpansionInProgress=True`).
pub const REASON_RESIZING: &str = "Resizing";
/// `CapacityHeld`: a member's layout capacity waits for its claims to report the new size
/// (`StorageExpansionInProgress=True` on a `GarageCluster`).
pub const REASON_CAPACITY_HELD: &str = "CapacityHeld";
/// `ExpansionRefused`: the API server refused to grow a claim, most often because its
/// StorageClass does not set `allowVolumeExpansion` (`StorageExpansionBlocked=True`).
pub const REASON_EXPANSION_REFUSED: &str = "ExpansionRefused";
/// `KindNotInstalled`: monitoring is on but the API server serves no ServiceMonitor kind
/// (`ServiceMonitorReady=False`).
pub const REASON_SERVICE_MONITOR_KIND_MISSING: &str = "KindNotInstalled";

// --- GarageBucket, GarageKey and GarageReferenceGrant ---

/// `ApplyFailed`: pushing lifecycle rules to Garage failed (`LifecycleConfigured=False`), or
/// the API server refused the cluster's ServiceMonitor (`ServiceMonitorReady=False`).
pub const REASON_APPLY_FAILED: &str = "ApplyFailed";
/// `BucketReady`: reason of `Ready=True` on a `GarageBucket`.
pub const REASON_BUCKET_READY: &str = "BucketReady";
/// `AdminAPITimeout`: repeated Admin API timeouts while reading a bucket
/// (`BucketLookupStuck`).
pub const REASON_BUCKET_LOOKUP_STUCK: &str = "AdminAPITimeout";
/// `MetadataDecodeError`: Garage returned bucket info that cannot be decoded
/// (`BucketMetadataDegraded`).
pub const REASON_METADATA_DECODE_ERROR: &str = "MetadataDecodeError";
/// `RetiredWorkloadLimitReached`: a storage rollout saw the actor's workload replaced more
/// times than it remembers; it stops until someone inspects it (`StorageRolloutReady=False`).
pub const REASON_RETIRED_WORKLOAD_LIMIT: &str = "RetiredWorkloadLimitReached";
/// `KeyReady`: reason of `Ready=True` on a `GarageKey`.
pub const REASON_KEY_READY: &str = "KeyReady";
/// `GrantPresent`: reason of `Ready=True` on a `GarageReferenceGrant`.
pub const REASON_GRANT_PRESENT: &str = "GrantPresent";
/// `ActiveReferences`: some object currently relies on the grant (`InUse=True`).
pub const REASON_ACTIVE_REFERENCES: &str = "ActiveReferences";
/// `NoReferences`: nothing relies on the grant at the moment (`InUse=False`).
pub const REASON_NO_REFERENCES: &str = "NoReferences";

// --- GarageCluster readiness and layout (Rust reconciler) ---

/// `ClusterReady`: reason of `Ready=True` on a `GarageCluster`.
pub const REASON_CLUSTER_READY: &str = "ClusterReady";
/// `NotAllReplicasReady`: some storage members have no ready pod or no known node ID yet
/// (`Ready=False`).
pub const REASON_NOT_ALL_REPLICAS_READY: &str = "NotAllReplicasReady";
/// `StorageTopologyNotReady`: members are still joining the layout (`Ready=False`).
pub const REASON_STORAGE_TOPOLOGY_NOT_READY: &str = "StorageTopologyNotReady";
/// `LayoutNotReady`: the layout cannot be changed safely right now (unsettled history, staged
/// changes the operator did not make) or Garage does not report healthy (`Ready=False`).
pub const REASON_LAYOUT_NOT_READY: &str = "LayoutNotReady";
/// `RoleRemovalUnavailable`: a storage scale-down was requested, but removing a role needs a
/// prepared deletion with a drain proof, which this operator version does not implement, so
/// nothing is removed (`StorageScaleDownBlocked=True`).
pub const REASON_ROLE_REMOVAL_UNAVAILABLE: &str = "RoleRemovalUnavailable";
/// `IdentityChanged`: a member's pod reports a Garage node ID other than the one recorded for
/// it; the new identity is not put into the layout (`Ready=False` on the `GarageNode`).
pub const REASON_IDENTITY_CHANGED: &str = "IdentityChanged";
/// `RetiredClaims`: claims the node's StatefulSet would mount hold an identity that left the
/// layout through a proven drain; the node does not start on them until the user deletes them
/// (`Ready=False` on the `GarageNode`).
pub const REASON_RETIRED_CLAIMS: &str = "RetiredClaims";
/// `ClaimDeleting`: a claim of a live member was deleted; its reservation keeps it (and its
/// volume) until the member is drained (`Ready=False` on the `GarageNode`).
pub const REASON_CLAIM_DELETING: &str = "ClaimDeleting";
/// `ClaimReplaced`: a claim recorded for the pod a storage rollout replaces is gone, being
/// deleted or was recreated under another UID; the rollout stops with no layout change
/// (`StorageRolloutReady=False`).
pub const REASON_CLAIM_REPLACED: &str = "ClaimReplaced";
/// `ForeignStagedChanges`: Garage's staging area holds changes the operator did not make; it
/// will not apply over them (`Ready=False`).
pub const REASON_FOREIGN_STAGED_CHANGES: &str = "ForeignStagedChanges";
