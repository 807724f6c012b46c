//! A bucket Garage cannot read back: its lookups time out (`BucketLookupStuck`), or Garage
//! cannot decode a metadata entry it needs (`BucketMetadataDegraded`). Each failed pass counts
//! one more in a row on the object's annotations (`bucket-lookup-timeouts`,
//! `bucket-decode-errors`, the Go operator's names, so a count survives a switch of operators);
//! at [`THRESHOLD`] the condition is raised. A decode failure is what Garage's `Tables` repair
//! mends, so at the threshold the pass also asks the cluster for one through its
//! `trigger-repair` annotation, once in a streak, and never over a request already waiting
//! there. The first pass that reads the bucket again clears the counts and both conditions.

use kube::ResourceExt;
use shared_types::conditions::{bucket as bucket_conditions, reason};
use shared_types::garage_bucket::GarageBucket;
use shared_types::keys::annotation::{
    ANNOTATION_BUCKET_DECODE_ERRORS, ANNOTATION_BUCKET_LOOKUP_TIMEOUTS, ANNOTATION_TRIGGER_REPAIR,
};

use crate::conditions::Desired;

/// Failures in a row before the condition is raised (and, for decode failures, a repair asked
/// for), as in the Go operator.
pub const THRESHOLD: u32 = 3;

/// The repair a decode failure asks for.
pub const REPAIR: &str = "Tables";

/// Why the bucket could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupFailure {
    /// The Admin API gave no answer in time; the text is the error.
    Timeout(String),
    /// Garage could not decode one of its metadata entries; the text is the error.
    MetadataDecode(String),
}

/// The cluster the bucket lives in, as a failed pass needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterRef {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The `trigger-repair` request it carries now, if any.
    pub pending_repair: Option<String>,
    /// The resourceVersion it was read at: a repair request is written only onto that version.
    pub resource_version: Option<String>,
}

/// One annotation of the bucket moved from the value the pass read to another (`None`:
/// absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Count {
    /// The annotation.
    pub key: &'static str,
    /// The value read.
    pub from: Option<String>,
    /// The value to write.
    pub to: Option<String>,
}

/// What a pass that could not read the bucket does and says.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    /// The counter to move (the other one, if set, is cleared: the streak changed kind).
    pub counts: Vec<Count>,
    /// Ask the cluster for a [`REPAIR`].
    pub request_repair: bool,
    /// `Ready`'s reason and message.
    pub reason: &'static str,
    /// `Ready`'s message.
    pub message: String,
    /// The health condition, once the streak reaches [`THRESHOLD`].
    pub condition: Option<Desired>,
}

/// The count an annotation holds; anything but a whole number counts as none.
fn count(bucket: &GarageBucket, key: &str) -> u32 {
    bucket
        .annotations()
        .get(key)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn read(bucket: &GarageBucket, key: &str) -> Option<String> {
    bucket.annotations().get(key).cloned()
}

/// The verdict of a pass whose lookup of `bucket` failed so.
pub fn unreadable(
    bucket: &GarageBucket,
    failure: &LookupFailure,
    cluster: &ClusterRef,
) -> Unreadable {
    let (key, other) = match failure {
        LookupFailure::Timeout(_) => (
            ANNOTATION_BUCKET_LOOKUP_TIMEOUTS,
            ANNOTATION_BUCKET_DECODE_ERRORS,
        ),
        LookupFailure::MetadataDecode(_) => (
            ANNOTATION_BUCKET_DECODE_ERRORS,
            ANNOTATION_BUCKET_LOOKUP_TIMEOUTS,
        ),
    };
    // The count stops at the threshold: each write of it wakes the controller for another
    // pass at once, so a count that kept rising would keep the bucket's passes going flat out
    // for as long as Garage fails; at the threshold it stays, and so does the status.
    let before = count(bucket, key);
    let reached_now = before + 1 == THRESHOLD;
    let mut counts = Vec::new();
    let n = if before < THRESHOLD {
        counts.push(Count {
            key,
            from: read(bucket, key),
            to: Some((before + 1).to_string()),
        });
        before + 1
    } else {
        before
    };
    if let Some(value) = read(bucket, other) {
        counts.push(Count {
            key: other,
            from: Some(value),
            to: None,
        });
    }
    let alias = super::wanted_alias(bucket);
    let cluster_name = format!("GarageCluster {}/{}", cluster.namespace, cluster.name);
    match failure {
        LookupFailure::Timeout(error) => Unreadable {
            counts,
            request_repair: false,
            reason: reason::REASON_BUCKET_LOOKUP_STUCK,
            message: format!(
                "reading bucket {alias} from Garage timed out ({n} in a row): {error}"
            ),
            condition: (n >= THRESHOLD).then(|| Desired {
                type_: bucket_conditions::CONDITION_BUCKET_LOOKUP_STUCK,
                status: true,
                reason: reason::REASON_BUCKET_LOOKUP_STUCK,
                message: format!(
                    "reading bucket {alias} from Garage timed out {n} times in a row; a key \
                     granted on it that Garage cannot look up is the usual cause: set \
                     {ANNOTATION_TRIGGER_REPAIR}=Aliases on {cluster_name}"
                ),
            }),
        },
        LookupFailure::MetadataDecode(error) => {
            let request_repair = reached_now && cluster.pending_repair.is_none();
            let repair = match (reached_now, &cluster.pending_repair) {
                (true, None) => format!(
                    "; a {REPAIR} repair is requested on {cluster_name} now (its outcome goes \
                     to that cluster's status.lastOperation)"
                ),
                (true, Some(pending)) => format!(
                    "; no {REPAIR} repair was requested: {cluster_name} already carries \
                     {ANNOTATION_TRIGGER_REPAIR}={pending}; once that one is done, set \
                     {ANNOTATION_TRIGGER_REPAIR}={REPAIR} there if the failures go on"
                ),
                (false, _) => format!(
                    "; the operator requests one {REPAIR} repair on {cluster_name} at the \
                     {THRESHOLD}rd failure in a row, unless another request waits there; if \
                     the failures go on after it (that cluster's status.lastOperation), set \
                     {ANNOTATION_TRIGGER_REPAIR}={REPAIR} there again"
                ),
            };
            Unreadable {
                counts,
                request_repair,
                reason: reason::REASON_METADATA_DECODE_ERROR,
                message: format!(
                    "Garage cannot decode the metadata of bucket {alias} ({n} in a row): {error}"
                ),
                condition: (n >= THRESHOLD).then(|| Desired {
                    type_: bucket_conditions::CONDITION_BUCKET_METADATA_DEGRADED,
                    status: true,
                    reason: reason::REASON_METADATA_DECODE_ERROR,
                    message: format!(
                        "Garage failed to decode the metadata of bucket {alias} {n} times in a row{repair}"
                    ),
                }),
            }
        }
    }
}

/// The counters a pass that read the bucket clears.
pub fn recovered(bucket: &GarageBucket) -> Vec<Count> {
    [
        ANNOTATION_BUCKET_LOOKUP_TIMEOUTS,
        ANNOTATION_BUCKET_DECODE_ERRORS,
    ]
    .into_iter()
    .filter_map(|key| {
        read(bucket, key).map(|value| Count {
            key,
            from: Some(value),
            to: None,
        })
    })
    .collect()
}

/// The condition types this module owns: a bucket read again drops both.
pub const CONDITIONS: [&str; 2] = [
    bucket_conditions::CONDITION_BUCKET_LOOKUP_STUCK,
    bucket_conditions::CONDITION_BUCKET_METADATA_DEGRADED,
];

#[cfg(test)]
mod tests;
