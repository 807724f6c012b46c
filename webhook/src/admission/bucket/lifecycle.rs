//! GB-C7: lifecycle rules within what Garage implements, checked here because Garage answers
//! an unsupported rule with an opaque 400 at reconcile time. Always applied, even to an
//! unchanged released spec.
//!
//! A rule `status` other than `Enabled` or `Disabled` never reaches the rules: the type has
//! exactly those two values (and the CRD enum refuses others first), so such an object does
//! not decode and the review is refused naming the field.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use shared_types::garage_bucket::{GarageBucket, Rule};

use crate::admission::Verdict;

const SECONDS_PER_DAY: i64 = 86_400;

fn is_midnight_utc(time: &Time) -> bool {
    time.0.as_second().rem_euclid(SECONDS_PER_DAY) == 0 && time.0.subsec_nanosecond() == 0
}

/// GB-C7 on `spec.lifecycle.rules`.
pub fn check(bucket: &GarageBucket, verdict: &mut Verdict) {
    let rules = bucket
        .spec
        .lifecycle
        .as_ref()
        .and_then(|l| l.rules.as_ref());
    let mut ids: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        let field = format!("spec.lifecycle.rules[{i}]");
        if rule.id.is_empty() {
            verdict.deny(
                "GB-C7",
                format!("{field}.id"),
                format!("lifecycle.rules[{i}]: id is required; give the rule a unique name"),
            );
        } else if let Some(previous) = ids.insert(&rule.id, i) {
            verdict.deny(
                "GB-C7",
                format!("{field}.id"),
                format!(
                    "lifecycle.rules[{i}]: duplicate id {:?} (also rules[{previous}]); rule ids must be unique",
                    rule.id
                ),
            );
        }
        actions(i, &field, rule, verdict);
        filter(i, &field, rule, verdict);
    }
}

fn actions(i: usize, field: &str, rule: &Rule, verdict: &mut Verdict) {
    let (days, date, abort) = (
        rule.expiration_days,
        rule.expiration_date.as_ref(),
        rule.abort_incomplete_multipart_upload_days,
    );
    if days.is_none() && date.is_none() && abort.is_none() {
        verdict.deny(
            "GB-C7",
            field,
            format!("lifecycle.rules[{i}]: at least one of expirationDays, expirationDate, abortIncompleteMultipartUploadDays must be set; a rule without an action does nothing"),
        );
    }
    if days.is_some() && date.is_some() {
        verdict.deny(
            "GB-C7",
            field,
            format!("lifecycle.rules[{i}]: expirationDays and expirationDate are mutually exclusive; keep one"),
        );
    }
    if let Some(d) = days
        && d < 1
    {
        verdict.deny(
            "GB-C7",
            format!("{field}.expirationDays"),
            format!("lifecycle.rules[{i}]: expirationDays must be >= 1 (got {d}); expire objects after one day or more"),
        );
    }
    if let Some(t) = date
        && !is_midnight_utc(t)
    {
        verdict.deny(
            "GB-C7",
            format!("{field}.expirationDate"),
            format!(
                "lifecycle.rules[{i}]: expirationDate must be midnight UTC (00:00:00Z), got {}; Garage expires objects by whole days",
                t.0
            ),
        );
    }
    if let Some(d) = abort
        && d < 1
    {
        verdict.deny(
            "GB-C7",
            format!("{field}.abortIncompleteMultipartUploadDays"),
            format!(
                "lifecycle.rules[{i}]: abortIncompleteMultipartUploadDays must be >= 1 (got {d}); abort uploads after one day or more"
            ),
        );
    }
}

fn filter(i: usize, field: &str, rule: &Rule, verdict: &mut Verdict) {
    let Some(filter) = &rule.filter else {
        return;
    };
    let (gt, lt) = (
        filter.object_size_greater_than,
        filter.object_size_less_than,
    );
    if let Some(gt) = gt
        && gt < 0
    {
        verdict.deny(
            "GB-C7",
            format!("{field}.filter.objectSizeGreaterThan"),
            format!("lifecycle.rules[{i}]: filter.objectSizeGreaterThan must be >= 0 (got {gt}); omit it to match objects of any size"),
        );
    }
    if let Some(lt) = lt
        && lt < 1
    {
        verdict.deny(
            "GB-C7",
            format!("{field}.filter.objectSizeLessThan"),
            format!("lifecycle.rules[{i}]: filter.objectSizeLessThan must be >= 1 (got {lt}); omit it to match objects of any size"),
        );
    }
    if let (Some(gt), Some(lt)) = (gt, lt)
        && gt >= lt
    {
        verdict.deny(
            "GB-C7",
            format!("{field}.filter"),
            format!("lifecycle.rules[{i}]: filter.objectSizeGreaterThan ({gt}) must be less than objectSizeLessThan ({lt}), or the rule matches no object"),
        );
    }
}
