//! The request and response types of Garage's Admin API v2 (Garage 2.0.0 and later), and the
//! pure helpers on them: node ids, layout changes, health, workers, buckets, keys, tokens.
//!
//! They are kept apart from the client (`garage-admin`, which re-exports every one of them)
//! so that code which only decides from Garage's answers depends on serde alone, not on an
//! HTTP client, TLS or an async runtime.
//!
//! The types are hand-written (Garage's own crates are AGPL); `garage-admin`'s contract test
//! checks every field against the OpenAPI document of the pinned binary.

mod blocks;
mod bucket_config;
mod buckets;
mod cluster;
mod keys;
mod layout;
mod nodes;
mod repair;
mod tokens;
mod workers;

pub use blocks::{BlockError, BlockInfo, BlockVersion, PurgeResult, RetryCount, RetrySelection};
pub use bucket_config::{
    AbortIncompleteMultipartUpload, CorsRule, LifecycleExpiration, LifecycleFilter, LifecycleRule,
    Redirect, RoutingCondition, RoutingRule, WebsiteAccess, WebsiteConfig,
};
pub use buckets::{
    BucketAlias, BucketInfo, BucketKey, BucketListItem, BucketLookup, BucketPermissions,
    BucketQuotas, BucketUpdate, CreateBucket, CreateLocalAlias, LocalAlias,
};
pub use cluster::{
    BlockManagerStats, ClusterHealth, ClusterStatistics, ClusterStatus, ConnectResult,
    ConnectionParameters, FreeSpace, HealthStatus, NodeHealth, NodeInfo, NodeRole, NodeStatistics,
    NodeStatus, TableStats,
};
pub use keys::{KeyBucket, KeyInfo, KeyListItem, KeyPermissions, KeySpec};
pub use layout::{
    AppliedLayout, ClusterLayout, LayoutHistory, LayoutParameters, LayoutPreview, LayoutRole,
    LayoutVersion, LayoutVersionStatus, RoleChange, SkipDeadNodesResult, StagedRoleChange,
    UpdateTrackers, ZoneRedundancy,
};
pub use nodes::{InvalidNodeId, NodeId, NodeTarget, short_id};
pub use repair::{RepairType, ScrubCommand};
pub use tokens::{AdminToken, AdminTokenInfo, AdminTokenSpec, CreatedAdminToken, Lookup};
pub use workers::{WorkerFilter, WorkerInfo, WorkerLastError, WorkerState, WorkerVariable};
