//! Site G: taking over a cluster the Go operator runs. A Go user's switch is: uninstall the
//! Go operator (its CRDs and every object it made stay), install this one. The objects the
//! Go operator made for a 3-member cluster, a bucket and a key were recorded by
//! `cargo xtask record-go` (`go_takeover/*.json`); `replay` makes them again with real Garage
//! pods behind them, as the Go operator left them, and 200 checksummed objects are written
//! through S3 with the recorded key. The pods read their RPC secret from a Secret of the
//! user's, which no longer holds it when this operator starts on the namespace (`legacy_rpc`):
//! it takes nothing over until that Secret holds the pods' secret again. Then:
//!
//! - it takes the cluster over (`managed-by-install`, Ready) with every member keeping its
//!   Garage identity and layout role, no layout change, and every pod it replaces replaced
//!   one at a time (never two members without a Ready pod);
//! - the bucket and key stay Ready and keep their Garage IDs; the key's recorded Secret still
//!   reads every object;
//! - a configuration change rolls out one pod at a time under a continuous reader, a
//!   scale-up to 4 adds one role in one version, and a scale-down to 3 drains the fourth
//!   member with its proof; every object reads back after each.

#[path = "go_takeover/go_token.rs"]
mod go_token;
#[path = "go_takeover/legacy_key.rs"]
mod legacy_key;
#[path = "go_takeover/legacy_rpc.rs"]
mod legacy_rpc;
#[path = "go_takeover/replay.rs"]
mod replay;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::ResourceExt as _;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use localcluster::wait_until as wait;
use shared_types::keys::annotation::{ANNOTATION_MANAGED_BY_INSTALL, ANNOTATION_RENDERED_HASH};
use shared_types::keys::label::LABEL_CLUSTER;

use crate::rollout::{sample_not_ready, storage_pods};
use crate::support::{self, node_ids, s3, verify};
use crate::{NAME, World, ns};

/// The namespace the recording was made in; the recorded objects name it.
pub(crate) const NS_G: &str = "go-takeover";

/// The whole site.
pub(crate) async fn run(w: &mut World<'_>, start: impl AsyncFnOnce()) -> anyhow::Result<()> {
    let t = Instant::now();
    let mut renames = replay::objects(w).await?;
    replay::garage(w, &mut renames).await?;
    let via = "garage-storage-0-0";
    write_objects(w, via).await?;
    let before = Before::read(w, via).await?;
    let legacy = legacy_key::replay(w, &replay::admin(w, via)?, &replay::recorded()).await?;
    let go_token_id = go_token::replay(w, &replay::admin(w, via)?).await?;
    println!(
        "go takeover: the Go operator's cluster is back with {} members, 200 objects written ({:.1}s)",
        before.ids.len(),
        t.elapsed().as_secs_f64()
    );
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = tokio::spawn(sample_not_ready(
        w.pods.clone(),
        before.ids.len(),
        stop.clone(),
    ));
    let held = legacy_rpc::drift(w).await?;
    start().await;
    let refused = legacy_rpc::held_then_released(w, &before.pods, before.version, &held, via).await;
    let taken = match refused {
        Ok(()) => taken_over(w).await,
        Err(e) => Err(e),
    };
    stop.store(true, Ordering::SeqCst);
    let max_down = sampler.await?;
    taken?;
    ensure!(
        max_down <= 1,
        "{max_down} members had no Ready pod at once during the takeover"
    );
    before.unchanged(w, via).await?;
    legacy_key::kept(w, &replay::admin(w, via)?, &legacy).await?;
    go_token::revoked(w, &replay::admin(w, via)?, &go_token_id).await?;
    let replaced = before.replaced(w).await?;
    println!(
        "go takeover: recorded objects this operator removed: {:?}",
        replay::missing(w).await?
    );
    println!(
        "go takeover: taken over with the same {} node IDs and layout roles at layout version {}; {replaced} pods replaced one at a time; bucket and keys Ready with their Garage IDs (one derived from its spec.name by a pre-0.7.4 Go release, its credentials kept); the Go operator's own Admin API token revoked; every object read back with the recorded key ({:.1}s)",
        before.ids.len(),
        before.version,
        t.elapsed().as_secs_f64()
    );
    // The Go manifest leaves Garage's RPC timeout at its default, which stretches the block
    // delays a drain's proof waits out to over twenty minutes; a shorter one (as site A's) is
    // a configuration change this operator rolls out first, one pod at a time.
    crate::rollout::roll(
        w,
        "Garage configuration (rpcTimeout) of the taken-over cluster",
        serde_json::json!({"spec": {"network": {"rpcTimeout": "15s"}}}),
        crate::rollout::Midway::Nothing,
    )
    .await?;
    crate::membership::scale_up(w).await?;
    verify(
        w.store.as_ref().context("no store")?,
        &s3(w.sim, via)?,
        &w.checksummed,
    )
    .await?;
    crate::drain::scale_down(w, crate::rollout::Midway::Nothing).await?;
    println!(
        "go takeover: scale-up and drain done ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// 200 checksummed objects through `via`, with the recorded key into the recorded bucket.
async fn write_objects(w: &mut World<'_>, via: &str) -> anyhow::Result<()> {
    let (id, secret) = replay::key_credentials()?;
    let store = garage_fixture::s3::Objects::new("photos", &id, &secret)?;
    support::write_through(w, store, via, 0x60_7a6e).await
}

/// What the Go operator left, read before this operator starts.
struct Before {
    /// GarageNode name -> node ID.
    ids: BTreeMap<String, String>,
    /// Layout roles: node ID -> (zone, capacity).
    roles: BTreeMap<String, (String, Option<u64>)>,
    version: u64,
    /// Storage pod name -> UID.
    pods: BTreeMap<String, String>,
    bucket_id: String,
    key_id: String,
}

impl Before {
    async fn read(w: &World<'_>, via: &str) -> anyhow::Result<Self> {
        let layout = replay::admin(w, via)?.layout().await?;
        Ok(Before {
            ids: node_ids(&w.gns).await?,
            roles: roles(&layout),
            version: layout.version,
            pods: storage_pods(&w.pods).await?,
            bucket_id: text(&status(w, "GarageBucket", "photos").await?["bucketId"]),
            key_id: text(&status(w, "GarageKey", "photos-rw").await?["keyId"]),
        })
    }

    /// The same members with the same IDs and roles at the same layout version, the bucket
    /// and key Ready with the same IDs, every object readable with the recorded key.
    async fn unchanged(&self, w: &World<'_>, via: &str) -> anyhow::Result<()> {
        let after = Before::read(w, via).await?;
        ensure!(
            after.ids == self.ids,
            "node IDs changed: {:?} -> {:?}",
            self.ids,
            after.ids
        );
        ensure!(
            after.roles == self.roles,
            "layout roles changed: {:?} -> {:?}",
            self.roles,
            after.roles
        );
        ensure!(
            after.version == self.version,
            "layout version {} -> {}",
            self.version,
            after.version
        );
        ensure!(
            after.bucket_id == self.bucket_id && !self.bucket_id.is_empty(),
            "bucket ID {} -> {}",
            self.bucket_id,
            after.bucket_id
        );
        ensure!(
            after.key_id == self.key_id && !self.key_id.is_empty(),
            "key ID {} -> {}",
            self.key_id,
            after.key_id
        );
        managed_bucket(w, via).await?;
        verify(
            w.store.as_ref().context("no store")?,
            &s3(w.sim, via)?,
            &w.checksummed,
        )
        .await
    }

    /// How many of the recorded pods were replaced.
    async fn replaced(&self, w: &World<'_>) -> anyhow::Result<usize> {
        let now = storage_pods(&w.pods).await?;
        Ok(self
            .pods
            .iter()
            .filter(|(name, uid)| now.get(*name) != Some(*uid))
            .count())
    }
}

/// A quota set on the recorded bucket reaches Garage, and the bucket's status, "0 B" in the
/// recording, shows what the objects written take: this operator manages the bucket by the ID
/// the Go operator recorded, and the key stays Ready.
async fn managed_bucket(w: &World<'_>, via: &str) -> anyhow::Result<()> {
    let api = garage_objects(w, "GarageBucket");
    api.patch(
        "photos",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"quotas": {"maxObjects": 100_000}}})),
    )
    .await?;
    wait(
        "the bucket's quota in Garage",
        Duration::from_secs(180),
        || async {
            let admin = replay::admin(w, via)?;
            let bucket = status(w, "GarageBucket", "photos").await?;
            let key = status(w, "GarageKey", "photos-rw").await?;
            let id = text(&bucket["bucketId"]);
            let info = admin
                .bucket_info(garage_admin::BucketLookup::Id(&id))
                .await?;
            Ok(info.quotas.max_objects == Some(100_000)
                && ready(&bucket)
                && bucket["observedGeneration"] == 2
                && bucket["size"].as_str().is_some_and(|s| s != "0 B")
                && ready(&key))
        },
    )
    .await
}

fn garage_objects(w: &World<'_>, kind: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("garage.rajsingh.info", "v1beta1", kind);
    Api::namespaced_with(w.client.clone(), ns(), &ApiResource::from_gvk(&gvk))
}

/// The status of the bucket or key `name`.
async fn status(w: &World<'_>, kind: &str, name: &str) -> anyhow::Result<serde_json::Value> {
    Ok(garage_objects(w, kind).get(name).await?.data["status"].clone())
}

fn text(value: &serde_json::Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

fn ready(status: &serde_json::Value) -> bool {
    status["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

fn roles(layout: &garage_admin::ClusterLayout) -> BTreeMap<String, (String, Option<u64>)> {
    layout
        .roles
        .iter()
        .map(|r| (r.id.to_string(), (r.zone.clone(), r.capacity)))
        .collect()
}

/// Waits until this operator has the cluster: it names this install, is Ready at its
/// generation with its storage rollout converged, and every member's pod runs its
/// StatefulSet's current template.
async fn taken_over(w: &World<'_>) -> anyhow::Result<()> {
    let sets = Api::<StatefulSet>::namespaced(w.client.clone(), ns());
    wait(
        "the cluster taken over",
        Duration::from_secs(900),
        || async {
            let c = w.clusters.get(NAME).await?;
            let ours = c.annotations().contains_key(ANNOTATION_MANAGED_BY_INSTALL);
            let current =
                c.status.as_ref().and_then(|s| s.observed_generation) == c.metadata.generation;
            let ready = support::condition(&c, "Ready").as_deref() == Some("True");
            let rolled = support::condition(&c, "StorageRolloutReady").as_deref() == Some("True")
                && c.status
                    .as_ref()
                    .is_some_and(|s| s.storage_rollout.is_none());
            let mut templates = 0;
            for set in sets
                .list(&ListParams::default().labels(&format!("{LABEL_CLUSTER}={NAME}")))
                .await?
                .items
            {
                // Rendered by this operator (the Go operator writes no such hash), seen by the
                // StatefulSet controller, and its pod replaced onto that template.
                let ours = set.annotations().contains_key(ANNOTATION_RENDERED_HASH);
                let update = set.status.as_ref().and_then(|s| s.update_revision.clone());
                let observed = ours
                    && set.status.as_ref().and_then(|s| s.observed_generation)
                        == set.metadata.generation;
                let pod = w.pods.get_opt(&format!("{}-0", set.name_any())).await?;
                let revision = pod
                    .as_ref()
                    .and_then(|p| p.labels().get("controller-revision-hash").cloned());
                if observed && update.is_some() && revision == update {
                    templates += 1;
                }
            }
            Ok(ours && current && ready && rolled && templates == 3)
        },
    )
    .await
}
