//! Tuning and policy settings for a GarageCluster: block store, metadata database, layout
//! management, monitoring, replication, security and background workers.

use k8s_openapi::api::core::v1::SecretKeySelector;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Tuning of how Garage stores object data as blocks on disk. Unset fields keep Garage's
/// defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlockConfig {
    /// zstd level applied to stored blocks: `none` to store them uncompressed, or an integer
    /// from -99 to 22 (higher compresses more but costs more CPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "^(none|0|-?[1-9][0-9]*)$"))]
    pub compression_level: Option<String>,
    /// When true, the periodic (roughly monthly) integrity scrub of the data directories is
    /// not started automatically. Defaults to false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_scrub: Option<bool>,
    /// Limit on how many block files a node reads from disk at the same time.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1))]
    pub max_concurrent_reads: Option<i64>,
    /// Limit on how many blocks of a single PUT request are written in parallel
    /// (Garage 2.2 or newer).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1))]
    pub max_concurrent_writes_per_request: Option<i64>,
    /// Memory budget for blocks held in RAM while waiting to be written out, as a quantity such
    /// as `256Mi`. Must be positive.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub ram_buffer_max: Option<Quantity>,
    /// Size of the chunks uploaded objects are split into (Garage uses 1M when unset). Must be
    /// positive.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub size: Option<Quantity>,
    /// When true, the bucket lifecycle worker runs at midnight local time instead of midnight
    /// UTC. Defaults to false.
    #[serde(rename = "useLocalTZ", skip_serializing_if = "Option::is_none")]
    pub use_local_tz: Option<bool>,
}

/// Choice and sizing of the embedded database that holds Garage metadata.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseConfig {
    /// Metadata database engine: `lmdb` (default), `sqlite` or `fjall`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "lmdb"))]
    pub engine: Option<DatabaseEngine>,
    /// In-memory block cache size for the `fjall` engine. Must be positive.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub fjall_block_cache_size: Option<Quantity>,
    /// Size of the memory map reserved by the `lmdb` engine; this caps how large the metadata
    /// database can grow. Must be positive.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub lmdb_map_size: Option<Quantity>,
}

/// How the operator stages and applies changes to the Garage cluster layout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LayoutManagementConfig {
    /// When true, staged layout changes are applied without further action, and stale gateway
    /// entries are removed automatically. Defaults to false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_apply: Option<bool>,
    /// Safety policy for taking storage capacity out of the layout. It governs every path that
    /// removes capacity (scale-down, pool changes, GarageNode removal, `deletionPolicy: Drain`)
    /// whatever kind of workload or site the capacity belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain: Option<DrainConfig>,
    /// Number of healthy nodes that must be present before the operator applies a layout
    /// change. Must not be negative.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_nodes_healthy: Option<i64>,
}

/// Safety policy applied whenever nodes that hold storage capacity are removed from the
/// layout. Removal is refused unless the policy's conditions are met; it applies uniformly to
/// managed pods, node-local pools, external GarageNodes, management handles and deletion.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DrainConfig {
    /// How to treat peers whose state the operator cannot check, such as federated sites or
    /// externally run processes. `Block` (default) refuses the removal. `AssumeConsistent`
    /// lets it proceed on your word that those peers are in sync; it is required for federated
    /// removal but is a maintenance decision, not a verified safety check.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Block"))]
    pub unverified_peers_policy: Option<UnverifiedPeersPolicy>,
}

/// Prometheus scraping of the cluster through a prometheus-operator ServiceMonitor.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitoringSpec {
    /// Extra labels put on the ServiceMonitor, e.g. so a Prometheus instance selects it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_labels: Option<BTreeMap<String, String>>,
    /// When true, a ServiceMonitor named `<cluster>-garage` is created for the Admin API's
    /// `/metrics` endpoint. Skipped if the prometheus-operator CRDs are not installed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// How often Prometheus scrapes the nodes, as a duration such as `30s` or `1m`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// Relabeling rules run on scraped samples before they are stored (the ServiceMonitor
    /// endpoint's `metricRelabelings`). Useful for discarding series nobody uses; the
    /// per-method `rpc_duration_*` histograms are the largest source of series on a node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metric_relabelings: Option<Vec<RelabelConfig>>,
}

/// One Prometheus relabeling rule, with the same fields and semantics as `relabel_config` in
/// the Prometheus configuration
/// (the `relabel_config` section of the Prometheus configuration documentation).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RelabelConfig {
    /// Operation to run when the rule is evaluated; defaults to `replace`. Either lower-case or
    /// CamelCase spelling is accepted. `lowercase`/`uppercase` need Prometheus 2.36+, and
    /// `keepequal`/`dropequal` need Prometheus 2.41+.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "replace", "enum" = ["replace", "Replace", "keep", "Keep", "drop", "Drop", "hashmod", "HashMod", "labelmap", "LabelMap", "labeldrop", "LabelDrop", "labelkeep", "LabelKeep", "lowercase", "Lowercase", "uppercase", "Uppercase", "keepequal", "KeepEqual", "dropequal", "DropEqual"]))]
    pub action: Option<String>,
    /// Divisor applied to the hash of the joined source values; used only by `hashmod`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 0))]
    pub modulus: Option<i64>,
    /// Regular expression tested against the joined source label values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// Value written by `replace` when the regex matches; may reference capture groups such as
    /// `$1`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    /// String placed between source label values when they are joined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub separator: Option<String>,
    /// Labels whose values are joined with `separator` to form the input of `regex`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_labels: Option<Vec<String>>,
    /// Label that receives the result. Needed for `replace`, `hashmod`, `lowercase`,
    /// `uppercase`, `keepequal` and `dropequal`; may reference regex capture groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_label: Option<String>,
}

/// How many copies of data Garage keeps and how strictly it enforces quorums. When the
/// section is omitted, three copies in `consistent` mode are used.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicationConfig {
    /// Quorum behaviour for reads and writes: `consistent` (default), `degraded` or
    /// `dangerous`. See the values for the trade-offs.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "consistent"))]
    pub consistency_mode: Option<ConsistencyMode>,
    /// Number of copies stored for every piece of data, 1 to 7 (default 3). Changing it on an
    /// existing cluster requires the `garage.rajsingh.info/purge-cluster-layout: factor=<N>`
    /// annotation in the same update.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    #[schemars(extend("default" = 3, "minimum" = 1, "maximum" = 7))]
    pub factor: Option<i64>,
    /// Minimum number of distinct zones each partition's copies must span. Required when
    /// `zoneRedundancyMode` is `AtLeast`, not allowed otherwise, and no greater than `factor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1, "maximum" = 7))]
    pub zone_redundancy_min_zones: Option<i64>,
    /// How copies are spread over zones: `Maximum` or `AtLeast`. Garage uses `Maximum` when
    /// unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_redundancy_mode: Option<ZoneRedundancyMode>,
}

/// Security-related switches for Garage nodes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecurityConfig {
    /// Lets Garage start even when secret files it reads are readable by group or others.
    /// Without it, Garage refuses such files. Defaults to false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_insecure_secret_permissions: Option<bool>,
    /// Permits bucket names in punycode (`xn--` internationalised) form. Defaults to false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_punycode: Option<bool>,
    /// TLS for RPC between nodes. Not supported, because Garage no longer implements RPC TLS;
    /// setting any field here is rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsConfig>,
}

/// Legacy RPC TLS settings. Kept only for schema compatibility; any value is rejected.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TlsConfig {
    /// Secret key with the certificate authority for RPC TLS. Unsupported.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub ca_secret_ref: Option<SecretKeySelector>,
    /// Secret key with the node certificate for RPC TLS. Unsupported.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub cert_secret_ref: Option<SecretKeySelector>,
    /// Would turn on TLS for RPC between nodes. Unsupported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Secret key with the node private key for RPC TLS. Unsupported.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub key_secret_ref: Option<SecretKeySelector>,
}

/// Garage background worker variables, pushed to every node through the Admin API on each
/// reconcile. Fields left unset keep Garage's defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkersConfig {
    /// Pause factor of the block resync worker (`resync-tranquility`): after each item it
    /// idles proportionally to the work done. 0 runs at full speed; larger values go gentler.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 0))]
    pub resync_tranquility: Option<i32>,
    /// Number of block resync workers running concurrently on each node
    /// (`resync-worker-count`), 1 to 8.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1, "maximum" = 8))]
    pub resync_worker_count: Option<i32>,
    /// Pause factor of the data integrity scrub (`scrub-tranquility`). 0 runs at full speed;
    /// larger values reduce its impact on disks.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 0))]
    pub scrub_tranquility: Option<i32>,
}

/// Embedded database engine used for Garage metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum DatabaseEngine {
    /// LMDB, a memory-mapped key-value store; Garage's default engine.
    #[serde(rename = "lmdb")]
    Lmdb,
    /// SQLite database file.
    #[serde(rename = "sqlite")]
    Sqlite,
    /// Fjall, an LSM-tree based key-value store.
    #[serde(rename = "fjall")]
    Fjall,
}

/// What to do with peers whose consistency the operator cannot verify when storage capacity
/// is being removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum UnverifiedPeersPolicy {
    /// Refuse to remove capacity while any such peer is involved.
    Block,
    /// Proceed, treating those peers as consistent on the user's responsibility.
    AssumeConsistent,
}

/// Quorum mode Garage uses for reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ConsistencyMode {
    /// Reads and writes both wait for a quorum of copies, so reads see prior writes.
    #[serde(rename = "consistent")]
    Consistent,
    /// Reads are answered from a single copy, so they keep working when most copies are
    /// unreachable but may return stale data; writes still need a quorum.
    #[serde(rename = "degraded")]
    Degraded,
    /// Reads and writes each need only one copy. Keeps serving through severe outages at the
    /// risk of inconsistency; intended for emergencies only.
    #[serde(rename = "dangerous")]
    Dangerous,
}

/// Strategy for spreading a partition's copies over layout zones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ZoneRedundancyMode {
    /// Place each copy in a different zone whenever there are enough zones.
    Maximum,
    /// Guarantee only `zoneRedundancyMinZones` distinct zones per partition, leaving Garage
    /// freer to balance capacity.
    AtLeast,
}
