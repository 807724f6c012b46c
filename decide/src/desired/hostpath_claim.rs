//! The HostPath claim a node-local pool leaves on each Kubernetes Node it runs on: a JSON
//! annotation naming the cluster, the pool, every HostPath the pool has mounted there and,
//! once committed, the Garage node ID its disk holds. It outlives the pods, the DaemonSet and
//! the GarageNodes (it goes only when the member's finalizer has seen its pod gone, or at
//! Destroy), so a disk stays spoken for while nothing runs on it: another pool or cluster
//! whose paths overlap a claim on that Node is refused (`HostPathConflict`), and no pool pod
//! is released onto a Node before the claim covers every path the pod mounts.
//!
//! The claim only grows: paths are appended, never dropped (a disk a pool rolled out is never
//! detached in place), and the node ID is set once.

use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;
use serde::{Deserialize, Serialize};
use shared_types::garage_cluster::v1beta2::NodeLocalPoolSpec;
use shared_types::keys::generated::{
    GENERATED_KEY_PREFIX, SEGMENT_NODE_LOCAL, SUFFIX_HOSTPATH_CLAIM, hostpath_claim_annotation,
};

use super::Settings;
use super::pool::digest16;

/// The only claim format this version writes and reads.
pub const VERSION: u32 = 1;

/// The claim, as stored in the annotation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    /// Format version ([`VERSION`]).
    pub version: u32,
    /// Namespace of the claiming GarageCluster.
    pub cluster_namespace: String,
    /// Name of the claiming GarageCluster.
    pub cluster_name: String,
    /// The pool.
    pub node_local_pool_name: String,
    /// Every HostPath the pool has mounted on this Node, sorted.
    pub host_paths: Vec<String>,
    /// The Garage node ID committed for this disk, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub garage_node_id: Option<String>,
}

/// The claim annotation of `pool` of the cluster `s` describes: keyed by namespace and name
/// (not UID), so it survives re-creating the cluster under the same name.
pub fn key(s: &Settings, pool: &str) -> String {
    hostpath_claim_annotation(
        &digest16(&format!("{}/{}", s.namespace, s.name)),
        &digest16(pool),
    )
}

/// True for the claim annotation of any pool of any cluster.
pub fn is_claim_key(key: &str) -> bool {
    key.starts_with(GENERATED_KEY_PREFIX) && key.ends_with(SUFFIX_HOSTPATH_CLAIM)
}

/// True for the claim annotation of any pool of the cluster `namespace/name`.
pub fn is_claim_of(namespace: &str, name: &str, key: &str) -> bool {
    let prefix = format!(
        "{GENERATED_KEY_PREFIX}{}{SEGMENT_NODE_LOCAL}",
        digest16(&format!("{namespace}/{name}"))
    );
    key.starts_with(&prefix) && key.ends_with(SUFFIX_HOSTPATH_CLAIM)
}

/// The claim `pool` needs on a Node that holds `existing` (its annotation value): the existing
/// paths and this spec's paths together, and `node_id` when given. `Ok(None)` when the
/// existing claim already says exactly that. An existing claim that cannot be read, belongs
/// to another cluster or pool, or names another node ID is an error saying so: nothing is
/// overwritten.
pub fn next(
    s: &Settings,
    pool: &NodeLocalPoolSpec,
    existing: Option<&str>,
    node_id: Option<&str>,
) -> Result<Option<String>, String> {
    let mut claim = match existing {
        None => Claim {
            version: VERSION,
            cluster_namespace: s.namespace.clone(),
            cluster_name: s.name.clone(),
            node_local_pool_name: pool.name.clone(),
            host_paths: Vec::new(),
            garage_node_id: None,
        },
        Some(text) => {
            let claim = parse(text)?;
            if claim.cluster_namespace != s.namespace
                || claim.cluster_name != s.name
                || claim.node_local_pool_name != pool.name
            {
                return Err(format!(
                    "its HostPath claim names pool {} of {}/{}",
                    claim.node_local_pool_name, claim.cluster_namespace, claim.cluster_name
                ));
            }
            claim
        }
    };
    let before = claim.clone();
    claim.host_paths.extend(host_paths(pool));
    claim.host_paths.sort();
    claim.host_paths.dedup();
    if let Some(id) = node_id {
        match &claim.garage_node_id {
            Some(held) if held != id => {
                return Err(format!(
                    "its HostPath claim holds Garage node {held}, but the member there reports {id}"
                ));
            }
            _ => claim.garage_node_id = Some(id.to_owned()),
        }
    }
    if existing.is_some() && claim == before {
        return Ok(None);
    }
    serde_json::to_string(&claim)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Reads a claim; the error says why it cannot be trusted.
pub fn parse(text: &str) -> Result<Claim, String> {
    let claim: Claim = serde_json::from_str(text)
        .map_err(|e| format!("its HostPath claim cannot be read ({e})"))?;
    if claim.version != VERSION {
        return Err(format!(
            "its HostPath claim has format version {}, which this operator version does not know",
            claim.version
        ));
    }
    Ok(claim)
}

/// True when the claim `existing` (an annotation value) lists every path in `paths`.
pub fn covers(existing: Option<&str>, paths: &[String]) -> bool {
    existing
        .and_then(|t| parse(t).ok())
        .is_some_and(|c| paths.iter().all(|p| c.host_paths.contains(p)))
}

/// The claims on `node` other than the one keyed `own`: `(who, paths)`, `who` naming the
/// pool and cluster. A claim that cannot be read is held against every path: it could name
/// any of them.
pub fn others(node: &Node, own: &str) -> Vec<(String, Option<Vec<String>>)> {
    node.annotations()
        .iter()
        .filter(|(k, _)| is_claim_key(k) && k.as_str() != own)
        .map(|(k, v)| match parse(v) {
            Ok(c) => (
                format!(
                    "the HostPath claim of pool {} of {}/{} on Node {}",
                    c.node_local_pool_name,
                    c.cluster_namespace,
                    c.cluster_name,
                    node.name_any()
                ),
                Some(c.host_paths),
            ),
            Err(_) => (
                format!(
                    "an unreadable HostPath claim {k} on Node {}",
                    node.name_any()
                ),
                None,
            ),
        })
        .collect()
}

/// The HostPaths `pool` mounts: metadata, then every data path.
pub fn host_paths(pool: &NodeLocalPoolSpec) -> Vec<String> {
    std::iter::once(pool.metadata.host_path.clone())
        .chain(pool.data.iter().map(|d| d.host_path.clone()))
        .chain(
            pool.data_paths
                .iter()
                .flatten()
                .map(|d| d.host_path.clone()),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::desired::test_support::cluster;
    use serde_json::json;

    fn pool(paths: &[&str]) -> NodeLocalPoolSpec {
        let data: Vec<serde_json::Value> = paths
            .iter()
            .enumerate()
            .map(|(i, p)| json!({"path": format!("/data/{i}"), "hostPath": p, "capacity": "1Gi"}))
            .collect();
        serde_json::from_value(json!({
            "name": "local", "capacity": "1Gi",
            "metadata": {"hostPath": "/m"},
            "dataPaths": data,
            "selector": {"matchLabels": {"pool": "local"}},
        }))
        .unwrap()
    }

    fn settings() -> Settings {
        Settings::from_cluster(&cluster(0)).unwrap()
    }

    #[test]
    fn a_claim_only_grows_and_names_its_node_once() {
        let s = settings();
        let first = next(&s, &pool(&["/d/a"]), None, None).unwrap().unwrap();
        let c = parse(&first).unwrap();
        assert_eq!(c.host_paths, ["/d/a", "/m"]);
        assert_eq!(c.garage_node_id, None);
        // Nothing new: nothing to write.
        assert_eq!(
            next(&s, &pool(&["/d/a"]), Some(&first), None).unwrap(),
            None
        );
        // A disk added: appended. A spec without /d/a never drops it.
        let grown = next(&s, &pool(&["/d/b"]), Some(&first), None)
            .unwrap()
            .unwrap();
        assert_eq!(parse(&grown).unwrap().host_paths, ["/d/a", "/d/b", "/m"]);
        // The node ID is set once; another one is refused, naming both.
        let named = next(&s, &pool(&["/d/b"]), Some(&grown), Some("aa"))
            .unwrap()
            .unwrap();
        assert_eq!(parse(&named).unwrap().garage_node_id.as_deref(), Some("aa"));
        assert_eq!(
            next(&s, &pool(&["/d/b"]), Some(&named), Some("aa")).unwrap(),
            None
        );
        let err = next(&s, &pool(&["/d/b"]), Some(&named), Some("bb")).unwrap_err();
        assert!(err.contains("aa") && err.contains("bb"), "{err}");
    }

    #[test]
    fn a_claim_of_another_pool_or_format_is_never_overwritten() {
        let s = settings();
        let mut other = parse(&next(&s, &pool(&["/d/a"]), None, None).unwrap().unwrap()).unwrap();
        other.node_local_pool_name = "elsewhere".into();
        let text = serde_json::to_string(&other).unwrap();
        assert!(
            next(&s, &pool(&["/d/a"]), Some(&text), None)
                .unwrap_err()
                .contains("elsewhere")
        );
        other.node_local_pool_name = "local".into();
        other.version = 2;
        let text = serde_json::to_string(&other).unwrap();
        assert!(
            next(&s, &pool(&["/d/a"]), Some(&text), None)
                .unwrap_err()
                .contains("version 2")
        );
        assert!(next(&s, &pool(&["/d/a"]), Some("{"), None).is_err());
    }

    #[test]
    fn coverage_and_the_claims_of_others() {
        let s = settings();
        let claim = next(&s, &pool(&["/d/a"]), None, None).unwrap().unwrap();
        assert!(covers(Some(&claim), &["/m".into(), "/d/a".into()]));
        assert!(!covers(Some(&claim), &["/d/b".into()]));
        assert!(!covers(None, &["/m".into()]));
        assert!(!covers(Some("not json"), &["/m".into()]));
        let own = key(&s, "local");
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n1", "annotations": {
            own.clone(): claim,
            "garage.rajsingh.info/gc-0123456789abcdef-node-local-fedcba9876543210-hostpath-claim": "?",
            "unrelated": "x",
        }}}))
        .unwrap();
        let others = others(&node, &own);
        assert_eq!(others.len(), 1);
        assert!(others[0].0.contains("unreadable"), "{:?}", others[0]);
        assert_eq!(others[0].1, None);
        assert!(is_claim_key(&own));
        assert!(is_claim_of(&s.namespace, &s.name, &own));
        assert!(!is_claim_of(&s.namespace, "other", &own));
        assert!(!is_claim_key(
            "garage.rajsingh.info/gc-x-node-local-pool-y-node-id"
        ));
    }
}
