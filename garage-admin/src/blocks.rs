//! The Admin API calls on data blocks: resync errors, block details, retrying and purging.

use crate::error::GarageError;
use crate::nodes::NodeResults;
use crate::transport::{AdminClient, Kind};
use garage_api_types::{
    BlockError, BlockInfo, NodeTarget, PurgeResult, RetryCount, RetrySelection,
};

impl AdminClient {
    /// `ListBlockErrors?node=`.
    pub async fn list_block_errors(
        &self,
        target: &NodeTarget,
    ) -> Result<NodeResults<Vec<BlockError>>, GarageError> {
        self.node_get("ListBlockErrors", target).await
    }

    /// `GetBlockInfo?node=`.
    pub async fn block_info(
        &self,
        target: &NodeTarget,
        block_hash: &str,
    ) -> Result<NodeResults<BlockInfo>, GarageError> {
        let body = serde_json::json!({ "blockHash": block_hash });
        self.node_post("GetBlockInfo", target, Some(&body), Kind::Read)
            .await
    }

    /// `RetryBlockResync?node=`: moves the selected blocks' next attempt to now.
    pub async fn retry_block_resync(
        &self,
        target: &NodeTarget,
        selection: &RetrySelection,
    ) -> Result<NodeResults<RetryCount>, GarageError> {
        self.node_post("RetryBlockResync", target, Some(selection), Kind::Write)
            .await
    }

    /// `PurgeBlocks?node=`: **deletes every object that uses these blocks.** Only for data
    /// already declared lost.
    pub async fn purge_blocks(
        &self,
        target: &NodeTarget,
        block_hashes: &[String],
    ) -> Result<NodeResults<PurgeResult>, GarageError> {
        self.node_post("PurgeBlocks", target, Some(block_hashes), Kind::Write)
            .await
    }
}
