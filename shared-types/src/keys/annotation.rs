//! Annotation keys under `garage.rajsingh.info/`.
//!
//! The first sections hold requests that users put on `GarageCluster`, `GarageNode` and
//! `GarageBucket` objects. Unless a constant says otherwise, a request is one-shot: the operator
//! acts on it, deletes it on success and leaves it in place after a failure so the request is
//! retried. The later sections hold bookkeeping the operator writes itself, on its own custom
//! resources and on the Kubernetes objects it creates; users must not edit those.
//!
//! Three keys serve both as annotation and as label and are therefore declared once, in
//! [`super::label`]: [`LABEL_KUBERNETES_NODE`](super::label::LABEL_KUBERNETES_NODE),
//! [`LABEL_COSI_BUCKET_ID`](super::label::LABEL_COSI_BUCKET_ID) and
//! [`LABEL_COSI_ACCOUNT_ID`](super::label::LABEL_COSI_ACCOUNT_ID). Per-cluster annotations on
//! Kubernetes Nodes have generated names; see [`super::generated`].

// --- User requests on GarageCluster ---

/// User request on a `GarageCluster` (value `true`): take a metadata snapshot on every node.
/// The operator removes it once handled and reports the result in `status.lastOperation`.
pub const ANNOTATION_TRIGGER_SNAPSHOT: &str = "garage.rajsingh.info/trigger-snapshot";
/// Request on a `GarageCluster` to start a Garage repair of the named kind on all nodes
/// (`Tables`, `Blocks`, `Versions`, `MultipartUploads`, `BlockRefs`, `BlockRc`, `Rebalance`,
/// `Aliases`; `Scrub` is refused). Set by users, and also by the bucket controller on the parent
/// cluster after repeated metadata decode errors. Removed by the operator when done.
pub const ANNOTATION_TRIGGER_REPAIR: &str = "garage.rajsingh.info/trigger-repair";
/// User request on a `GarageCluster` that drives the scrub worker (`start`, `pause`, `resume`
/// or `cancel`); removed by the operator once handled.
pub const ANNOTATION_SCRUB_COMMAND: &str = "garage.rajsingh.info/scrub-command";
/// Declared for `GarageCluster` (integer scrub tranquility) but ignored by the controllers;
/// users should set `spec.workers.scrubTranquility` instead.
pub const ANNOTATION_SCRUB_TRANQUILITY: &str = "garage.rajsingh.info/scrub-tranquility";
/// User request on a `GarageCluster` (value `true`): throw away layout changes that are staged
/// but not applied. Removed by the operator when done.
pub const ANNOTATION_REVERT_LAYOUT: &str = "garage.rajsingh.info/revert-layout";
/// User request on a `GarageCluster` to reset the block resync back-off, either for all blocks
/// (`true`) or for a comma-separated list of block hashes. Removed by the operator when done.
pub const ANNOTATION_RETRY_BLOCK_RESYNC: &str = "garage.rajsingh.info/retry-block-resync";
/// User request on a `GarageCluster` holding comma-separated block hashes: permanently delete
/// the objects that reference those blocks. Removed by the operator when done.
pub const ANNOTATION_PURGE_BLOCKS: &str = "garage.rajsingh.info/purge-blocks";
/// User override on a `GarageCluster` (value `true`) that lets a layout be applied with fewer
/// roles than the replication factor (legacy/bootstrap use). It does not approve gateway
/// tombstones. The operator only reads it and never removes it.
pub const ANNOTATION_FORCE_LAYOUT_APPLY: &str = "garage.rajsingh.info/force-layout-apply";
/// User request on a `GarageCluster` listing `nodeId@host:port` peers (comma-separated) that
/// Garage should connect to once; removed by the operator when done.
pub const ANNOTATION_CONNECT_NODES: &str = "garage.rajsingh.info/connect-nodes";
/// User request on a `GarageCluster` (presence, normally `true`) for Garage's cluster-wide
/// skip-dead-nodes recovery of the current layout version. Removed by the operator together
/// with [`ANNOTATION_ALLOW_MISSING_DATA`] after success.
pub const ANNOTATION_SKIP_DEAD_NODES: &str = "garage.rajsingh.info/skip-dead-nodes";
/// User opt-in on a `GarageCluster` (value `true`) that goes with
/// [`ANNOTATION_SKIP_DEAD_NODES`] and accepts that data may be lost during the recovery.
pub const ANNOTATION_ALLOW_MISSING_DATA: &str = "garage.rajsingh.info/allow-missing-data";
/// User consent on a deleting federated or edge `GarageCluster` (must be exactly `true`) to
/// give up operator-generated Admin-token rows that could not be revoked remotely.
pub const ANNOTATION_FORCE_DELETE_UNREVOKED_OPERATOR_TOKENS: &str =
    "garage.rajsingh.info/force-delete-unrevoked-operator-tokens";
/// User opt-in on a `GarageCluster` (value `true`) to move a released `GARAGE_RPC_SECRET`
/// environment override to `network.rpcSecretRef`; permits that secret reference change.
pub const ANNOTATION_MIGRATE_LEGACY_RPC_SECRET: &str =
    "garage.rajsingh.info/migrate-legacy-rpc-secret";
/// User statement on a `GarageCluster` (value `true`) that reserved environment overrides on
/// running pods (such as `GARAGE_CONFIG_FILE`) match the configuration the operator renders.
pub const ANNOTATION_ACKNOWLEDGE_LEGACY_CONFIG_MIGRATION: &str =
    "garage.rajsingh.info/acknowledge-legacy-config-migration";
/// User request (value must be `true`) for a prepared, data-preserving removal. On a
/// `GarageCluster` it prepares site retirement with `deletionPolicy: Drain` and must be present
/// before deletion; it is frozen while a storage drain runs. On a `GarageNode` it drains the
/// positive-capacity role while the process stays live; the node may be deleted only after
/// `DrainPrepared=True`. Not valid on gateway nodes. The parent controller also sets it on
/// generated nodes it retires (pool selector removal, Auto-mode scale-down).
pub const ANNOTATION_DRAIN: &str = "garage.rajsingh.info/drain";
/// User request on a `GarageCluster` carrying a nonce (change it to retry): redo the exact pod
/// replacement recorded in `status.storageRollout`. It cannot be removed while that rollout is
/// active.
pub const ANNOTATION_RECOVER_STORAGE_ROLLOUT: &str = "garage.rajsingh.info/recover-storage-rollout";
/// User request on a `GarageCluster` (value `true`): clear `LegacySTSMigrated` and run the move
/// to per-`GarageNode` workloads again. Removed by the operator when done.
pub const ANNOTATION_RETRY_MIGRATION: &str = "garage.rajsingh.info/retry-migration";
/// User request on a `GarageCluster` (`factor=N` or `factor=N,force`) for a destructive,
/// coordinated change of the replication factor. It must arrive in the same update as the
/// `replication.factor` change and is moved into `status.factorMigration` by the operator.
pub const ANNOTATION_PURGE_CLUSTER_LAYOUT: &str = "garage.rajsingh.info/purge-cluster-layout";
/// User request on a `GarageCluster` (value `true`) to stop a running factor migration; data
/// already purged on disk stays purged. Removed by the operator when done.
pub const ANNOTATION_PURGE_CLUSTER_LAYOUT_ABORT: &str =
    "garage.rajsingh.info/purge-cluster-layout-abort";
/// User acknowledgement on a `GarageCluster`, holding a static-credential revision, that Consul
/// accepts both the old and new credential revisions while the pinned snapshot is missing.
pub const ANNOTATION_CONSUL_CREDENTIAL_ROTATION_READY: &str =
    "garage.rajsingh.info/consul-credential-rotation-ready";

// --- User requests on GarageNode ---

/// High-risk user statement on a `GarageNode` that its source storage is gone for good. The
/// value is the node's full 64-hex Garage ID (compared in lower case); it requires
/// [`ANNOTATION_DRAIN`] and cannot be changed or removed once set.
pub const ANNOTATION_ACKNOWLEDGE_LOST_SOURCE: &str = "garage.rajsingh.info/acknowledge-lost-source";
/// User request on an existing StatefulSet-backed storage `GarageNode` (value `true`): replace it
/// add-before-remove by a sibling with a fresh identity. Progress shows in
/// `status.cyclePhase`; not accepted at creation.
pub const ANNOTATION_CYCLE: &str = "garage.rajsingh.info/cycle";
/// Declared for `GarageNode` (meant to keep a node out of the layout for a while) but ignored
/// by the controllers.
pub const ANNOTATION_SKIP_LAYOUT: &str = "garage.rajsingh.info/skip-layout";
/// Former pause switch, kept as an alias: `"true"` on a `GarageCluster` or a `GarageNode`
/// suspends it exactly like `spec.maintenance.suspended`, which is the documented switch.
pub const ANNOTATION_PAUSE_RECONCILE: &str = "garage.rajsingh.info/pause-reconcile";

// --- User requests on GarageBucket ---

/// User request on a `GarageBucket` (value `true`): delete stale unfinished multipart uploads.
/// Removed by the operator when done.
pub const ANNOTATION_CLEANUP_MPU: &str = "garage.rajsingh.info/cleanup-mpu";
/// User setting on a `GarageBucket` giving the minimum age (such as `24h` or `7d`) of uploads
/// removed by [`ANNOTATION_CLEANUP_MPU`]; 24 hours when absent. Admission refuses a value that
/// is not a duration, and the operator removes it with the request.
pub const ANNOTATION_CLEANUP_MPU_OLDER_THAN: &str = "garage.rajsingh.info/cleanup-mpu-older-than";

// --- Operator bookkeeping on GarageCluster ---

/// Written on the v1beta1 view of a `GarageCluster` during conversion: comma-separated markers
/// (`gateway-tier-present`, `node-local-pools-present`) of v1beta2-only content. Reserved.
pub const ANNOTATION_V1BETA2_ONLY: &str = "garage.rajsingh.info/v1beta2-only";
/// Written on the v1beta1 view of a `GarageCluster` during conversion: the complete v1beta2
/// `spec.gateway` as JSON, so it survives a round trip. Reserved.
pub const ANNOTATION_V1BETA2_GATEWAY_TIER: &str = "garage.rajsingh.info/v1beta2-gateway-tier";
/// Written on the v1beta1 view of a `GarageCluster` during conversion: the v1beta2
/// `spec.storage.nodeLocalPools` as JSON. Reserved.
pub const ANNOTATION_V1BETA2_NODE_LOCAL_POOLS: &str =
    "garage.rajsingh.info/v1beta2-node-local-pools";
/// Fingerprint of the RPC secret pinned by the operator on the `GarageCluster` and on the
/// pinned RPC Secret; a mismatch makes the operator stop rather than continue.
pub const ANNOTATION_RPC_IDENTITY_SHA256: &str = "garage.rajsingh.info/rpc-identity-sha256";
/// Written by the operator on the pinned RPC Secret to describe where the RPC identity came
/// from.
pub const ANNOTATION_RPC_IDENTITY_SOURCE: &str = "garage.rajsingh.info/rpc-identity-source";
/// Revision of the current immutable static-credential snapshot, written by the operator on the
/// `GarageCluster` and on the snapshot Secret.
pub const ANNOTATION_STATIC_CREDENTIALS_REVISION: &str =
    "garage.rajsingh.info/static-credentials-revision";
/// Name of the current static-credential snapshot Secret, written by the operator on the
/// `GarageCluster`.
pub const ANNOTATION_STATIC_CREDENTIALS_SECRET: &str =
    "garage.rajsingh.info/static-credentials-secret";
/// Encoded list of the Secret key selectors captured in the static-credential snapshot,
/// written by the operator on the `GarageCluster`.
pub const ANNOTATION_STATIC_CREDENTIALS_SOURCES: &str =
    "garage.rajsingh.info/static-credentials-sources";
/// ID of the operator's own Admin-API token row in Garage, pinned by the operator on the
/// `GarageCluster`.
pub const ANNOTATION_OPERATOR_ADMIN_TOKEN_ID: &str = "garage.rajsingh.info/operator-admin-token-id";
/// Marker kept by the operator on the `GarageCluster` to track the lifecycle of its internal
/// metrics token.
pub const ANNOTATION_OPERATOR_METRICS_TOKEN_INTENT: &str =
    "garage.rajsingh.info/operator-metrics-token-intent";
/// Identity of the one install of the operator that manages a `GarageCluster`:
/// `<lease namespace>/<lease name>` of that install's reconciler. Recorded by the reconciler
/// once, when it finds the key absent; any other install (a second release, or any other
/// value) then leaves the cluster alone. The one user edit it admits is a hand-over: stop the
/// named install, then overwrite the value with the identity of the install that takes over.
pub const ANNOTATION_MANAGED_BY_INSTALL: &str = "garage.rajsingh.info/managed-by-install";

// --- Operator bookkeeping on other custom resources ---

/// Count of failed finalizer attempts, kept by the operator on any custom resource it is
/// finalizing. Diagnostic only: it never permits leaking the remote object.
pub const ANNOTATION_FINALIZATION_RETRIES: &str = "garage.rajsingh.info/finalization-retries";
/// Set by the operator on a `GarageNode` while a cluster-level operation (such as a factor
/// migration) owns it; the value is that operation's ID and ordinary reconciling pauses.
pub const ANNOTATION_OPERATOR_SUSPENDED: &str = "garage.rajsingh.info/operator-suspended";
/// Identity pin written by the operator on a pool-backed `GarageNode` so a retained HostPath is
/// recovered as the same Garage node during a cold restart. Immutable.
pub const ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID: &str =
    "garage.rajsingh.info/node-local-pool-recovery-node-id";
/// Nonce written by the operator on a replacement Auto-mode `GarageNode`; its hash is recorded
/// in `status.autoModePvcHandoffs[].replacementReservationHash`.
pub const ANNOTATION_AUTO_MODE_PVC_HANDOFF_NONCE: &str =
    "garage.rajsingh.info/auto-mode-pvc-handoff-nonce";
/// Consecutive Admin API timeouts while reading the bucket, counted by the operator on a
/// `GarageBucket`; three in a row raise `BucketLookupStuck`.
pub const ANNOTATION_BUCKET_LOOKUP_TIMEOUTS: &str = "garage.rajsingh.info/bucket-lookup-timeouts";
/// Consecutive bucket-info decode errors, counted by the operator on a `GarageBucket`; three
/// in a row make the operator request a `Tables` repair.
pub const ANNOTATION_BUCKET_DECODE_ERRORS: &str = "garage.rajsingh.info/bucket-decode-errors";
/// Private, hard-to-guess alias the operator reserves on a `GarageBucket` before creating the
/// bucket in Garage, so a crash in between can be recovered.
pub const ANNOTATION_BUCKET_RESERVATION_ALIAS: &str =
    "garage.rajsingh.info/bucket-reservation-alias";
/// Nonce written by the operator on a `GarageKey` so that replacing the key survives a crash.
pub const ANNOTATION_KEY_REPLACEMENT_NONCE: &str = "garage.rajsingh.info/key-replacement-nonce";
/// Access key ID that the operator resolved from `spec.importKey` and pinned on the
/// `GarageKey`.
pub const ANNOTATION_RESOLVED_IMPORT_ACCESS_KEY_ID: &str =
    "garage.rajsingh.info/resolved-import-access-key-id";
/// Which secret the S3 material of a `GarageKey` without `spec.importKey` is derived from,
/// recorded by the operator before the key is first written to Garage, so that no later pass
/// derives it differently: `key-derivation-secret` (the cluster's `<cluster>-key-derivation`
/// Secret, which no Garage pod mounts) for keys created since that Secret was introduced,
/// `rpc-secret` (the cluster's RPC secret) for keys that already existed in Garage then, and
/// `rpc-secret-bytes` / `rpc-secret-bytes-spec-name` for keys the Go operator derived from the
/// bytes of the RPC secret (by object name, or by `spec.name` before its 0.7.4). Users must not
/// edit it: another value means other credentials.
pub const ANNOTATION_KEY_DERIVATION: &str = "garage.rajsingh.info/key-derivation";

// --- Operator bookkeeping on COSI shadow objects ---

/// State of a COSI shadow `GarageBucket`/`GarageKey` (`pending` or `bound`), written by the
/// COSI provisioner; ordinary controllers skip pending shadows.
pub const ANNOTATION_COSI_PROVISIONING_STATE: &str = "garage.rajsingh.info/cosi-provisioning-state";
/// Private temporary alias the COSI provisioner puts on a shadow bucket for crash recovery.
pub const ANNOTATION_COSI_RESERVATION_ALIAS: &str = "garage.rajsingh.info/cosi-reservation-alias";
/// UID-bound marker on a shadow bucket meaning "delete only in Kubernetes": remote cleanup is
/// skipped. Written by the COSI provisioner.
pub const ANNOTATION_COSI_RETAIN: &str = "garage.rajsingh.info/cosi-retain";
/// Identity of the reservation owner, written by the COSI provisioner on shadow objects.
pub const ANNOTATION_COSI_RESERVATION_OWNER: &str = "garage.rajsingh.info/cosi-reservation-owner";
/// Set to `true` by the COSI provisioner on a shadow bucket once its reservation is complete.
pub const ANNOTATION_COSI_RESERVATION_READY: &str = "garage.rajsingh.info/cosi-reservation-ready";
/// ServiceAccount tied to the access grant, written by the COSI provisioner on a shadow key.
pub const ANNOTATION_COSI_SERVICE_ACCOUNT_NAME: &str =
    "garage.rajsingh.info/cosi-service-account-name";
/// Written by the COSI provisioner on a shadow key to tie an adopted reservation from before
/// UID tracking to exactly one BucketAccess.
pub const ANNOTATION_COSI_LEGACY_BUCKET_ACCESS_UID: &str =
    "garage.rajsingh.info/cosi-legacy-bucket-access-uid";

// --- Operator bookkeeping on child objects ---

/// Revision of the desired pod spec, stamped by the operator on workload pod templates. Users
/// may not set it in pool `podAnnotations`.
pub const ANNOTATION_POD_SPEC_HASH: &str = "garage.rajsingh.info/pod-spec-hash";
/// Revision of the rendered Garage configuration, stamped by the operator on workload pod
/// templates. Reserved.
pub const ANNOTATION_CONFIG_HASH: &str = "garage.rajsingh.info/config-hash";
/// Garage node ID. Reserved on pods (users may not set it in pool `podAnnotations`); on an
/// operator-managed claim, the identity whose metadata or data the claim holds, written by the
/// operator once its pod reported it.
pub const ANNOTATION_NODE_ID: &str = "garage.rajsingh.info/node-id";
/// Garage node ID of an identity that left the layout through a proven drain, written by the
/// operator on each claim it retained (with its reservation released). A GarageNode whose
/// StatefulSet would mount such a claim is not started until the user deletes the claim.
pub const ANNOTATION_RETIRED_NODE_ID: &str = "garage.rajsingh.info/retired-node-id";
/// Description of the persisted drive layout, recorded by the operator on StatefulSets and
/// DaemonSets (and their config revisions) and checked before every update.
pub const ANNOTATION_STORAGE_DISK_LAYOUT: &str = "garage.rajsingh.info/storage-disk-layout";
/// Rollout input token written by the operator on a per-`GarageNode` StatefulSet.
pub const ANNOTATION_STORAGE_ROLLOUT_INPUT: &str = "garage.rajsingh.info/storage-rollout-input";
/// Set to `true` by the operator on a pool DaemonSet while its replacement is fenced off.
pub const ANNOTATION_ROLLOUT_ADOPTION_FENCE: &str = "garage.rajsingh.info/rollout-adoption-fence";
/// Membership fence target recorded by the operator on a pool DaemonSet.
pub const ANNOTATION_NODE_LOCAL_POOL_MEMBERSHIP_FENCE: &str =
    "garage.rajsingh.info/node-local-pool-membership-fence";
/// Key of the activation label a pool schedules on, recorded by the operator on the pool
/// DaemonSet and its pod template.
pub const ANNOTATION_NODE_LOCAL_POOL_ACTIVATION_LABEL: &str =
    "garage.rajsingh.info/node-local-pool-activation-label";
/// Value of that activation label, recorded by the operator on the pool DaemonSet and its pod
/// template.
pub const ANNOTATION_NODE_LOCAL_POOL_ACTIVATION_VALUE: &str =
    "garage.rajsingh.info/node-local-pool-activation-value";
/// Written by the operator on a Garage pod whose process it saw run as the node ID this names
/// while the layout held no role for that ID: the process started before its role existed, so
/// no peer can hold a connection to an older process of that identity, and a layout change
/// need not wait for such connections to be replaced. Gone with the pod.
pub const ANNOTATION_SEEN_WITHOUT_ROLE: &str = "garage.rajsingh.info/seen-without-role";
/// Empty marker on gateway pod templates, projected into the pod through the downward API for
/// the gateway data directory. Written by the operator.
pub const ANNOTATION_GATEWAY_DATA_MARKER: &str = "garage.rajsingh.info/gateway-data-marker";
/// Set to `true` by the operator on a rendered-config object when the configuration holds
/// secrets and is therefore stored in a Secret.
pub const ANNOTATION_SENSITIVE_GARAGE_CONFIG: &str = "garage.rajsingh.info/sensitive-garage-config";
/// Base name of a content-addressed configuration ConfigMap/Secret, written by the operator.
pub const ANNOTATION_GARAGE_CONFIG_BASE_NAME: &str = "garage.rajsingh.info/garage-config-base-name";
/// Readiness flag the operator keeps on its internal admin-token Secret.
pub const ANNOTATION_OPERATOR_ADMIN_TOKEN_READY: &str =
    "garage.rajsingh.info/operator-admin-token-ready";
/// Garage-side token name, recorded by the operator on its internal admin-token Secret.
pub const ANNOTATION_OPERATOR_ADMIN_TOKEN_NAME: &str =
    "garage.rajsingh.info/operator-admin-token-name";
/// Hash of the pod set the internal admin token was verified against, recorded by the
/// operator on the admin-token Secret.
pub const ANNOTATION_OPERATOR_ADMIN_TOKEN_POD_SET: &str =
    "garage.rajsingh.info/operator-admin-token-pod-set";
/// Readiness flag the operator keeps on its internal metrics-token Secret.
pub const ANNOTATION_OPERATOR_METRICS_TOKEN_READY: &str =
    "garage.rajsingh.info/operator-metrics-token-ready";
/// Garage-side token name, recorded by the operator on its internal metrics-token Secret.
pub const ANNOTATION_OPERATOR_METRICS_TOKEN_NAME: &str =
    "garage.rajsingh.info/operator-metrics-token-name";
/// Hash of the pod set the internal metrics token was verified against, recorded by the
/// operator on the metrics-token Secret.
pub const ANNOTATION_OPERATOR_METRICS_TOKEN_POD_SET: &str =
    "garage.rajsingh.info/operator-metrics-token-pod-set";
/// Digest of the generated bearer token, written by the operator on a `GarageAdminToken`
/// Secret.
pub const ANNOTATION_STATIC_BOOTSTRAP_TOKEN_SHA256: &str =
    "garage.rajsingh.info/static-bootstrap-token-sha256";
/// Kind of credential held by a `GarageAdminToken` Secret (`static-bootstrap`), written by the
/// operator.
pub const ANNOTATION_CREDENTIAL_KIND: &str = "garage.rajsingh.info/credential-kind";
/// UID of the `GarageNode` that owns a managed PVC, written by the operator on the claim.
pub const ANNOTATION_GARAGE_NODE_UID: &str = "garage.rajsingh.info/garage-node-uid";
/// Nonce on a managed PVC whose hash is recorded in the owning node's
/// `status.managedPVCs[].pendingReservationHash`. Written by the operator.
pub const ANNOTATION_PVC_RESERVATION_NONCE: &str = "garage.rajsingh.info/pvc-reservation-nonce";
/// UID of the owning `GarageCluster`, written by the operator on the scheduling-gate capability
/// probe Pod.
pub const ANNOTATION_NODE_LOCAL_CAPABILITY_CLUSTER_UID: &str =
    "garage.rajsingh.info/node-local-capability-cluster-uid";
/// Digest of the desired state the operator last rendered into a Service, PDB, Secret or
/// `GarageNode` it owns. The operator compares it instead of the live fields (which the API
/// server defaults), so a converged object is never rewritten.
pub const ANNOTATION_RENDERED_HASH: &str = "garage.rajsingh.info/rendered-hash";
