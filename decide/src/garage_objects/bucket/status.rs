//! The status of a converged GarageBucket, from Garage's last answer about it: `Ready` (and
//! `LifecycleConfigured` when the spec sets rules), usage against quotas, website, keys and
//! lifecycle rules. Pure.

use garage_api_types::BucketInfo;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use shared_types::conditions::common::CONDITION_READY;
use shared_types::conditions::{bucket as bucket_conditions, reason};
use shared_types::garage_bucket::{
    BucketKeyStatus, BucketPhase, GarageBucket, GarageBucketStatus, KeyPermissions,
    LifecycleRuleState, LifecycleRuleStatus, QuotaUsage, WebsiteStatus,
};

use crate::conditions::{self, Desired};
use crate::garage_objects::timestamp;

/// `status` (what the pass decided: aliases, managed grants) completed from `info`; websites
/// are served at `web_endpoint` (`<service>.<namespace>.svc:<port>`; no website URL is
/// reported when it is unknown).
pub fn ready_status(
    bucket: &GarageBucket,
    mut status: GarageBucketStatus,
    web_endpoint: Option<&str>,
    info: &BucketInfo,
) -> GarageBucketStatus {
    let generation = bucket.metadata.generation;
    status.conditions = Some(conditions::merge(
        status.conditions.as_deref(),
        &ready_conditions(bucket, info),
        &[
            CONDITION_READY,
            bucket_conditions::CONDITION_LIFECYCLE_CONFIGURED,
            // A bucket read again is neither stuck nor degraded.
            bucket_conditions::CONDITION_BUCKET_LOOKUP_STUCK,
            bucket_conditions::CONDITION_BUCKET_METADATA_DEGRADED,
        ],
        generation,
    ));
    status.phase = Some(BucketPhase::Ready);
    status.observed_generation = generation;
    status.created_at = timestamp(&info.created).map(Time);
    status.website_enabled = Some(info.website_access);
    status.website_config = info.website_config.as_ref().map(|c| WebsiteStatus {
        index_document: Some(c.index_document.clone()),
        error_document: c.error_document.clone(),
    });
    status.website_url = web_endpoint.filter(|_| info.website_access).map(|web| {
        format!(
            "http://{}.{web}",
            status.global_alias.clone().unwrap_or_default()
        )
    });
    status.incomplete_uploads = Some(info.unfinished_multipart_uploads);
    status.incomplete_upload_parts = Some(info.unfinished_multipart_upload_parts);
    status.incomplete_upload_bytes = Some(info.unfinished_multipart_upload_bytes);
    status.size = Some(human_bytes(info.bytes));
    status.quota_usage = Some(quota_usage(info));
    // Sorted: Garage lists keys in no stable order.
    let mut keys: Vec<_> = info.keys.iter().collect();
    keys.sort_by(|a, b| a.access_key_id.cmp(&b.access_key_id));
    status.keys = Some(
        keys.into_iter()
            .map(|k| BucketKeyStatus {
                key_id: Some(k.access_key_id.clone()),
                name: Some(k.name.clone()),
                permissions: Some(KeyPermissions {
                    read: Some(k.permissions.read),
                    write: Some(k.permissions.write),
                    owner: Some(k.permissions.owner),
                }),
            })
            .collect(),
    );
    status.lifecycle_rules = bucket.spec.lifecycle.as_ref().map(|l| {
        l.rules
            .iter()
            .flatten()
            .map(|r| LifecycleRuleStatus {
                id: Some(r.id.clone()),
                status: Some(r.status.unwrap_or(LifecycleRuleState::Enabled)),
            })
            .collect()
    });
    status
}

/// `Ready`, and `LifecycleConfigured` when the spec sets lifecycle rules: Garage versions that
/// do not keep them through the Admin API answer without them.
fn ready_conditions(bucket: &GarageBucket, info: &BucketInfo) -> Vec<Desired> {
    let mut desired = vec![Desired {
        type_: CONDITION_READY,
        status: true,
        reason: reason::REASON_BUCKET_READY,
        message: format!("bucket {} is ready", info.id),
    }];
    if bucket.spec.lifecycle.is_some() {
        let kept = info.lifecycle_rules.is_some();
        desired.push(Desired {
            type_: bucket_conditions::CONDITION_LIFECYCLE_CONFIGURED,
            status: kept,
            reason: if kept {
                reason::REASON_APPLIED
            } else {
                reason::REASON_APPLY_FAILED
            },
            message: if kept {
                "the lifecycle rules are in place".into()
            } else {
                "this Garage version does not keep lifecycle rules through its Admin API; upgrade Garage".into()
            },
        });
    }
    desired
}

/// Objects and bytes against their quotas.
fn quota_usage(info: &BucketInfo) -> QuotaUsage {
    let limit_size = info.quotas.max_size.and_then(|v| i64::try_from(v).ok());
    let limit_objects = info.quotas.max_objects.and_then(|v| i64::try_from(v).ok());
    let percent = |used: i64, limit: Option<i64>| {
        limit
            .filter(|l| *l > 0)
            .map(|l| i32::try_from(used.saturating_mul(100) / l).unwrap_or(i32::MAX))
    };
    QuotaUsage {
        object_count: Some(info.objects),
        object_limit: limit_objects,
        object_percent: percent(info.objects, limit_objects),
        size_bytes: Some(info.bytes),
        size_limit: limit_size,
        size_percent: percent(info.bytes, limit_size),
    }
}

/// `1.5 GiB`-style size for the printer column.
fn human_bytes(n: i64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// Where the cluster of `s` serves bucket websites: `<api service>.<namespace>.svc:<web port>`.
pub fn web_endpoint(s: &crate::desired::Settings) -> String {
    format!(
        "{}.{}.svc:{}",
        crate::names::api_service(&s.name),
        s.namespace,
        s.web_port.unwrap_or(3902)
    )
}
