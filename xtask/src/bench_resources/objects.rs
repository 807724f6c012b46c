//! The objects of `bench resources`: the GarageCluster, the GarageBuckets `b-i` and the
//! GarageKeys `k-i` it creates (`--in-flight` at a time), and how one listing of them is
//! tallied (Ready, and each key's grant on its bucket as its status shows it).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context as _, Result};
use futures::StreamExt as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_key::GarageKey;

use super::CLUSTER;
use crate::bench_reconciler::NS;

/// The GarageCluster: one member, replication factor 1, the default storage group on
/// kubesim's `local-sim` claims.
pub(super) fn cluster_manifest() -> Result<GarageCluster> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster",
        "metadata": {"name": CLUSTER, "namespace": NS},
        "spec": {
            "replication": {"factor": 1},
            "storage": {
                "replicas": 1,
                "metadata": {"size": "100Mi", "storageClassName": kubesim::STORAGE_CLASS},
                "data": {"size": "1Gi", "storageClassName": kubesim::STORAGE_CLASS},
            },
        },
    }))?)
}

fn bucket_manifest(i: usize) -> Result<GarageBucket> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageBucket",
        "metadata": {"name": format!("b-{i}"), "namespace": NS},
        "spec": {"clusterRef": {"name": CLUSTER}},
    }))?)
}

fn key_manifest(i: usize) -> Result<GarageKey> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageKey",
        "metadata": {"name": format!("k-{i}"), "namespace": NS},
        "spec": {
            "clusterRef": {"name": CLUSTER},
            "bucketPermissions": [{"bucketRef": {"name": format!("b-{i}")}, "read": true, "write": true}],
        },
    }))?)
}

fn ready(conditions: Option<&[Condition]>) -> bool {
    conditions
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// `Ready=<status> <reason>` of an object, for grouping the ones that are not Ready.
pub(super) fn ready_state(conditions: Option<&[Condition]>) -> (String, String) {
    conditions
        .unwrap_or_default()
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| {
            (
                format!("Ready={} {}", c.status, c.reason),
                c.message.clone(),
            )
        })
        .unwrap_or_else(|| ("no Ready condition".into(), String::new()))
}

/// True when key `k-i`'s status shows read and write on the bucket its spec names.
fn granted(key: &GarageKey, bucket_ids: &BTreeMap<String, String>) -> bool {
    let Some(wanted) = key
        .spec
        .bucket_permissions
        .iter()
        .flatten()
        .find_map(|p| bucket_ids.get(&p.bucket_ref.as_ref()?.name))
    else {
        return false;
    };
    key.status
        .as_ref()
        .and_then(|s| s.buckets.as_ref())
        .is_some_and(|bs| {
            bs.iter().any(|b| {
                b.bucket_id.as_ref() == Some(wanted)
                    && b.read == Some(true)
                    && b.write == Some(true)
            })
        })
}

/// One listing of both kinds.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct Tally {
    pub(super) buckets_ready: usize,
    pub(super) keys_ready: usize,
    pub(super) keys_granted: usize,
}

impl Tally {
    pub(super) async fn read(client: &Client) -> Result<Tally> {
        let buckets = Api::<GarageBucket>::namespaced(client.clone(), NS)
            .list(&ListParams::default())
            .await?
            .items;
        let keys = Api::<GarageKey>::namespaced(client.clone(), NS)
            .list(&ListParams::default())
            .await?
            .items;
        let ids: BTreeMap<String, String> = buckets
            .iter()
            .filter_map(|b| Some((b.name_any(), b.status.as_ref()?.bucket_id.clone()?)))
            .collect();
        Ok(Tally {
            buckets_ready: buckets
                .iter()
                .filter(|b| ready(b.status.as_ref().and_then(|s| s.conditions.as_deref())))
                .count(),
            keys_ready: keys
                .iter()
                .filter(|k| ready(k.status.as_ref().and_then(|s| s.conditions.as_deref())))
                .count(),
            keys_granted: keys.iter().filter(|k| granted(k, &ids)).count(),
        })
    }

    /// Every bucket and key Ready and every grant in place.
    pub(super) fn all(&self, n: usize) -> bool {
        self.buckets_ready == n && self.keys_ready == n && self.keys_granted == n
    }
}

/// Creates `b-1`, `k-1`, `b-2`, `k-2`, ... with `in_flight` requests at once; `created`
/// counts the ones that returned.
pub(super) async fn create_all(
    client: Client,
    n: usize,
    in_flight: usize,
    created: Arc<AtomicUsize>,
) -> Result<()> {
    let buckets: Api<GarageBucket> = Api::namespaced(client.clone(), NS);
    let keys: Api<GarageKey> = Api::namespaced(client, NS);
    let mut creates = futures::stream::iter(0..2 * n)
        .map(|j| {
            let (buckets, keys, created) = (buckets.clone(), keys.clone(), created.clone());
            async move {
                let i = j / 2 + 1;
                if j % 2 == 0 {
                    buckets
                        .create(&PostParams::default(), &bucket_manifest(i)?)
                        .await
                        .with_context(|| format!("creating GarageBucket b-{i}"))?;
                } else {
                    keys.create(&PostParams::default(), &key_manifest(i)?)
                        .await
                        .with_context(|| format!("creating GarageKey k-{i}"))?;
                }
                created.fetch_add(1, Ordering::Relaxed);
                anyhow::Ok(())
            }
        })
        .buffer_unordered(in_flight);
    while let Some(result) = creates.next().await {
        result?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifests_parse_and_the_key_names_its_bucket() {
        let c = cluster_manifest().unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(c.spec.storage.and_then(|s| s.replicas), Some(1));
        let b = bucket_manifest(7).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(b.name_any(), "b-7");
        let k = key_manifest(7).unwrap_or_else(|e| panic!("{e:#}"));
        let ids = BTreeMap::from([("b-7".to_owned(), "id7".to_owned())]);
        assert!(!granted(&k, &ids));
        let mut k = k;
        k.status = Some(
            serde_json::from_value(
                json!({"buckets": [{"bucketId": "id7", "read": true, "write": true}]}),
            )
            .unwrap_or_else(|e| panic!("{e}")),
        );
        assert!(granted(&k, &ids));
    }
}
