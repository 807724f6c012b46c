//! What keeps the node-local pools from being ready, as one ordered list, and the
//! `NodeLocalPoolsReady` condition it gives: the first kind of blocker, in the order of
//! [`Blocker`], names the reason, and the message lists that kind's examples. Every user
//! message of the pools' condition lives here.

use shared_types::conditions::{cluster as cc, reason};

use crate::conditions::Desired;

/// Examples a condition message lists before it only counts.
const EXAMPLES: usize = 5;
/// Longest condition message.
const MAX_MESSAGE: usize = 4096;

/// One thing that is not right, with what the message names. The variants are in the order
/// the condition reports them: a disk two processes could share before anything else, the
/// members simply not placed yet last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocker {
    /// A pool's HostPath overlaps another pool's, another cluster's, or its own.
    PathConflict(String),
    /// Another pool's HostPath claim on a Node covers this pool's disks.
    ClaimConflict(String),
    /// A pool's new disk layout would drop or remap a disk it rolled out.
    LayoutRefused(String),
    /// A member reports a Garage node ID another member reports too.
    Collision(String),
    /// Several committed roles are tagged for one pool and Node, and nothing says which.
    Ambiguous(String),
    /// The selectors choose this many Nodes, more than one cluster may hold.
    TooMany(usize),
    /// A Node selected by more than one pool, with those pools.
    SelectorConflict(String),
    /// A Node a new pool selects while another pool still holds it.
    Move(String),
    /// A pod of a pool DaemonSet that no longer exists.
    OldPod(String),
    /// A pool whose selector matches no Node.
    EmptyPool(String),
    /// A Node whose member is not in the layout yet.
    Joining(String),
    /// A member leaving through the drain transaction.
    Retiring(String),
}

impl Blocker {
    /// Position in the report order.
    fn rank(&self) -> u8 {
        match self {
            Self::PathConflict(_) => 0,
            Self::ClaimConflict(_) => 1,
            Self::LayoutRefused(_) => 2,
            Self::Collision(_) => 3,
            Self::Ambiguous(_) => 4,
            Self::TooMany(_) => 5,
            Self::SelectorConflict(_) => 6,
            Self::Move(_) => 7,
            Self::OldPod(_) => 8,
            Self::EmptyPool(_) => 9,
            Self::Joining(_) => 10,
            Self::Retiring(_) => 11,
        }
    }

    /// What the message names for this blocker.
    fn example(&self) -> String {
        match self {
            Self::TooMany(n) => n.to_string(),
            Self::PathConflict(x)
            | Self::ClaimConflict(x)
            | Self::LayoutRefused(x)
            | Self::Collision(x)
            | Self::Ambiguous(x)
            | Self::SelectorConflict(x)
            | Self::Move(x)
            | Self::OldPod(x)
            | Self::EmptyPool(x)
            | Self::Joining(x)
            | Self::Retiring(x) => x.clone(),
        }
    }
}

/// Every blocker found in a pass.
#[derive(Debug, Clone, Default)]
pub struct Blockers(pub Vec<Blocker>);

impl Blockers {
    /// Adds one.
    pub fn push(&mut self, b: Blocker) {
        self.0.push(b);
    }

    /// True when some blocker is a member not placed yet.
    pub fn joining(&self) -> bool {
        self.0.iter().any(|b| matches!(b, Blocker::Joining(_)))
    }

    /// The members leaving, sorted: the order they drain in.
    pub fn retiring(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .0
            .iter()
            .filter_map(|b| match b {
                Blocker::Retiring(m) => Some(m.clone()),
                _ => None,
            })
            .collect();
        out.sort();
        out
    }

    /// `NodeLocalPoolsReady`: converged without blockers, else the first kind's reason and
    /// its examples.
    pub fn condition(&self) -> Desired {
        let Some(first) = self.0.iter().map(Blocker::rank).min() else {
            return ready(true, reason::REASON_CONVERGED, String::new());
        };
        let of_kind: Vec<&Blocker> = self.0.iter().filter(|b| b.rank() == first).collect();
        let list: Vec<String> = of_kind.iter().map(|b| b.example()).collect();
        let (why, message) = explain(of_kind[0], &examples(&list), self.retiring().is_empty());
        ready(false, why, cap(message))
    }
}

fn ready(status: bool, reason: &'static str, message: String) -> Desired {
    Desired {
        type_: cc::CONDITION_NODE_LOCAL_POOLS_READY,
        status,
        reason,
        message,
    }
}

/// The reason and message for blockers of `kind`'s kind, listing `list`.
fn explain(kind: &Blocker, list: &str, none_retiring: bool) -> (&'static str, String) {
    match kind {
        Blocker::PathConflict(_) => (
            reason::REASON_HOST_PATH_CONFLICT,
            format!(
                "{list}. Two Garage processes must never share a HostPath; nothing is created or started for such a pool until the paths are disjoint"
            ),
        ),
        Blocker::ClaimConflict(_) => (
            reason::REASON_HOST_PATH_CONFLICT,
            format!(
                "{list}. A HostPath claim stays on a Node until its pool's member there is gone or its cluster is destroyed; nothing of the claiming pool is started on such a Node. Choose other HostPaths, or remove a claim left by a cluster that is gone from the Node's annotations by hand"
            ),
        ),
        Blocker::LayoutRefused(_) => (
            reason::REASON_DISK_LAYOUT_CHANGE_BLOCKED,
            format!(
                "{list}. A data path a pool rolled out is never removed, remapped or loosened in place: nothing of such a pool is updated. Restore the path (mark it readOnly: true to stop new blocks there), or remove the whole pool, wait until its GarageNodes, pods, DaemonSet and config revisions are gone, and recreate it with the new disks"
            ),
        ),
        Blocker::Collision(_) => (
            reason::REASON_IDENTITY_COLLISION,
            format!(
                "{list}: each reports a Garage node ID another member also reports; they are one identity, not two replicas. Stop the duplicate process and give its Node a unique metadata directory. Pool membership changes are stopped"
            ),
        ),
        Blocker::Ambiguous(_) => (
            reason::REASON_IDENTITY_COLLISION,
            format!(
                "{list}: several committed Garage roles are tagged for the same pool and Node, and the Node has no identity record saying which one its disk holds. No member is created there; remove the roles that are not this disk's (its metadata directory's node_key names the right one)"
            ),
        ),
        Blocker::TooMany(selected) => (
            reason::REASON_MEMBER_LIMIT_EXCEEDED,
            format!(
                "the pool selectors choose {selected} Nodes; one cluster holds at most {} node-local members. Nothing new is activated",
                super::plan::MAX_POOL_MEMBERS
            ),
        ),
        Blocker::SelectorConflict(_) => (
            reason::REASON_SELECTOR_CONFLICT,
            format!("Nodes selected by more than one pool are left out of every pool: {list}"),
        ),
        Blocker::Move(_) => (
            reason::REASON_DIRECT_NODE_LOCAL_POOL_MOVE_BLOCKED,
            format!(
                "Nodes selected by a new pool while another still holds them: {list}. Remove the Node from its old pool and wait for its GarageNode, activation label and pod to go before selecting it again"
            ),
        ),
        Blocker::OldPod(_) => (
            reason::REASON_WAITING_FOR_PREVIOUS_NODE_LOCAL_POOL_POD,
            format!(
                "pods of a pool DaemonSet that no longer exists still run: {list}; the DaemonSet is recreated only after they are gone"
            ),
        ),
        Blocker::EmptyPool(_) => (
            reason::REASON_WAITING_FOR_MEMBERS,
            format!(
                "pools {list} select no Node; their members are kept. Label Nodes to match the selector, or remove the pool to drain it"
            ),
        ),
        Blocker::Joining(_) => (
            if none_retiring {
                reason::REASON_WAITING_FOR_MEMBERS
            } else {
                reason::REASON_WAITING_FOR_REPLACEMENT
            },
            format!("members not in the layout yet on Nodes {list}"),
        ),
        Blocker::Retiring(_) => (
            reason::REASON_DRAINING,
            format!("leaving through prepared drains, one at a time: {list}"),
        ),
    }
}

/// At most five sorted examples and the count.
pub fn examples(items: &[String]) -> String {
    let mut sorted: Vec<&String> = items.iter().collect();
    sorted.sort();
    sorted.dedup();
    let shown: Vec<&str> = sorted.iter().take(EXAMPLES).map(|s| s.as_str()).collect();
    if sorted.len() > EXAMPLES {
        format!(
            "{} (and {} more, {} in all)",
            shown.join(", "),
            sorted.len() - EXAMPLES,
            sorted.len()
        )
    } else {
        shown.join(", ")
    }
}

/// A message cut to the condition limit on a character boundary.
pub fn cap(mut message: String) -> String {
    if message.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE - 3;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push_str("...");
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(items: Vec<Blocker>) -> Desired {
        Blockers(items).condition()
    }

    #[test]
    fn no_blocker_is_converged() {
        let c = of(vec![]);
        assert!(c.status);
        assert_eq!(c.reason, reason::REASON_CONVERGED);
    }

    #[test]
    fn the_first_kind_in_report_order_names_the_condition() {
        let table: Vec<(Vec<Blocker>, &str, &str)> = vec![
            (
                vec![
                    Blocker::Retiring("m".into()),
                    Blocker::PathConflict("pool a: /x overlaps /x/y".into()),
                ],
                reason::REASON_HOST_PATH_CONFLICT,
                "pool a: /x overlaps /x/y",
            ),
            (
                vec![
                    Blocker::Joining("n1".into()),
                    Blocker::TooMany(300),
                    Blocker::Move("n2".into()),
                ],
                reason::REASON_MEMBER_LIMIT_EXCEEDED,
                "choose 300 Nodes",
            ),
            (
                vec![
                    Blocker::EmptyPool("p".into()),
                    Blocker::OldPod("pod-1".into()),
                ],
                reason::REASON_WAITING_FOR_PREVIOUS_NODE_LOCAL_POOL_POD,
                "pod-1",
            ),
            (
                vec![Blocker::Joining("n1".into())],
                reason::REASON_WAITING_FOR_MEMBERS,
                "Nodes n1",
            ),
            (
                vec![Blocker::Retiring("m".into()), Blocker::Joining("n1".into())],
                reason::REASON_WAITING_FOR_REPLACEMENT,
                "Nodes n1",
            ),
            (
                vec![
                    Blocker::Retiring("m2".into()),
                    Blocker::Retiring("m1".into()),
                ],
                reason::REASON_DRAINING,
                "one at a time: m1, m2",
            ),
        ];
        for (items, why, says) in table {
            let c = of(items.clone());
            assert!(!c.status, "{items:?}");
            assert_eq!(c.reason, why, "{items:?}");
            assert!(c.message.contains(says), "{items:?}: {}", c.message);
        }
    }

    #[test]
    fn only_the_first_kinds_examples_are_listed_and_counted_past_five() {
        let mut items: Vec<Blocker> = (0..7).map(|i| Blocker::Move(format!("n{i}"))).collect();
        items.push(Blocker::Joining("elsewhere".into()));
        let c = of(items);
        assert!(
            c.message
                .contains("n0, n1, n2, n3, n4 (and 2 more, 7 in all)")
        );
        assert!(!c.message.contains("elsewhere"));
    }

    #[test]
    fn messages_list_five_sorted_examples_and_a_count() {
        let items: Vec<String> = (0..8).rev().map(|i| format!("n{i}")).collect();
        assert_eq!(
            examples(&items),
            "n0, n1, n2, n3, n4 (and 3 more, 8 in all)"
        );
        assert!(cap("x".repeat(5000)).len() <= MAX_MESSAGE);
    }

    #[test]
    fn a_long_message_is_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_MESSAGE);
        let cut = cap(long);
        assert!(cut.len() <= MAX_MESSAGE);
        assert!(cut.ends_with("..."));
    }
}
