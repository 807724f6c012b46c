//! Which Garage identity a new pool member must prove before it joins: cold recovery. A
//! member's GarageNode can be gone while its disk, and the role Garage holds for it, remain
//! (the cluster was force-deleted and recreated, the operator's objects were lost). Its pod
//! must then come back as exactly that identity, never as a second role. The identity is the
//! one the Node's record names, or, when the record is gone too (the Node object was
//! re-registered), the one committed storage role tagged with this cluster, pool and Node.

use garage_api_types::LayoutRole;
use shared_types::keys::tag;

use crate::desired::Settings;

/// What a new member is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pin {
    /// Nothing: a fresh identity that joins through the ordinary rules.
    Fresh,
    /// The node ID the pod must report.
    To(String),
    /// Several committed roles carry this pool's tags for the Node: no one of them can be
    /// chosen, and the member is not created.
    Ambiguous(Vec<String>),
}

/// The pin of the member of `pool` on Kubernetes Node `node`: its `record`, else the one
/// positive-capacity committed role tagged `cluster:<name>/<namespace>`, `tier:storage`,
/// `node-local-pool:<pool>` and `kubernetes-node:<node>`. The cluster's UID is deliberately
/// not required: a recreated cluster has a new one, and it is that cluster that recovers.
pub fn pin(
    s: &Settings,
    pool: &str,
    node: &str,
    record: Option<&str>,
    committed: &[LayoutRole],
) -> Pin {
    if let Some(id) = record {
        return Pin::To(id.to_owned());
    }
    let wanted = [
        format!("{}{}/{}", tag::TAG_PREFIX_CLUSTER, s.name, s.namespace),
        format!("{}storage", tag::TAG_PREFIX_TIER),
        format!("{}{pool}", tag::TAG_PREFIX_NODE_LOCAL_POOL),
        format!("{}{node}", tag::TAG_PREFIX_KUBERNETES_NODE),
    ];
    let mut ids: Vec<String> = committed
        .iter()
        .filter(|r| r.capacity.is_some_and(|c| c > 0))
        .filter(|r| wanted.iter().all(|w| r.tags.contains(w)))
        .map(|r| r.id.to_string())
        .collect();
    ids.sort();
    match ids.len() {
        0 => Pin::Fresh,
        1 => Pin::To(ids.remove(0)),
        _ => Pin::Ambiguous(ids),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::desired::test_support::cluster;

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    fn role(id: &str, capacity: Option<u64>, tags: &[&str]) -> LayoutRole {
        serde_json::from_value(serde_json::json!({
            "id": id, "zone": "z", "capacity": capacity, "tags": tags,
        }))
        .unwrap()
    }

    fn settings() -> Settings {
        Settings::from_cluster(&cluster(0)).unwrap()
    }

    fn tags_for(s: &Settings, pool: &str, node: &str) -> Vec<String> {
        vec![
            format!("cluster:{}/{}", s.name, s.namespace),
            "cluster-uid:some-earlier-uid".into(),
            "tier:storage".into(),
            format!("node-local-pool:{pool}"),
            format!("kubernetes-node:{node}"),
        ]
    }

    fn tagged(s: &Settings, id: &str, pool: &str, node: &str) -> LayoutRole {
        let tags = tags_for(s, pool, node);
        let refs: Vec<&str> = tags.iter().map(String::as_str).collect();
        role(id, Some(1 << 30), &refs)
    }

    #[test]
    fn the_nodes_record_wins() {
        let s = settings();
        let roles = [tagged(&s, B, "local", "n1")];
        assert_eq!(pin(&s, "local", "n1", Some(A), &roles), Pin::To(A.into()));
    }

    #[test]
    fn without_a_record_the_one_tagged_committed_role_is_the_pin() {
        let s = settings();
        let roles = [
            tagged(&s, A, "local", "n1"),
            tagged(&s, B, "local", "n2"),
            // Another pool on the same Node, a gateway and another cluster do not count.
            tagged(&s, B, "other", "n1"),
            role(
                B,
                None,
                &[
                    "tier:storage",
                    "node-local-pool:local",
                    "kubernetes-node:n1",
                ],
            ),
        ];
        assert_eq!(pin(&s, "local", "n1", None, &roles), Pin::To(A.into()));
        assert_eq!(pin(&s, "local", "n3", None, &roles), Pin::Fresh);
        let mut foreign = tagged(&s, B, "local", "n3");
        foreign.tags[0] = "cluster:garage/elsewhere".into();
        assert_eq!(pin(&s, "local", "n3", None, &[foreign]), Pin::Fresh);
    }

    #[test]
    fn two_tagged_roles_for_one_node_pin_nothing() {
        let s = settings();
        let roles = [tagged(&s, B, "local", "n1"), tagged(&s, A, "local", "n1")];
        assert_eq!(
            pin(&s, "local", "n1", None, &roles),
            Pin::Ambiguous(vec![A.into(), B.into()])
        );
    }
}
