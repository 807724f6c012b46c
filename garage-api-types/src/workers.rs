//! The types of each node's background workers and their tunable variables.

use serde::Deserialize;

/// One background worker (`ListWorkers`, `GetWorkerInfo`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerInfo {
    /// Worker id, unique per node and increasing: a worker launched later has a larger id.
    pub id: u64,
    /// Name, such as `Block resync worker #1` or `Block repair worker`.
    pub name: String,
    /// What it is doing.
    pub state: WorkerState,
    /// Errors since it started.
    pub errors: u64,
    /// Errors since its last success.
    pub consecutive_errors: u64,
    /// Its last error.
    #[serde(default)]
    pub last_error: Option<WorkerLastError>,
    /// Tranquility (throttling factor), when it has one.
    #[serde(default)]
    pub tranquility: Option<u32>,
    /// Progress text, when it reports one.
    #[serde(default)]
    pub progress: Option<String>,
    /// Queue length (resync workers).
    #[serde(default)]
    pub queue_length: Option<u64>,
    /// Persistent error count (resync workers: blocks in error; scrub: corruptions found).
    #[serde(default)]
    pub persistent_errors: Option<u64>,
    /// Free-form status lines; do not parse.
    pub freeform: Vec<String>,
}

/// The last error of a worker.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerLastError {
    /// The message.
    pub message: String,
    /// How long ago it happened.
    pub secs_ago: u64,
}

/// A worker's state: `"busy"`, `"idle"`, `"done"` or `{"throttled": {"durationSecs": x}}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "WorkerStateWire")]
pub enum WorkerState {
    /// Working.
    Busy,
    /// Working, but sleeping between items to limit its load.
    Throttled {
        /// Length of the current pause, in seconds.
        duration_secs: f32,
    },
    /// Waiting for work.
    Idle,
    /// Finished; it will not run again.
    Done,
    /// A state this client does not know.
    Other(String),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum WorkerStateWire {
    Name(String),
    Throttled { throttled: ThrottledWire },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ThrottledWire {
    duration_secs: f32,
}

impl From<WorkerStateWire> for WorkerState {
    fn from(w: WorkerStateWire) -> Self {
        match w {
            WorkerStateWire::Name(n) => match n.as_str() {
                "busy" => Self::Busy,
                "idle" => Self::Idle,
                "done" => Self::Done,
                _ => Self::Other(n),
            },
            WorkerStateWire::Throttled { throttled } => Self::Throttled {
                duration_secs: throttled.duration_secs,
            },
        }
    }
}

/// Filters of `AdminClient::list_workers` (in `garage-admin`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerFilter {
    /// Only busy (or throttled) workers.
    pub busy_only: bool,
    /// Only workers with errors.
    pub error_only: bool,
}

/// A worker variable's new value, as one node confirms it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WorkerVariable {
    /// Variable name.
    pub variable: String,
    /// Its value.
    pub value: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn worker_states_parse() {
        let s: WorkerState =
            serde_json::from_value(json!({"throttled": {"durationSecs": 0.5}})).unwrap();
        assert_eq!(s, WorkerState::Throttled { duration_secs: 0.5 });
        let s: WorkerState = serde_json::from_value(json!("done")).unwrap();
        assert_eq!(s, WorkerState::Done);
        let s: WorkerState = serde_json::from_value(json!("sleeping")).unwrap();
        assert_eq!(s, WorkerState::Other("sleeping".into()));
    }
}
