//! The one-shot operational annotations a user puts on a GarageCluster (and the one on a
//! GarageBucket, [`parse_cleanup`]), and what each value asks for. Admission refuses a
//! malformed value with the expected form; the reconciler runs a well-formed request once,
//! records it (a cluster's in `status.lastOperation`) and removes the annotation.

use std::time::Duration;

use crate::keys::annotation::{
    ANNOTATION_CLEANUP_MPU, ANNOTATION_CLEANUP_MPU_OLDER_THAN, ANNOTATION_CONNECT_NODES,
    ANNOTATION_PURGE_BLOCKS, ANNOTATION_RETRY_BLOCK_RESYNC, ANNOTATION_REVERT_LAYOUT,
    ANNOTATION_SCRUB_COMMAND, ANNOTATION_TRIGGER_REPAIR, ANNOTATION_TRIGGER_SNAPSHOT,
};

/// The repairs `trigger-repair` may name (Garage's repair types; the scrub has its own
/// annotation).
pub const REPAIRS: &[&str] = &[
    "Tables",
    "Blocks",
    "Versions",
    "MultipartUploads",
    "BlockRefs",
    "BlockRc",
    "Rebalance",
    "Aliases",
];

/// The commands `scrub-command` may give.
pub const SCRUB_COMMANDS: &[&str] = &["start", "pause", "resume", "cancel"];

/// The annotations, in the order a pass takes them (one per pass).
pub const ORDER: &[&str] = &[
    ANNOTATION_CONNECT_NODES,
    ANNOTATION_TRIGGER_SNAPSHOT,
    ANNOTATION_TRIGGER_REPAIR,
    ANNOTATION_SCRUB_COMMAND,
    ANNOTATION_REVERT_LAYOUT,
    ANNOTATION_RETRY_BLOCK_RESYNC,
    ANNOTATION_PURGE_BLOCKS,
];

/// What one annotation asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Connect to each `<64 hex>@host:port` peer.
    ConnectNodes(Vec<String>),
    /// A metadata snapshot on every node.
    Snapshot,
    /// Launch this repair (one of [`REPAIRS`]) on every node.
    Repair(&'static str),
    /// Give the scrub worker this command (one of [`SCRUB_COMMANDS`]) on every node.
    Scrub(&'static str),
    /// Discard the staged layout changes.
    RevertLayout,
    /// Retry the resync of every block (`None`) or of these hashes, on every node.
    RetryBlockResync(Option<Vec<String>>),
    /// Delete every object that references these blocks, on every node. Irreversible.
    PurgeBlocks(Vec<String>),
}

impl Request {
    /// The `status.lastOperation.type` this request is recorded under.
    pub fn record_type(&self) -> String {
        match self {
            Self::ConnectNodes(peers) => format!("ConnectNodes:{}", peers.len()),
            Self::Snapshot => "Snapshot".into(),
            Self::Repair(kind) => format!("Repair:{kind}"),
            Self::Scrub(cmd) => format!("Scrub:{cmd}"),
            Self::RevertLayout => "RevertLayout".into(),
            Self::RetryBlockResync(None) => "RetryBlockResync:all".into(),
            Self::RetryBlockResync(Some(h)) => format!("RetryBlockResync:{}", h.len()),
            Self::PurgeBlocks(h) => format!("PurgeBlocks:{}", h.len()),
        }
    }
}

fn is_block_hash(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A comma-separated list of 64-hex block hashes (at least one), lowercased.
fn hashes(value: &str) -> Option<Vec<String>> {
    let list: Vec<String> = value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    (!list.is_empty() && list.iter().all(|h| is_block_hash(h))).then_some(list)
}

/// `<64 hex>@host:port` with a port number.
fn is_peer(s: &str) -> bool {
    let Some((id, addr)) = s.split_once('@') else {
        return false;
    };
    let Some((host, port)) = addr.rsplit_once(':') else {
        return false;
    };
    is_block_hash(id) && !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
}

fn is_true(value: &str) -> bool {
    value.trim().eq_ignore_ascii_case("true")
}

/// What `annotation` with `value` asks for, or the form it must take.
pub fn parse_request(annotation: &str, value: &str) -> Option<Result<Request, String>> {
    let v = value.trim();
    let r = match annotation {
        ANNOTATION_CONNECT_NODES => {
            let peers: Vec<String> = v
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            if !peers.is_empty() && peers.iter().all(|p| is_peer(p)) {
                Ok(Request::ConnectNodes(peers))
            } else {
                Err("a comma-separated list of <64-hex node ID>@<host>:<port>".to_owned())
            }
        }
        ANNOTATION_TRIGGER_SNAPSHOT | ANNOTATION_REVERT_LAYOUT => {
            if is_true(v) {
                Ok(if annotation == ANNOTATION_TRIGGER_SNAPSHOT {
                    Request::Snapshot
                } else {
                    Request::RevertLayout
                })
            } else {
                Err("\"true\"".to_owned())
            }
        }
        ANNOTATION_TRIGGER_REPAIR => REPAIRS
            .iter()
            .find(|r| r.eq_ignore_ascii_case(v))
            .map(|r| Request::Repair(r))
            .ok_or_else(|| {
                format!(
                    "one of {} (the scrub is driven by {ANNOTATION_SCRUB_COMMAND})",
                    REPAIRS.join(", ")
                )
            }),
        ANNOTATION_SCRUB_COMMAND => SCRUB_COMMANDS
            .iter()
            .find(|c| c.eq_ignore_ascii_case(v))
            .map(|c| Request::Scrub(c))
            .ok_or_else(|| format!("one of {}", SCRUB_COMMANDS.join(", "))),
        ANNOTATION_RETRY_BLOCK_RESYNC => {
            if is_true(v) {
                Ok(Request::RetryBlockResync(None))
            } else {
                hashes(v)
                    .map(|h| Request::RetryBlockResync(Some(h)))
                    .ok_or_else(|| {
                        "\"true\" (every block) or a comma-separated list of 64-hex block hashes"
                            .to_owned()
                    })
            }
        }
        ANNOTATION_PURGE_BLOCKS => hashes(v)
            .map(Request::PurgeBlocks)
            .ok_or_else(|| "a comma-separated list of 64-hex block hashes".to_owned()),
        _ => return None,
    };
    Some(r)
}

/// The minimum age of the unfinished uploads `cleanup-mpu` aborts when
/// `cleanup-mpu-older-than` is absent.
pub const CLEANUP_DEFAULT_AGE: Duration = Duration::from_secs(24 * 3600);

/// What `cleanup-mpu` and `cleanup-mpu-older-than` on a GarageBucket ask for: `None` when no
/// clean-up is requested, else the minimum age of the unfinished multipart uploads to abort,
/// or the malformed annotation with the form it must take.
pub fn parse_cleanup(
    cleanup: Option<&str>,
    older_than: Option<&str>,
) -> Option<Result<Duration, (&'static str, String)>> {
    let cleanup = cleanup?;
    if !is_true(cleanup) {
        return Some(Err((ANNOTATION_CLEANUP_MPU, "\"true\"".to_owned())));
    }
    let Some(text) = older_than else {
        return Some(Ok(CLEANUP_DEFAULT_AGE));
    };
    Some(age(text.trim()).ok_or((
        ANNOTATION_CLEANUP_MPU_OLDER_THAN,
        "a duration of at least 1s such as \"24h\", \"90m\" or \"7d\"".to_owned(),
    )))
}

/// A Go duration or a whole number of days (`7d`), of at least a second.
fn age(text: &str) -> Option<Duration> {
    let parsed = match text.strip_suffix('d') {
        Some(days) if !days.is_empty() && days.bytes().all(|b| b.is_ascii_digit()) => {
            Duration::from_secs(days.parse::<u64>().ok()?.checked_mul(86_400)?)
        }
        _ => crate::duration::go_duration(text)?,
    };
    (parsed >= Duration::from_secs(1)).then_some(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_cleanup_takes_true_and_an_age() {
        assert_eq!(parse_cleanup(None, Some("1h")), None, "nothing requested");
        let day = Duration::from_secs(86_400);
        for (cleanup, older, want) in [
            ("true", None, Ok(day)),
            ("TRUE", Some("90m"), Ok(Duration::from_secs(5400))),
            ("true", Some(" 7d "), Ok(7 * day)),
            ("true", Some("1s"), Ok(Duration::from_secs(1))),
            ("yes", Some("1h"), Err(ANNOTATION_CLEANUP_MPU)),
            (
                "true",
                Some("500ms"),
                Err(ANNOTATION_CLEANUP_MPU_OLDER_THAN),
            ),
            ("true", Some("soon"), Err(ANNOTATION_CLEANUP_MPU_OLDER_THAN)),
            ("true", Some("d"), Err(ANNOTATION_CLEANUP_MPU_OLDER_THAN)),
            ("true", Some("-1h"), Err(ANNOTATION_CLEANUP_MPU_OLDER_THAN)),
        ] {
            let got = parse_cleanup(Some(cleanup), older)
                .unwrap()
                .map_err(|(k, _)| k);
            assert_eq!(got, want, "{cleanup} {older:?}");
        }
    }

    const H: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn each_annotation_takes_its_form_and_names_it_otherwise() {
        let peer = format!("{H}@10.0.0.1:3901");
        let cases: Vec<(&str, String, Result<Request, &str>)> = vec![
            (
                ANNOTATION_TRIGGER_SNAPSHOT,
                "true".into(),
                Ok(Request::Snapshot),
            ),
            (ANNOTATION_TRIGGER_SNAPSHOT, "yes".into(), Err("\"true\"")),
            (
                ANNOTATION_REVERT_LAYOUT,
                "TRUE".into(),
                Ok(Request::RevertLayout),
            ),
            (
                ANNOTATION_TRIGGER_REPAIR,
                "blocks".into(),
                Ok(Request::Repair("Blocks")),
            ),
            (
                ANNOTATION_TRIGGER_REPAIR,
                "Scrub".into(),
                Err("scrub-command"),
            ),
            (
                ANNOTATION_SCRUB_COMMAND,
                "pause".into(),
                Ok(Request::Scrub("pause")),
            ),
            (
                ANNOTATION_SCRUB_COMMAND,
                "stop".into(),
                Err("start, pause, resume, cancel"),
            ),
            (
                ANNOTATION_RETRY_BLOCK_RESYNC,
                "true".into(),
                Ok(Request::RetryBlockResync(None)),
            ),
            (
                ANNOTATION_RETRY_BLOCK_RESYNC,
                format!("{},{H}", H.to_uppercase()),
                Ok(Request::RetryBlockResync(Some(vec![H.into(), H.into()]))),
            ),
            (
                ANNOTATION_PURGE_BLOCKS,
                H.into(),
                Ok(Request::PurgeBlocks(vec![H.into()])),
            ),
            (
                ANNOTATION_PURGE_BLOCKS,
                "true".into(),
                Err("64-hex block hashes"),
            ),
            (ANNOTATION_PURGE_BLOCKS, format!("{H},abc"), Err("64-hex")),
            (
                ANNOTATION_CONNECT_NODES,
                peer.clone(),
                Ok(Request::ConnectNodes(vec![peer])),
            ),
            (
                ANNOTATION_CONNECT_NODES,
                format!("{H}@host"),
                Err("<host>:<port>"),
            ),
            (
                ANNOTATION_CONNECT_NODES,
                "abc@h:1".into(),
                Err("64-hex node ID"),
            ),
        ];
        for (key, value, want) in cases {
            match (parse_request(key, &value), want) {
                (Some(Ok(got)), Ok(want)) => assert_eq!(got, want, "{key}={value}"),
                (Some(Err(form)), Err(text)) => {
                    assert!(form.contains(text), "{key}={value}: {form}")
                }
                (got, want) => panic!("{key}={value}: {got:?} vs {want:?}"),
            }
        }
        assert_eq!(parse_request("garage.rajsingh.info/drain", "true"), None);
    }

    #[test]
    fn each_request_is_recorded_under_its_type() {
        assert_eq!(
            Request::PurgeBlocks(vec![H.into(), H.into()]).record_type(),
            "PurgeBlocks:2"
        );
        assert_eq!(Request::Repair("Tables").record_type(), "Repair:Tables");
        assert_eq!(
            Request::RetryBlockResync(None).record_type(),
            "RetryBlockResync:all"
        );
        // Every annotation of the order is one `parse_request` knows.
        for key in ORDER {
            assert!(parse_request(key, "").is_some(), "{key}");
        }
    }
}
