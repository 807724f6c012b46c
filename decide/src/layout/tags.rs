//! The tags of an operator-written role: operator tags first, then user
//! tags without reserved prefixes.

use shared_types::keys::tag;

/// The tier a role is written for, as its `tier:` tag names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// A member that stores data (positive capacity).
    Storage,
    /// A capacity-less member that serves the APIs.
    Gateway,
}

impl Tier {
    /// The tag's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Storage => "storage",
            Tier::Gateway => "gateway",
        }
    }
}

/// Tags of a storage member; see [`role_tags`].
pub fn storage_role_tags(
    cluster: &str,
    namespace: &str,
    uid: &str,
    user: &[String],
) -> Vec<String> {
    role_tags(cluster, namespace, uid, Tier::Storage, user)
}

/// Tags of an operator-written role: `cluster:<C>/<NS>`, `cluster-uid:<uid>`, `tier:<tier>`,
/// then the user tags without reserved prefixes, as given.
pub fn role_tags(
    cluster: &str,
    namespace: &str,
    uid: &str,
    tier: Tier,
    user: &[String],
) -> Vec<String> {
    let mut tags = vec![
        format!("{}{cluster}/{namespace}", tag::TAG_PREFIX_CLUSTER),
        format!("{}{uid}", tag::TAG_PREFIX_CLUSTER_UID),
        format!("{}{}", tag::TAG_PREFIX_TIER, tier.as_str()),
    ];
    tags.extend(
        user.iter()
            .filter(|t| !tag::RESERVED_TAG_PREFIXES.iter().any(|p| t.starts_with(p)))
            .cloned(),
    );
    tags
}

/// Garage keeps tags as given; two roles are the same when their tag multisets are.
pub fn same_multiset(a: &[String], b: &[String]) -> bool {
    let mut a: Vec<&String> = a.iter().collect();
    let mut b: Vec<&String> = b.iter().collect();
    a.sort();
    b.sort();
    a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_tags_come_first_and_forged_ones_are_dropped() {
        let t = storage_role_tags("g", "ns", "u1", &["rack".into(), "tier:gateway".into()]);
        assert_eq!(
            t,
            ["cluster:g/ns", "cluster-uid:u1", "tier:storage", "rack"]
        );
        assert!(same_multiset(
            &t,
            &[
                "rack".into(),
                "tier:storage".into(),
                "cluster-uid:u1".into(),
                "cluster:g/ns".into()
            ]
        ));
        assert!(!same_multiset(&t, &t[..3]));
    }
}
