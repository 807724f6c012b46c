//! The Admin API calls on each node's background workers and their tunable variables.

use std::collections::BTreeMap;

use crate::error::GarageError;
use crate::nodes::NodeResults;
use crate::transport::{AdminClient, Kind};
use garage_api_types::{NodeTarget, WorkerFilter, WorkerInfo, WorkerVariable};

impl AdminClient {
    /// `ListWorkers?node=`.
    pub async fn list_workers(
        &self,
        target: &NodeTarget,
        filter: WorkerFilter,
    ) -> Result<NodeResults<Vec<WorkerInfo>>, GarageError> {
        self.node_post("ListWorkers", target, Some(&filter), Kind::Read)
            .await
    }

    /// `GetWorkerInfo?node=` for worker `id` (ids are per node: target one node).
    pub async fn worker_info(
        &self,
        target: &NodeTarget,
        id: u64,
    ) -> Result<NodeResults<WorkerInfo>, GarageError> {
        let body = serde_json::json!({ "id": id });
        self.node_post("GetWorkerInfo", target, Some(&body), Kind::Read)
            .await
    }

    /// `GetWorkerVariable?node=`: one variable, or every variable when `variable` is `None`.
    pub async fn worker_variables(
        &self,
        target: &NodeTarget,
        variable: Option<&str>,
    ) -> Result<NodeResults<BTreeMap<String, String>>, GarageError> {
        let body = serde_json::json!({ "variable": variable });
        self.node_post("GetWorkerVariable", target, Some(&body), Kind::Read)
            .await
    }

    /// `SetWorkerVariable?node=`.
    pub async fn set_worker_variable(
        &self,
        target: &NodeTarget,
        variable: &str,
        value: &str,
    ) -> Result<NodeResults<WorkerVariable>, GarageError> {
        let body = serde_json::json!({ "variable": variable, "value": value });
        self.node_post("SetWorkerVariable", target, Some(&body), Kind::Write)
            .await
    }
}
