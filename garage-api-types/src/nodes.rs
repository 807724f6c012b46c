//! Node identities and `?node=` targets.

use std::fmt;
use std::str::FromStr;

use serde::Deserialize;

/// A Garage node identifier: 64 lowercase hex digits (a 32-byte public key).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(String);

impl NodeId {
    /// The id as 64 lowercase hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 16 hex digits, as `garage status` prints them.
    pub fn short(&self) -> &str {
        short_id(&self.0)
    }
}

/// A string that is not a node id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a node id (64 hex digits)")]
pub struct InvalidNodeId(pub String);

impl FromStr for NodeId {
    type Err = InvalidNodeId;

    /// Trims and lowercases; anything but exactly 64 hex digits is rejected.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let id = s.trim().to_ascii_lowercase();
        if id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(Self(id))
        } else {
            Err(InvalidNodeId(s.to_owned()))
        }
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for NodeId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for NodeId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// Which nodes a node-local call addresses (`?node=`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeTarget {
    /// The node that serves the request (`self`).
    Local,
    /// Every node in the layout or currently connected (`*`).
    All,
    /// One node, by full id.
    Node(NodeId),
}

impl NodeTarget {
    /// The value of the `?node=` query parameter that addresses these nodes.
    pub fn query_value(&self) -> &str {
        match self {
            Self::Local => "self",
            Self::All => "*",
            Self::Node(id) => id.as_str(),
        }
    }
}

impl From<NodeId> for NodeTarget {
    fn from(id: NodeId) -> Self {
        Self::Node(id)
    }
}

/// The first 16 hex digits of a node id, as `garage status` prints them; shorter text as it is.
pub fn short_id(id: &str) -> &str {
    id.get(..16).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "aa00000000000000000000000000000000000000000000000000000000000000";

    #[test]
    fn node_ids_are_canonical() {
        let id: NodeId = format!("  {}  ", A.to_uppercase()).parse().unwrap();
        assert_eq!(id.as_str(), A);
        assert!("abc".parse::<NodeId>().is_err());
        assert!(A.replace('a', "g").parse::<NodeId>().is_err());
    }
}
