//! `spec.workers`: Garage's background-worker variables, set on each node through the Admin
//! API (`SetWorkerVariable`) where the node reports another value. Garage keeps the value a
//! node was given; a node that lost it (replaced metadata, a hand-made change) differs again
//! and is set again on a later pass.

use std::collections::BTreeMap;

use shared_types::garage_cluster::common::WorkersConfig;

use garage_api_types::NodeId;

/// Garage's name for the scrub worker's pause factor.
pub const SCRUB_TRANQUILITY: &str = "scrub-tranquility";
/// Garage's name for the number of block resync workers.
pub const RESYNC_WORKER_COUNT: &str = "resync-worker-count";
/// Garage's name for the resync workers' pause factor.
pub const RESYNC_TRANQUILITY: &str = "resync-tranquility";

/// One variable to set on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetVariable {
    /// The node.
    pub node: NodeId,
    /// Garage's variable name.
    pub variable: &'static str,
    /// The value, as Garage reads it.
    pub value: String,
}

/// The variables the spec sets, by Garage's names; empty when `spec.workers` sets none.
pub fn wanted(spec: Option<&WorkersConfig>) -> Vec<(&'static str, String)> {
    let Some(w) = spec else {
        return Vec::new();
    };
    [
        (SCRUB_TRANQUILITY, w.scrub_tranquility),
        (RESYNC_WORKER_COUNT, w.resync_worker_count),
        (RESYNC_TRANQUILITY, w.resync_tranquility),
    ]
    .into_iter()
    .filter_map(|(name, v)| v.map(|v| (name, v.to_string())))
    .collect()
}

/// What to set: every wanted variable on every node in `nodes` whose reported value differs
/// (a node that did not answer is left for a later pass).
pub fn to_set(
    wanted: &[(&'static str, String)],
    nodes: &[NodeId],
    reported: &BTreeMap<NodeId, BTreeMap<String, String>>,
) -> Vec<SetVariable> {
    let mut out = Vec::new();
    for node in nodes {
        let Some(vars) = reported.get(node) else {
            continue;
        };
        for (variable, value) in wanted {
            if vars.get(*variable).map(|v| v.trim()) != Some(value.as_str()) {
                out.push(SetVariable {
                    node: node.clone(),
                    variable,
                    value: value.clone(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::id;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn only_the_variables_the_spec_sets_are_wanted() {
        assert!(wanted(None).is_empty());
        assert!(wanted(Some(&WorkersConfig::default())).is_empty());
        let spec = WorkersConfig {
            scrub_tranquility: Some(0),
            resync_worker_count: Some(4),
            resync_tranquility: None,
        };
        assert_eq!(
            wanted(Some(&spec)),
            [
                (SCRUB_TRANQUILITY, "0".to_owned()),
                (RESYNC_WORKER_COUNT, "4".to_owned())
            ]
        );
    }

    #[test]
    fn a_node_is_set_only_where_it_reports_another_value() {
        let want = vec![
            (SCRUB_TRANQUILITY, "7".to_owned()),
            (RESYNC_WORKER_COUNT, "2".to_owned()),
        ];
        let nodes = [id(1), id(2), id(3), id(4)];
        let reported: BTreeMap<NodeId, BTreeMap<String, String>> = [
            // Holds both already (Garage may pad a value).
            (
                id(1),
                vars(&[(SCRUB_TRANQUILITY, "7"), (RESYNC_WORKER_COUNT, " 2 ")]),
            ),
            // Restarted on a fresh metadata directory: Garage's defaults.
            (
                id(2),
                vars(&[(SCRUB_TRANQUILITY, "4"), (RESYNC_WORKER_COUNT, "1")]),
            ),
            // Does not report one of them at all.
            (id(3), vars(&[(SCRUB_TRANQUILITY, "7")])),
        ]
        .into();
        let got: Vec<(NodeId, &str, String)> = to_set(&want, &nodes, &reported)
            .into_iter()
            .map(|s| (s.node, s.variable, s.value))
            .collect();
        assert_eq!(
            got,
            [
                (id(2), SCRUB_TRANQUILITY, "7".to_owned()),
                (id(2), RESYNC_WORKER_COUNT, "2".to_owned()),
                (id(3), RESYNC_WORKER_COUNT, "2".to_owned()),
            ],
            "node 4 did not answer and is left for a later pass"
        );
    }
}
