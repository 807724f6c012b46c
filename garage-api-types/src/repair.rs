//! The types of repair operations (`LaunchRepairOperation`).

use serde::Serialize;

/// What to repair. Each starts a background worker on the targeted nodes; watch it with
/// `AdminClient::list_workers` (in `garage-admin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RepairType {
    /// Resynchronise the metadata tables with the other nodes.
    Tables,
    /// Check that every referenced block is present, queue missing ones for resync
    /// (worker `Block repair worker`).
    Blocks,
    /// Check object versions against the object table.
    Versions,
    /// Check multipart uploads against the object table.
    MultipartUploads,
    /// Check block references against versions.
    BlockRefs,
    /// Recompute block reference counters.
    BlockRc,
    /// Move blocks to the data directory the layout assigns them to.
    Rebalance,
    /// Control the data scrub (worker `Block scrub worker`).
    Scrub(ScrubCommand),
    /// Repair bucket and key aliases.
    Aliases,
    /// Empty the block resync queue.
    ClearResyncQueue,
}

/// A scrub command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ScrubCommand {
    /// Start a scrub now.
    Start,
    /// Pause the running scrub.
    Pause,
    /// Resume a paused scrub.
    Resume,
    /// Cancel the running scrub.
    Cancel,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn repair_types_encode() {
        let v = |r| serde_json::to_value(r).unwrap();
        assert_eq!(v(RepairType::Blocks), json!("blocks"));
        assert_eq!(v(RepairType::ClearResyncQueue), json!("clearResyncQueue"));
        assert_eq!(
            v(RepairType::Scrub(ScrubCommand::Start)),
            json!({"scrub": "start"})
        );
    }
}
