//! The per-node answers of node-local endpoints, and the calls that fetch and check them.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::error::GarageError;
use crate::transport::{AdminClient, Kind};
use garage_api_types::{NodeId, NodeTarget};

/// The answer of a node-local call: what each node returned, and which nodes failed.
///
/// A 200 from Garage can carry failures for some nodes; this type keeps both halves and
/// offers no accessor that silently drops the failures. Use [`NodeResults::into_complete`]
/// when every node must have answered, or [`NodeResults::into_parts`] to handle both.
#[derive(Debug, Clone)]
#[must_use = "per-node failures must be looked at"]
pub struct NodeResults<T> {
    endpoint: &'static str,
    success: BTreeMap<NodeId, T>,
    failures: BTreeMap<NodeId, String>,
}

#[derive(Deserialize)]
struct Wire<T> {
    success: BTreeMap<String, T>,
    error: BTreeMap<String, String>,
}

impl<T> NodeResults<T> {
    /// Reads the body of a node-local answer as the client does: JSON first, then the
    /// envelope, checked by [`NodeResults::from_wire`].
    pub fn decode(
        endpoint: &'static str,
        target: &NodeTarget,
        body: &[u8],
    ) -> Result<Self, GarageError>
    where
        T: serde::de::DeserializeOwned,
    {
        let body: serde_json::Value = crate::transport::decode(endpoint, body)?;
        Self::from_wire(endpoint, target, body)
    }

    /// Parses the wire envelope and checks it against the target: every key must be a node
    /// id, at least one node must appear, and a targeted node must be the only one.
    pub fn from_wire(
        endpoint: &'static str,
        target: &NodeTarget,
        body: serde_json::Value,
    ) -> Result<Self, GarageError>
    where
        T: serde::de::DeserializeOwned,
    {
        let excerpt = body.to_string();
        let wire: Wire<T> = serde_json::from_value(body)
            .map_err(|e| GarageError::decode(endpoint, e, excerpt.as_bytes()))?;
        let parse = |k: String| {
            k.parse::<NodeId>()
                .map_err(|e| GarageError::invalid(endpoint, format!("node key: {e}")))
        };
        let success = wire
            .success
            .into_iter()
            .map(|(k, v)| Ok((parse(k)?, v)))
            .collect::<Result<BTreeMap<_, _>, GarageError>>()?;
        let failures = wire
            .error
            .into_iter()
            .map(|(k, v)| Ok((parse(k)?, v)))
            .collect::<Result<BTreeMap<_, _>, GarageError>>()?;
        let answered = success.len() + failures.len();
        if answered == 0 {
            return Err(GarageError::invalid(endpoint, "no node answered"));
        }
        match target {
            NodeTarget::Local if answered != 1 => {
                return Err(GarageError::invalid(
                    endpoint,
                    format!("node=self answered for {answered} nodes"),
                ));
            }
            NodeTarget::Node(id)
                if answered != 1 || !(success.contains_key(id) || failures.contains_key(id)) =>
            {
                return Err(GarageError::invalid(
                    endpoint,
                    format!("asked node {}, answer is about other nodes", id.short()),
                ));
            }
            _ => {}
        }
        Ok(Self {
            endpoint,
            success,
            failures,
        })
    }

    /// Nodes that answered, with their answers.
    pub fn successes(&self) -> &BTreeMap<NodeId, T> {
        &self.success
    }

    /// Nodes that failed, with Garage's error message.
    pub fn failures(&self) -> &BTreeMap<NodeId, String> {
        &self.failures
    }

    /// True when no node failed.
    pub fn is_complete(&self) -> bool {
        self.failures.is_empty()
    }

    /// Every node's answer, or [`GarageError::PartialFailure`] if any node failed.
    pub fn into_complete(self) -> Result<BTreeMap<NodeId, T>, GarageError> {
        if self.failures.is_empty() {
            Ok(self.success)
        } else {
            Err(GarageError::PartialFailure {
                endpoint: self.endpoint,
                succeeded: self.success.len(),
                failures: self
                    .failures
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
            })
        }
    }

    /// The one answer of a single-node call (`self` or one id), or its failure.
    pub fn into_single(self) -> Result<(NodeId, T), GarageError> {
        let endpoint = self.endpoint;
        let mut all = self.into_complete()?;
        match (all.len(), all.pop_first()) {
            (1, Some(entry)) => Ok(entry),
            (n, _) => Err(GarageError::invalid(
                endpoint,
                format!("expected one node's answer, got {n}"),
            )),
        }
    }

    /// Both halves, for callers that can act on partial results.
    pub fn into_parts(self) -> (BTreeMap<NodeId, T>, BTreeMap<NodeId, String>) {
        (self.success, self.failures)
    }
}

impl AdminClient {
    /// GET a node-local endpoint and check its envelope.
    pub(crate) async fn node_get<T: serde::de::DeserializeOwned>(
        &self,
        endpoint: &'static str,
        target: &NodeTarget,
    ) -> Result<NodeResults<T>, GarageError> {
        let body: serde_json::Value = self
            .get(endpoint, &[("node", target.query_value())])
            .await?;
        NodeResults::from_wire(endpoint, target, body)
    }

    /// POST to a node-local endpoint and check its envelope.
    pub(crate) async fn node_post<B: serde::Serialize + ?Sized, T: serde::de::DeserializeOwned>(
        &self,
        endpoint: &'static str,
        target: &NodeTarget,
        body: Option<&B>,
        kind: Kind,
    ) -> Result<NodeResults<T>, GarageError> {
        let body: serde_json::Value = self
            .post(endpoint, &[("node", target.query_value())], body, kind)
            .await?;
        NodeResults::from_wire(endpoint, target, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const A: &str = "aa00000000000000000000000000000000000000000000000000000000000000";
    const B: &str = "bb00000000000000000000000000000000000000000000000000000000000000";

    #[test]
    fn partial_failures_are_not_swallowed() {
        let body = json!({"success": {A: 1}, "error": {B: "Remote error: timeout"}});
        let r = NodeResults::<u32>::from_wire("ListWorkers", &NodeTarget::All, body).unwrap();
        assert!(!r.is_complete());
        let err = r.clone().into_complete().unwrap_err();
        assert!(err.to_string().contains("bb00000000000000"), "{err}");
        assert!(matches!(
            err,
            GarageError::PartialFailure { succeeded: 1, .. }
        ));
        let (ok, failed) = r.into_parts();
        assert_eq!((ok.len(), failed.len()), (1, 1));
    }

    #[test]
    fn answers_must_match_the_target() {
        let body = json!({"success": {A: 1}, "error": {}});
        let b: NodeId = B.parse().unwrap();
        assert!(NodeResults::<u32>::from_wire("X", &NodeTarget::Node(b), body.clone()).is_err());
        assert!(NodeResults::<u32>::from_wire("X", &NodeTarget::Local, body).is_ok());
        let empty = json!({"success": {}, "error": {}});
        assert!(NodeResults::<u32>::from_wire("X", &NodeTarget::All, empty).is_err());
    }
}
