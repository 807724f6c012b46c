//! Bucket aliases: the alias grammar GB-AL (also applied to GarageKey bucket permissions by
//! GK-C4), the global alias GB-C3 and the key-local aliases GB-C4.

use std::collections::BTreeMap;

use shared_types::garage_bucket::GarageBucket;

use crate::admission::Verdict;
use crate::admission::shared::names::is_dns1123_subdomain;

/// GB-AL: what makes `alias` unusable as a Garage bucket name, or `None`. Garage's own rules
/// (S3 bucket naming) plus the reserved `-s3alias` suffix.
pub fn alias_problem(alias: &str) -> Option<&'static str> {
    if !(3..=63).contains(&alias.len()) {
        return Some("must contain between 3 and 63 characters");
    }
    if !alias
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
    {
        return Some("must contain only lowercase letters, digits, dots, and hyphens");
    }
    let edge = |c: char| c == '.' || c == '-';
    if alias.starts_with(edge) || alias.ends_with(edge) {
        return Some("must start and end with a letter or digit");
    }
    if alias.parse::<std::net::IpAddr>().is_ok() {
        return Some("must not be formatted as an IP address");
    }
    if alias.starts_with("xn--") || alias.contains(".xn--") {
        return Some("must not contain a punycode label (xn--)");
    }
    if alias.ends_with("-s3alias") {
        return Some("uses the reserved -s3alias suffix");
    }
    None
}

/// GB-AL as a message for the alias at `field`, if it is unusable.
pub fn alias_message(field: &str, alias: &str) -> Option<String> {
    alias_problem(alias).map(|why| format!("{field} {alias:?} {why}; choose another bucket name"))
}

/// GB-C3: the global alias, `spec.globalAlias` or else `metadata.name`, follows GB-AL.
pub fn check_global_alias(bucket: &GarageBucket, verdict: &mut Verdict) {
    let name = bucket.metadata.name.as_deref().unwrap_or_default();
    let alias = bucket
        .spec
        .global_alias
        .as_deref()
        .filter(|a| !a.is_empty())
        .unwrap_or(name);
    let Some(why) = alias_problem(alias) else {
        return;
    };
    let message = if alias == name {
        format!(
            "globalAlias {alias:?} (metadata.name, the default when spec.globalAlias is omitted) {why}; set spec.globalAlias to a valid bucket name"
        )
    } else {
        format!("globalAlias {alias:?} {why}; choose another bucket name")
    };
    verdict.deny("GB-C3", "spec.globalAlias", message);
}

/// GB-C4: every local alias names its key by a DNS-1123 subdomain, follows GB-AL and appears
/// once per key.
pub fn check_local_aliases(bucket: &GarageBucket, verdict: &mut Verdict) {
    let mut seen: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (i, local) in bucket.spec.local_aliases.iter().flatten().enumerate() {
        let field = format!("spec.localAliases[{i}]");
        if !is_dns1123_subdomain(&local.key_ref) {
            verdict.deny(
                "GB-C4",
                format!("{field}.keyRef"),
                format!(
                    "localAliases[{i}].keyRef {:?} is invalid: name a GarageKey of this namespace (a lower-case DNS subdomain name)",
                    local.key_ref
                ),
            );
        }
        if let Some(message) = alias_message(&format!("localAliases[{i}].alias"), &local.alias) {
            verdict.deny("GB-C4", format!("{field}.alias"), message);
        }
        let pair = (local.key_ref.as_str(), local.alias.as_str());
        if let Some(previous) = seen.insert(pair, i) {
            verdict.deny(
                "GB-C4",
                field,
                format!(
                    "localAliases[{i}] duplicates localAliases[{previous}] for key {:?} and alias {:?}; remove one of them",
                    local.key_ref, local.alias
                ),
            );
        }
    }
}
