//! The types of the data-block endpoints: resync errors, block details, retrying and purging.

use serde::{Deserialize, Serialize};

/// A block the node failed to resync (`ListBlockErrors`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockError {
    /// Block hash (hex).
    pub block_hash: String,
    /// References to it.
    pub refcount: u64,
    /// Failed attempts.
    pub error_count: u64,
    /// Seconds since the last attempt.
    pub last_try_secs_ago: u64,
    /// Seconds until the next attempt.
    pub next_try_in_secs: u64,
}

/// Details of one block (`GetBlockInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockInfo {
    /// Block hash.
    pub block_hash: String,
    /// References to it.
    pub refcount: u64,
    /// Object versions that reference it.
    pub versions: Vec<BlockVersion>,
}

/// A version referencing a block.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockVersion {
    /// Version id.
    pub version_id: String,
    /// Whether the block reference is deleted.
    pub ref_deleted: bool,
    /// Whether the version is deleted.
    pub version_deleted: bool,
    /// Whether the version was garbage-collected.
    pub garbage_collected: bool,
    /// What the version belongs to, when known.
    #[serde(default)]
    pub backlink: Option<serde_json::Value>,
}

/// Which blocks to retry (`RetryBlockResync`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum RetrySelection {
    /// Every block in error.
    All {
        /// Must be true.
        all: bool,
    },
    /// These blocks.
    Hashes {
        /// Block hashes.
        #[serde(rename = "blockHashes")]
        block_hashes: Vec<String>,
    },
}

impl RetrySelection {
    /// Every block in error.
    pub fn all() -> Self {
        Self::All { all: true }
    }
}

/// How many blocks a node queued for retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct RetryCount {
    /// Blocks queued.
    pub count: u64,
}

/// What `PurgeBlocks` removed on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PurgeResult {
    /// Blocks purged.
    pub blocks_purged: u64,
    /// Block references purged.
    pub block_refs_purged: u64,
    /// Object versions deleted.
    pub versions_deleted: u64,
    /// Objects deleted.
    pub objects_deleted: u64,
    /// Multipart uploads deleted.
    pub uploads_deleted: u64,
}
