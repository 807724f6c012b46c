//! Label keys written by the operator.
//!
//! All of these are owned by the operator: it sets them on the objects it creates (and on the
//! generated `GarageNode`s) and uses them in selectors. Users may read and select on them but
//! must not edit them; [`RESERVED_POD_LABELS`] lists the keys that admission refuses in any
//! user-supplied `podLabels`. The per-cluster activation label on Kubernetes Nodes has a
//! generated name; see [`super::generated`].

// --- Well-known app.kubernetes.io labels ---

/// Application name (`garage`) on the operator's workloads, pods and Services. Reserved.
pub const LABEL_APP_NAME: &str = "app.kubernetes.io/name";
/// Instance label on the operator's workloads, pods and Services; the value is the cluster
/// name. Reserved.
pub const LABEL_APP_INSTANCE: &str = "app.kubernetes.io/instance";
/// Component label: the tier (`storage` or `gateway`), or `node` for per-`GarageNode`
/// workloads. Set by the operator; reserved.
pub const LABEL_APP_COMPONENT: &str = "app.kubernetes.io/component";
/// Manager label: `garage-operator` on workloads and Secrets, `operator` on `GarageNode`s the
/// operator generates. Reserved.
pub const LABEL_APP_MANAGED_BY: &str = "app.kubernetes.io/managed-by";

// --- Workload identity and selection ---

/// Name of the owning `GarageCluster`, set by the operator on pods, workloads, `GarageNode`s,
/// the ServiceMonitor and snapshots. Reserved on pods.
pub const LABEL_CLUSTER: &str = "garage.rajsingh.info/cluster";
/// Tier of the object (`storage` or `gateway`), set by the operator on pods, workloads and
/// `GarageNode`s. Reserved.
pub const LABEL_TIER: &str = "garage.rajsingh.info/tier";
/// Name of the `GarageNode` an object belongs to, set by the operator on the per-node
/// StatefulSet, its pods and its generated PVCs; per-node Services select on it. Reserved.
pub const LABEL_NODE: &str = "garage.rajsingh.info/node";
/// Storage group of a storage pod: `default` for the StatefulSet/PVC/Manual group or
/// `node-local` for pool pods. Set by the operator (the public endpoint selects `default`).
/// Reserved.
pub const LABEL_STORAGE_GROUP: &str = "garage.rajsingh.info/storage-group";
/// Used only in the scale selector; the operator sets it to `disabled` to produce a selector
/// that matches nothing when no workload can be scaled. Reserved.
pub const LABEL_SCALE_TARGET: &str = "garage.rajsingh.info/scale-target";
/// Name of the node-local pool, set by the operator on pool pods and pool `GarageNode`s; stable
/// enough for per-node Services to select on. Reserved.
pub const LABEL_NODE_LOCAL_POOL: &str = "garage.rajsingh.info/node-local-pool";
/// Kubernetes Node a pool member runs on; one key with two roles, both written by the operator.
/// As a label on pool pods and pool `GarageNode`s it holds a label-safe (possibly shortened)
/// Node name; as an annotation on the same objects it holds the exact Node name. Reserved.
pub const LABEL_KUBERNETES_NODE: &str = "garage.rajsingh.info/kubernetes-node";

// --- GarageNode bookkeeping ---

/// Set to `true` by the operator on the sibling `GarageNode` of a running cycle; such nodes are
/// left out of Auto slot management.
pub const LABEL_CYCLE_SIBLING: &str = "garage.rajsingh.info/cycle-sibling";
/// Canonical Auto-mode slot (for example `<cluster>-gateway-1`), set by the operator on
/// generated `GarageNode`s; also used to follow a slot through cycle replacements.
pub const LABEL_AUTO_NODE_SLOT: &str = "garage.rajsingh.info/auto-node-slot";

// --- Secrets written by the operator ---

/// Name of the `GarageAdminToken`, set by the operator on the Secret holding that token.
pub const LABEL_ADMIN_TOKEN: &str = "garage.rajsingh.info/admintoken";
/// Name of the `GarageKey`, set by the operator on the Secret holding that key.
pub const LABEL_KEY: &str = "garage.rajsingh.info/key";
/// UID of the owning `GarageKey`, set by the operator on a generated key Secret.
pub const LABEL_GENERATED_KEY_SECRET_OWNER: &str =
    "garage.rajsingh.info/generated-key-secret-owner";
/// Set to `true` by the operator on the snapshot Secret taken when a key is imported.
pub const LABEL_KEY_IMPORT_SNAPSHOT: &str = "garage.rajsingh.info/key-import-snapshot";
/// Set to `true` by the operator on the Secret of its internal admin token.
pub const LABEL_OPERATOR_ADMIN_TOKEN: &str = "garage.rajsingh.info/operator-admin-token";
/// Set to `true` by the operator on the Secret of its internal metrics token.
pub const LABEL_OPERATOR_METRICS_TOKEN: &str = "garage.rajsingh.info/operator-metrics-token";
/// Set to `true` by the operator on a static-credential snapshot Secret.
pub const LABEL_STATIC_CREDENTIALS_SNAPSHOT: &str =
    "garage.rajsingh.info/static-credentials-snapshot";

// --- Scheduling-gate capability probe ---

/// Kind of capability probe (`api-dry-run` or `scheduler`), set by the operator on the probe
/// DaemonSet and Pods that check scheduling-gate support.
pub const LABEL_NODE_LOCAL_CAPABILITY_PROBE: &str =
    "garage.rajsingh.info/node-local-capability-probe";

// --- COSI shadow objects ---

/// Set to `true` by the COSI provisioner on the shadow `GarageBucket`s, `GarageKey`s and
/// Secrets it manages.
pub const LABEL_COSI_MANAGED: &str = "garage.rajsingh.info/cosi-managed";
/// BucketClaim name (possibly shortened), set by the COSI provisioner on a shadow bucket.
pub const LABEL_COSI_BUCKET_CLAIM: &str = "garage.rajsingh.info/cosi-bucket-claim";
/// BucketAccess name (possibly shortened), set by the COSI provisioner on a shadow key.
pub const LABEL_COSI_BUCKET_ACCESS: &str = "garage.rajsingh.info/cosi-bucket-access";
/// Garage bucket ID created by the COSI provisioner, written both as a label (for selection)
/// and as an annotation (the exact remote bucket) on the shadow `GarageBucket`.
pub const LABEL_COSI_BUCKET_ID: &str = "garage.rajsingh.info/cosi-bucket-id";
/// Garage access key ID created by the COSI provisioner, written both as a label and as an
/// annotation (the exact remote key) on the shadow `GarageKey`.
pub const LABEL_COSI_ACCOUNT_ID: &str = "garage.rajsingh.info/cosi-account-id";

/// Pod label keys that belong to the operator; admission rejects any of them in a
/// user-supplied `podLabels` map.
pub const RESERVED_POD_LABELS: &[&str] = &[
    LABEL_APP_NAME,
    LABEL_APP_INSTANCE,
    LABEL_APP_COMPONENT,
    LABEL_APP_MANAGED_BY,
    LABEL_CLUSTER,
    LABEL_TIER,
    LABEL_NODE,
    LABEL_STORAGE_GROUP,
    LABEL_SCALE_TARGET,
    LABEL_NODE_LOCAL_POOL,
    LABEL_KUBERNETES_NODE,
];

/// Values the operator writes into the labels above. Declared here so that selectors and
/// builders never spell them.
pub mod value {
    /// Value of [`LABEL_APP_NAME`](super::LABEL_APP_NAME) on everything the operator runs.
    pub const APP_NAME_GARAGE: &str = "garage";
    /// Value of [`LABEL_APP_MANAGED_BY`](super::LABEL_APP_MANAGED_BY) on workloads, Services,
    /// ConfigMaps, Secrets, PDBs and Pods.
    pub const MANAGED_BY_OPERATOR: &str = "garage-operator";
    /// Value of [`LABEL_APP_MANAGED_BY`](super::LABEL_APP_MANAGED_BY) on the `GarageNode`s the
    /// operator generates (a different value than on workloads, kept for compatibility).
    pub const MANAGED_BY_GENERATED_NODE: &str = "operator";
    /// Value of [`LABEL_TIER`](super::LABEL_TIER) and
    /// [`LABEL_APP_COMPONENT`](super::LABEL_APP_COMPONENT) for the storage tier.
    pub const TIER_STORAGE: &str = "storage";
    /// Value of [`LABEL_TIER`](super::LABEL_TIER) for the gateway tier.
    pub const TIER_GATEWAY: &str = "gateway";
    /// Value of [`LABEL_APP_COMPONENT`](super::LABEL_APP_COMPONENT) on per-`GarageNode`
    /// workloads.
    pub const COMPONENT_NODE: &str = "node";
    /// Value of [`LABEL_STORAGE_GROUP`](super::LABEL_STORAGE_GROUP) for the default
    /// (StatefulSet/PVC) storage group.
    pub const STORAGE_GROUP_DEFAULT: &str = "default";
    /// Value of [`LABEL_STORAGE_GROUP`](super::LABEL_STORAGE_GROUP) on node-local pool pods.
    pub const STORAGE_GROUP_NODE_LOCAL: &str = "node-local";
}
