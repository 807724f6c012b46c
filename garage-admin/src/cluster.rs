//! The Admin API calls on the cluster and its nodes: health, status, statistics, node info,
//! connecting nodes.

use crate::error::GarageError;
use crate::nodes::NodeResults;
use crate::transport::{AdminClient, Kind};
use garage_api_types::{
    ClusterHealth, ClusterStatistics, ClusterStatus, ConnectResult, NodeHealth, NodeId, NodeInfo,
    NodeStatistics, NodeTarget,
};

impl AdminClient {
    /// `GET /health`: 200 is [`NodeHealth::Ready`], 503 [`NodeHealth::NotReady`]; anything else,
    /// or no answer, is an error.
    pub async fn health(&self) -> Result<NodeHealth, GarageError> {
        let (status, body) = self.get_special("/health").await?;
        match status.as_u16() {
            200 => Ok(NodeHealth::Ready),
            503 => Ok(NodeHealth::NotReady(
                String::from_utf8_lossy(&body).trim().to_string(),
            )),
            code => Err(GarageError::from_status("health", code, &body)),
        }
    }

    /// `GetClusterHealth`.
    pub async fn cluster_health(&self) -> Result<ClusterHealth, GarageError> {
        self.get("GetClusterHealth", &[]).await
    }

    /// `GetClusterStatus`.
    pub async fn cluster_status(&self) -> Result<ClusterStatus, GarageError> {
        self.get("GetClusterStatus", &[]).await
    }

    /// `GetClusterStatistics`.
    pub async fn cluster_statistics(&self) -> Result<ClusterStatistics, GarageError> {
        self.get("GetClusterStatistics", &[]).await
    }

    /// `GetNodeInfo?node=`; each answer's `nodeId` must match the key it came under.
    pub async fn node_info(
        &self,
        target: &NodeTarget,
    ) -> Result<NodeResults<NodeInfo>, GarageError> {
        let results: NodeResults<NodeInfo> = self.node_get("GetNodeInfo", target).await?;
        if let Some((key, info)) = results
            .successes()
            .iter()
            .find(|(key, info)| **key != info.node_id)
        {
            return Err(GarageError::invalid(
                "GetNodeInfo",
                format!(
                    "answer under {} describes node {}",
                    key.short(),
                    info.node_id.short()
                ),
            ));
        }
        Ok(results)
    }

    /// The id of the node this client talks to (`GetNodeInfo?node=self`).
    pub async fn local_node_id(&self) -> Result<NodeId, GarageError> {
        let (id, _) = self.node_info(&NodeTarget::Local).await?.into_single()?;
        Ok(id)
    }

    /// `GetNodeStatistics?node=`.
    pub async fn node_statistics(
        &self,
        target: &NodeTarget,
    ) -> Result<NodeResults<NodeStatistics>, GarageError> {
        self.node_get("GetNodeStatistics", target).await
    }

    /// `ConnectClusterNodes` with peers of the form `<node id>@<host>:<port>`. Garage answers
    /// 200 even when some connections failed: the results are in the same order as `peers`.
    pub async fn connect_nodes(&self, peers: &[String]) -> Result<Vec<ConnectResult>, GarageError> {
        let results: Vec<ConnectResult> = self
            .post("ConnectClusterNodes", &[], Some(peers), Kind::Write)
            .await?;
        if results.len() != peers.len() {
            return Err(GarageError::invalid(
                "ConnectClusterNodes",
                format!("{} results for {} peers", results.len(), peers.len()),
            ));
        }
        Ok(results)
    }

    /// `CreateMetadataSnapshot?node=`.
    pub async fn create_metadata_snapshot(
        &self,
        target: &NodeTarget,
    ) -> Result<NodeResults<serde_json::Value>, GarageError> {
        self.node_post::<(), _>("CreateMetadataSnapshot", target, None, Kind::Write)
            .await
    }
}
