//! GB-C6: bucket quotas are not negative. The CRD deliberately sets no minimum (old objects
//! must stay updatable on API servers without validation ratcheting), so the webhook checks.

use shared_types::garage_bucket::GarageBucket;

use crate::admission::Verdict;
use crate::admission::shared::quantity::milli_value;

/// GB-C6 on `spec.quotas`.
pub fn check(bucket: &GarageBucket, verdict: &mut Verdict) {
    let Some(quotas) = &bucket.spec.quotas else {
        return;
    };
    if let Some(size) = &quotas.max_size {
        match milli_value(size) {
            Some(v) if v >= 0 => {}
            Some(_) => verdict.deny(
                "GB-C6",
                "spec.quotas.maxSize",
                format!(
                    "quotas.maxSize must be >= 0 (got {:?}); omit it for no size limit",
                    size.0
                ),
            ),
            None => verdict.deny(
                "GB-C6",
                "spec.quotas.maxSize",
                format!(
                    "quotas.maxSize {:?} is not a quantity: write bytes such as 10Gi",
                    size.0
                ),
            ),
        }
    }
    if let Some(objects) = quotas.max_objects
        && objects < 0
    {
        verdict.deny(
            "GB-C6",
            "spec.quotas.maxObjects",
            format!("quotas.maxObjects must be >= 0 (got {objects}); omit it for no object limit"),
        );
    }
}
