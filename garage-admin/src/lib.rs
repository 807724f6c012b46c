//! A typed client of Garage's Admin API v2 (Garage 2.0.0 and later; tested against 2.5.0).
//!
//! One [`AdminClient`] talks to one endpoint. Every call has a timeout; read-only calls are
//! retried with backoff on 503, timeouts and connection errors; writes never are, because a
//! write that timed out may have been applied. Errors are typed ([`GarageError`]) so that
//! callers can tell "absent" (only a Garage 404) from "unknown" (everything else).
//! Node-local calls return [`NodeResults`], which keeps per-node failures next to the
//! successes.
//!
//! The DTOs are hand-written (Garage's own crates are AGPL) and a contract test checks every
//! field against the OpenAPI document of the pinned binary.

mod blocks;
mod bucket_config;
mod buckets;
mod cluster;
mod error;
mod keys;
mod layout;
mod nodes;
mod repair;
mod tokens;
mod transport;
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
pub use error::GarageError;
pub use keys::{KeyBucket, KeyInfo, KeyListItem, KeyPermissions, KeySpec};
pub use layout::{
    AppliedLayout, ClusterLayout, LayoutHistory, LayoutParameters, LayoutPreview, LayoutRole,
    LayoutVersion, LayoutVersionStatus, RoleChange, SkipDeadNodesResult, StagedRoleChange,
    UpdateTrackers, ZoneRedundancy,
};
pub use nodes::{NodeId, NodeResults, NodeTarget};
pub use repair::{RepairType, ScrubCommand};
pub use tokens::{AdminTokenInfo, AdminTokenSpec, CreatedAdminToken, Lookup};
pub use transport::{AdminClient, AdminToken, ClientConfig, decode as decode_response};
pub use workers::{WorkerFilter, WorkerInfo, WorkerLastError, WorkerState, WorkerVariable};
