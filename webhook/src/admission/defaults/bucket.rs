//! DEF-GB: the GarageBucket defaulter.

use shared_types::garage_bucket::{GarageBucket, LifecycleRuleState};

/// The website index document when website hosting is enabled without one.
pub const DEFAULT_INDEX_DOCUMENT: &str = "index.html";

/// DEF-GB: `spec.globalAlias` from `metadata.name` when empty (so the name must then itself be
/// a valid bucket name, GB-C3); `website.indexDocument` when the website is enabled without
/// one; every lifecycle rule's `status` `Enabled` when omitted.
pub fn default_bucket(obj: &GarageBucket) -> GarageBucket {
    let mut out = obj.clone();
    let spec = &mut out.spec;
    if spec.global_alias.as_deref().is_none_or(str::is_empty)
        && let Some(name) = out.metadata.name.as_ref().filter(|n| !n.is_empty())
    {
        spec.global_alias = Some(name.clone());
    }
    if let Some(website) = spec.website.as_mut()
        && website.enabled == Some(true)
        && website.index_document.as_deref().is_none_or(str::is_empty)
    {
        website.index_document = Some(DEFAULT_INDEX_DOCUMENT.to_owned());
    }
    let rules = spec.lifecycle.as_mut().and_then(|l| l.rules.as_mut());
    for rule in rules.into_iter().flatten() {
        rule.status.get_or_insert(LifecycleRuleState::Enabled);
    }
    out
}
