//! The bucket settings Garage should hold for a GarageBucket (quotas, website, lifecycle
//! rules), as the one `UpdateBucket` that brings Garage there, or nothing when it already is.
//! Pure.

use garage_api_types::{
    AbortIncompleteMultipartUpload, BucketInfo, BucketQuotas, BucketUpdate, LifecycleExpiration,
    LifecycleFilter, LifecycleRule, WebsiteAccess,
};
use shared_types::garage_bucket::{GarageBucketSpec, LifecycleRuleState, Rule};

use crate::desired::quantity::to_bytes;

/// The index document Garage serves when the spec names none.
pub const DEFAULT_INDEX: &str = "index.html";

/// A setting the spec asks for that cannot be expressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The field.
    pub field: &'static str,
    /// What is wrong and what to do.
    pub message: String,
}

/// The quotas the spec asks for.
pub fn quotas(spec: &GarageBucketSpec) -> Result<BucketQuotas, Invalid> {
    let q = spec.quotas.as_ref();
    let max_size = match q.and_then(|q| q.max_size.as_ref()) {
        None => None,
        Some(size) => Some(to_bytes(&size.0).ok_or_else(|| Invalid {
            field: "spec.quotas.maxSize",
            message: format!(
                "{:?} is not a non-negative quantity of bytes, e.g. 10Gi",
                size.0
            ),
        })?),
    };
    let max_objects = match q.and_then(|q| q.max_objects) {
        None => None,
        Some(n) => Some(u64::try_from(n).map_err(|_| Invalid {
            field: "spec.quotas.maxObjects",
            message: format!("{n} is negative; use a count of 0 or more"),
        })?),
    };
    Ok(BucketQuotas {
        max_size,
        max_objects,
    })
}

/// The website access the spec asks for.
pub fn website(spec: &GarageBucketSpec) -> WebsiteAccess {
    let w = spec.website.as_ref();
    if w.and_then(|w| w.enabled) != Some(true) {
        return WebsiteAccess {
            enabled: false,
            index_document: None,
            error_document: None,
            routing_rules: None,
        };
    }
    WebsiteAccess {
        enabled: true,
        index_document: Some(
            w.and_then(|w| w.index_document.clone())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| DEFAULT_INDEX.into()),
        ),
        error_document: w
            .and_then(|w| w.error_document.clone())
            .filter(|s| !s.is_empty()),
        routing_rules: None,
    }
}

fn website_matches(want: &WebsiteAccess, info: &BucketInfo) -> bool {
    if want.enabled != info.website_access {
        return false;
    }
    if !want.enabled {
        return true;
    }
    info.website_config.as_ref().is_some_and(|c| {
        Some(&c.index_document) == want.index_document.as_ref()
            && c.error_document.as_ref().filter(|s| !s.is_empty()) == want.error_document.as_ref()
    })
}

/// One lifecycle rule in Garage's vocabulary.
fn rule(r: &Rule) -> LifecycleRule {
    let filter = r.filter.as_ref().and_then(|f| {
        let out = LifecycleFilter {
            and: None,
            prefix: f.prefix.clone().filter(|p| !p.is_empty()),
            object_size_greater_than: f.object_size_greater_than,
            object_size_less_than: f.object_size_less_than,
        };
        (out != LifecycleFilter::default()).then_some(out)
    });
    let expiration = match (r.expiration_days, &r.expiration_date) {
        (None, None) => None,
        (days, date) => Some(LifecycleExpiration {
            days: days.map(i64::from),
            date: date
                .as_ref()
                .map(|d| d.0.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
        }),
    };
    LifecycleRule {
        id: Some(r.id.clone()),
        status: match r.status {
            Some(LifecycleRuleState::Disabled) => "Disabled".into(),
            _ => "Enabled".into(),
        },
        filter,
        expiration,
        abort_incomplete_multipart_upload: r.abort_incomplete_multipart_upload_days.map(|d| {
            AbortIncompleteMultipartUpload {
                days_after_initiation: i64::from(d),
            }
        }),
    }
}

/// The lifecycle rules the spec asks for; `None` when it leaves them to whoever else sets
/// them.
pub fn lifecycle(spec: &GarageBucketSpec) -> Option<Vec<LifecycleRule>> {
    let l = spec.lifecycle.as_ref()?;
    Some(l.rules.iter().flatten().map(rule).collect())
}

/// The same rule set, whatever order or date spelling Garage reads it back in.
fn same_rules(a: &[LifecycleRule], b: &[LifecycleRule]) -> bool {
    let norm = |rules: &[LifecycleRule]| {
        let mut v: Vec<String> = rules
            .iter()
            .map(|r| {
                let mut r = r.clone();
                if let Some(e) = r.expiration.as_mut() {
                    e.date = e.date.as_ref().map(|d| d.chars().take(10).collect());
                }
                format!("{r:?}")
            })
            .collect();
        v.sort();
        v
    };
    norm(a) == norm(b)
}

/// The update that brings `info` to `spec`, `None` when nothing differs.
pub fn update(spec: &GarageBucketSpec, info: &BucketInfo) -> Result<Option<BucketUpdate>, Invalid> {
    let mut u = BucketUpdate::default();
    let q = quotas(spec)?;
    if q != info.quotas {
        u.quotas = Some(q);
    }
    let w = website(spec);
    if !website_matches(&w, info) {
        u.website_access = Some(w);
    }
    if let Some(rules) = lifecycle(spec)
        && !same_rules(&rules, info.lifecycle_rules.as_deref().unwrap_or_default())
    {
        u.lifecycle_rules = Some(rules);
    }
    Ok((u != BucketUpdate::default()).then_some(u))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn spec(v: serde_json::Value) -> GarageBucketSpec {
        let mut v = v;
        v["clusterRef"] = serde_json::json!({"name": "garage"});
        serde_json::from_value(v).unwrap()
    }

    fn info(v: serde_json::Value) -> BucketInfo {
        let mut base = serde_json::json!({
            "id": "b1", "created": "2026-01-01T00:00:00Z", "globalAliases": ["b"],
            "websiteAccess": false, "keys": [], "objects": 0, "bytes": 0,
            "unfinishedUploads": 0, "unfinishedMultipartUploads": 0,
            "unfinishedMultipartUploadParts": 0, "unfinishedMultipartUploadBytes": 0,
            "quotas": {"maxSize": null, "maxObjects": null},
        });
        for (k, x) in v.as_object().unwrap() {
            base[k] = x.clone();
        }
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn a_bucket_that_matches_needs_no_update() {
        assert_eq!(
            update(&spec(serde_json::json!({})), &info(serde_json::json!({}))).unwrap(),
            None
        );
        let s = spec(serde_json::json!({
            "quotas": {"maxSize": "1Mi", "maxObjects": 5},
            "website": {"enabled": true, "errorDocument": "404.html"},
        }));
        let i = info(serde_json::json!({
            "quotas": {"maxSize": 1048576, "maxObjects": 5},
            "websiteAccess": true,
            "websiteConfig": {"indexDocument": "index.html", "errorDocument": "404.html"},
        }));
        assert_eq!(update(&s, &i).unwrap(), None);
    }

    #[test]
    fn quotas_are_set_and_removed() {
        let s = spec(serde_json::json!({"quotas": {"maxObjects": 2}}));
        let u = update(&s, &info(serde_json::json!({}))).unwrap().unwrap();
        assert_eq!(
            u.quotas,
            Some(BucketQuotas {
                max_size: None,
                max_objects: Some(2)
            })
        );
        let u = update(
            &spec(serde_json::json!({})),
            &info(serde_json::json!({"quotas": {"maxSize": 10, "maxObjects": null}})),
        )
        .unwrap()
        .unwrap();
        assert_eq!(u.quotas, Some(BucketQuotas::default()));
    }

    #[test]
    fn a_negative_quota_names_its_field() {
        let s = spec(serde_json::json!({"quotas": {"maxObjects": -1}}));
        let e = update(&s, &info(serde_json::json!({}))).unwrap_err();
        assert_eq!(e.field, "spec.quotas.maxObjects");
    }

    #[test]
    fn website_on_gets_the_default_index_and_off_sends_no_documents() {
        let s = spec(serde_json::json!({"website": {"enabled": true}}));
        let u = update(&s, &info(serde_json::json!({}))).unwrap().unwrap();
        let w = u.website_access.unwrap();
        assert!(w.enabled);
        assert_eq!(w.index_document.as_deref(), Some(DEFAULT_INDEX));
        let off = update(
            &spec(serde_json::json!({"website": {"enabled": false, "indexDocument": "x"}})),
            &info(
                serde_json::json!({"websiteAccess": true, "websiteConfig": {"indexDocument": "x"}}),
            ),
        )
        .unwrap()
        .unwrap()
        .website_access
        .unwrap();
        assert_eq!(
            (off.enabled, off.index_document, off.error_document),
            (false, None, None)
        );
    }

    #[test]
    fn lifecycle_rules_are_exact_when_set_and_left_alone_when_not() {
        let s = spec(serde_json::json!({"lifecycle": {"rules": [
            {"id": "old", "expirationDays": 30, "filter": {"prefix": "logs/"}},
            {"id": "mpu", "abortIncompleteMultipartUploadDays": 2, "status": "Disabled"},
        ]}}));
        let u = update(&s, &info(serde_json::json!({}))).unwrap().unwrap();
        let rules = u.lifecycle_rules.unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].expiration.as_ref().unwrap().days, Some(30));
        assert_eq!(
            rules[0].filter.as_ref().unwrap().prefix.as_deref(),
            Some("logs/")
        );
        assert_eq!(rules[1].status, "Disabled");
        // Read back in another order: nothing to do.
        let back: Vec<serde_json::Value> = rules
            .iter()
            .rev()
            .map(|r| serde_json::to_value(r).unwrap())
            .collect();
        let i = info(serde_json::json!({"lifecycleRules": back}));
        assert_eq!(update(&s, &i).unwrap(), None);
        // No lifecycle in the spec: rules set elsewhere stay.
        assert_eq!(update(&spec(serde_json::json!({})), &i).unwrap(), None);
    }
}
