//! `--state DIR`: existing objects, read from manifests, that cross-object rules see as the
//! cluster's current state.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use serde::de::DeserializeOwned;
use serde_json::Value;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::garage_reference_grant::GarageReferenceGrant;

use super::{CliError, manifest};
use crate::admission::Context;
use crate::convert::{GROUP, V1BETA2, convert_object};
use crate::server::context_reader::{ContextSource, Needs, ReadError};

/// The objects of a state directory.
#[derive(Clone, Debug, Default)]
pub struct StateDir {
    /// GarageClusters, converted to v1beta2 when written as v1beta1.
    pub garage_clusters: Vec<GarageCluster>,
    /// GarageNodes.
    pub garage_nodes: Vec<GarageNode>,
    /// Kubernetes Nodes.
    pub nodes: Vec<Node>,
    /// Pods of every namespace.
    pub pods: Vec<Pod>,
    /// GarageReferenceGrants of every namespace.
    pub reference_grants: Vec<GarageReferenceGrant>,
    /// Namespaces, whose labels selector grants match.
    pub namespaces: Vec<Namespace>,
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), CliError> {
    let entries = std::fs::read_dir(dir).map_err(|source| CliError::Read {
        path: dir.to_owned(),
        source,
    })?;
    for entry in entries {
        let path = entry
            .map_err(|source| CliError::Read {
                path: dir.to_owned(),
                source,
            })?
            .path();
        if path.is_dir() {
            files(&path, out)?;
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        {
            out.push(path);
        }
    }
    Ok(())
}

fn typed<T: DeserializeOwned>(value: Value, path: &Path, kind: &str) -> Result<T, CliError> {
    serde_json::from_value(value).map_err(|e| CliError::Parse {
        path: path.to_owned(),
        reason: format!("a {kind} does not decode: {e}"),
    })
}

impl StateDir {
    /// Reads every `.yaml`, `.yml` and `.json` file under `dir`. Objects of kinds no rule reads
    /// are ignored.
    pub fn load(dir: &Path) -> Result<Self, CliError> {
        let mut paths = Vec::new();
        files(dir, &mut paths)?;
        paths.sort();
        let mut state = StateDir::default();
        for path in paths {
            for object in manifest::load(&path)? {
                state.add(object, &path)?;
            }
        }
        Ok(state)
    }

    /// Adds a GarageCluster in place of any of the same namespace and name: the live object
    /// a review names explicitly wins over the state directory's copy.
    pub fn put_garage_cluster(&mut self, object: Value, path: &Path) -> Result<(), CliError> {
        let name = object["metadata"]["name"].as_str().map(str::to_owned);
        let namespace = object["metadata"]["namespace"].as_str().map(str::to_owned);
        self.garage_clusters
            .retain(|c| c.metadata.name != name || c.metadata.namespace != namespace);
        self.add(object, path)
    }

    /// Adds one object (from `path`, for messages).
    pub fn add(&mut self, object: Value, path: &Path) -> Result<(), CliError> {
        let api_version = object["apiVersion"].as_str().unwrap_or_default().to_owned();
        let kind = object["kind"].as_str().unwrap_or_default().to_owned();
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        match (group, kind.as_str()) {
            (GROUP, "GarageCluster") => {
                let hub = convert_object(object, V1BETA2).map_err(|e| CliError::Parse {
                    path: path.to_owned(),
                    reason: format!("a GarageCluster does not convert to v1beta2: {e}"),
                })?;
                self.garage_clusters
                    .push(typed(hub, path, "GarageCluster")?);
            }
            (GROUP, "GarageNode") => self.garage_nodes.push(typed(object, path, "GarageNode")?),
            ("", "Node") => self.nodes.push(typed(object, path, "Node")?),
            ("", "Pod") => self.pods.push(typed(object, path, "Pod")?),
            (GROUP, "GarageReferenceGrant") => {
                self.reference_grants
                    .push(typed(object, path, "GarageReferenceGrant")?);
            }
            ("", "Namespace") => self.namespaces.push(typed(object, path, "Namespace")?),
            _ => {}
        }
        Ok(())
    }
}

impl ContextSource for StateDir {
    async fn read(&self, needs: Needs, namespace: Option<&str>) -> Result<Context, ReadError> {
        let pods = if needs.pods {
            self.pods
                .iter()
                .filter(|p| p.metadata.namespace.as_deref() == namespace)
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        let reference_grants = self
            .reference_grants
            .iter()
            .filter(|g| {
                g.metadata
                    .namespace
                    .as_ref()
                    .is_some_and(|ns| needs.reference_grants.contains(ns))
            })
            .cloned()
            .collect();
        let namespaces = self
            .namespaces
            .iter()
            .filter(|n| n.metadata.name.is_some() && n.metadata.name == needs.namespace_labels)
            .cloned()
            .collect();
        Ok(Context {
            garage_clusters: self.garage_clusters.clone(),
            garage_nodes: self.garage_nodes.clone(),
            nodes: self.nodes.clone(),
            pods,
            reference_grants,
            namespaces,
            ..Context::default()
        })
    }

    async fn garage_cluster(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<GarageCluster>, ReadError> {
        Ok(self
            .garage_clusters
            .iter()
            .find(|c| {
                c.metadata.namespace.as_deref() == Some(namespace)
                    && c.metadata.name.as_deref() == Some(name)
            })
            .cloned())
    }
}
