//! The Admin API's repair operations (`LaunchRepairOperation`).

use crate::error::GarageError;
use crate::nodes::NodeResults;
use crate::transport::{AdminClient, Kind};
use garage_api_types::{NodeTarget, RepairType};

impl AdminClient {
    /// `LaunchRepairOperation?node=`.
    pub async fn launch_repair(
        &self,
        target: &NodeTarget,
        repair: RepairType,
    ) -> Result<NodeResults<serde_json::Value>, GarageError> {
        let body = serde_json::json!({ "repairType": repair });
        self.node_post("LaunchRepairOperation", target, Some(&body), Kind::Write)
            .await
    }
}
