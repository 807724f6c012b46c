//! Claims through their life on a real control plane.
//!
//! - `retired` (site B, after `lost`): the claims manual-a left behind carry no reservation and
//!   name the identity that left; a GarageNode created again under that name does not start
//!   on them (`RetiredClaims`, no StatefulSet, no layout write) until the user deletes them;
//!   it then starts on new claims with a new identity, joins the layout, and its claims are
//!   reserved with that identity recorded. Every object reads back.
//! - `rollout_barrier` (site B, last before its teardown): a storage rollout records the claims of the pod it replaces;
//!   that pod held back by a finalizer, its data claim is deleted (the claim's reservation
//!   keeps it: `ClaimReplaced`, being deleted), then the reservation is removed the way only
//!   the controller's identity may, the claim goes and the StatefulSet makes a new one: the
//!   rollout stops (`ClaimReplaced`, recreated), the replacement is not deleted again, the
//!   layout does not change, and every object reads back through another member.

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::garage_node::GarageNode;
use shared_types::keys::annotation::{ANNOTATION_NODE_ID, ANNOTATION_RETIRED_NODE_ID};
use shared_types::keys::finalizer::FINALIZER_PVC_RESERVATION;

use crate::support::*;
use crate::{NAME, RESYNC, World, ns};

const RETIRED: [&str; 2] = ["metadata-manual-a-0", "data-manual-a-0"];

fn annotation(c: &PersistentVolumeClaim, key: &str) -> Option<String> {
    c.annotations().get(key).cloned()
}

fn reserved(c: &PersistentVolumeClaim) -> bool {
    c.finalizers()
        .iter()
        .any(|f| f == FINALIZER_PVC_RESERVATION)
}

fn node_ready_reason(n: &GarageNode) -> Option<String> {
    n.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.reason.clone())
}

/// Site B, after `lost`: the retired claims of manual-a are never started on again.
pub(crate) async fn retired(w: &mut World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let client = &w.client.clone();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns());
    let mut old = None;
    for name in RETIRED {
        let c = claims.get(name).await?;
        ensure!(!reserved(&c), "{name} kept its reservation after the proof");
        let id = annotation(&c, ANNOTATION_RETIRED_NODE_ID)
            .with_context(|| format!("{name} does not name the identity that left"))?;
        ensure!(
            annotation(&c, ANNOTATION_NODE_ID).as_deref() == Some(id.as_str()),
            "{name}: the retired identity is not the one the claim recorded"
        );
        old = Some(id);
    }
    let old = old.context("no retired identity")?;
    let admin = admin_client(&w.client, w.sim, 0).await?;
    let before = admin.layout().await?;
    // The user creates manual-a again, elsewhere (its Kubernetes Node is gone).
    let gn: GarageNode = serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageNode",
        "metadata": {"name": "manual-a"},
        "spec": {
            "clusterRef": {"name": NAME},
            "zone": "zone-a",
            "capacity": "1Gi",
            "storage": {
                "metadata": {"size": "100Mi", "storageClassName": kubesim::STORAGE_CLASS},
                "data": {"size": "1Gi", "storageClassName": kubesim::STORAGE_CLASS},
            },
        },
    }))?;
    w.gns.create(&PostParams::default(), &gn).await?;
    wait(
        "manual-a Ready=False/RetiredClaims",
        Duration::from_secs(120),
        || async {
            Ok(
                node_ready_reason(&w.gns.get("manual-a").await?).as_deref()
                    == Some("RetiredClaims"),
            )
        },
    )
    .await?;
    tokio::time::sleep(RESYNC * 2).await;
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), ns());
    ensure!(
        sets.get_opt("manual-a").await?.is_none(),
        "a StatefulSet was made over retired claims"
    );
    let held = admin.layout().await?;
    ensure!(
        held.version == before.version && held.staged_role_changes.is_empty(),
        "a layout write happened while manual-a was held"
    );
    // The user deletes the retired claims: the node starts on new ones, as a new identity.
    for name in RETIRED {
        claims.delete(name, &DeleteParams::default()).await?;
    }
    let new_id = wait_member(w, "manual-a", Duration::from_secs(600)).await?;
    ensure!(new_id != old, "manual-a came back as the retired identity");
    for name in RETIRED {
        let c = claims.get(name).await?;
        ensure!(reserved(&c), "new claim {name} is not reserved");
        ensure!(
            annotation(&c, ANNOTATION_RETIRED_NODE_ID).is_none(),
            "new claim {name} carries a retired mark"
        );
        ensure!(
            annotation(&c, ANNOTATION_NODE_ID).as_deref() == Some(new_id.as_str()),
            "new claim {name} does not record its identity"
        );
    }
    let store = w.store.as_ref().context("no objects were written")?;
    verify(store, &s3(w.sim, "garage-storage-0-0")?, &w.checksummed).await?;
    println!(
        "retired claims: manual-a created again is held (RetiredClaims, no StatefulSet, layout {}) until its claims are deleted, then joins as {} on reserved new claims; {} objects read back ({:.1}s)",
        held.version,
        &new_id[..16],
        w.checksummed.len(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Waits until GarageNode `name` has an identity with a role in the committed layout, and
/// returns it.
async fn wait_member(w: &World<'_>, name: &str, limit: Duration) -> anyhow::Result<String> {
    wait(&format!("{name} in the layout"), limit, || async {
        let Some(id) = w.gns.get(name).await?.status.and_then(|s| s.node_id) else {
            return Ok(false);
        };
        let layout = admin_client(&w.client, w.sim, 0).await?.layout().await?;
        Ok(layout.roles.iter().any(|r| r.id.as_str() == id))
    })
    .await?;
    w.gns
        .get(name)
        .await?
        .status
        .and_then(|s| s.node_id)
        .context("no identity")
}

/// Site B: a claim replaced in the middle of a storage rollout stops it. The member stays down
/// and the rollout stopped: only the teardown comes after.
pub(crate) async fn rollout_barrier(w: &World<'_>) -> anyhow::Result<()> {
    const HOLD: &str = "e2e.garage.rajsingh.info/hold";
    const POD: &str = "garage-storage-0-0";
    const CLAIM: &str = "data-garage-storage-0-0";
    let t = Instant::now();
    let client = &w.client.clone();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns());
    let hold = |on: bool| {
        let finalizers: Vec<&str> = if on { vec![HOLD] } else { vec![] };
        json!({"metadata": {"finalizers": finalizers}})
    };
    let original = claims.get(CLAIM).await?;
    ensure!(
        reserved(&original),
        "{CLAIM} of a live member is not reserved"
    );
    let original_uid = original.uid().context("claim without UID")?;
    // A site whose buckets step moved its cluster to a GarageAdminToken's token reads it there.
    let admin = admin_after_rotation(w, "garage-storage-1-0").await?;
    let before = admin.layout().await?;
    // The actor (first by name) keeps its pod object after the rollout deletes it.
    w.pods
        .patch(POD, &PatchParams::default(), &Patch::Merge(hold(true)))
        .await?;
    w.clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"storage": {"env": [{"name": "E2E_CLAIM_BARRIER", "value": "1"}]}}})),
        )
        .await?;
    wait(
        "the rollout recorded garage-storage-0 with its claims and deleted its pod",
        Duration::from_secs(300),
        || async {
            let c = w.clusters.get(NAME).await?;
            let recorded = c
                .status
                .as_ref()
                .and_then(|s| s.storage_rollout.as_ref())
                .and_then(|r| r.persistent_volume_claims.as_ref())
                .is_some_and(|v| {
                    v.iter().any(|p| {
                        p.name.as_deref() == Some(CLAIM)
                            && p.uid.as_deref() == Some(original_uid.as_str())
                    })
                });
            let deleting = w
                .pods
                .get_opt(POD)
                .await?
                .is_some_and(|p| p.metadata.deletion_timestamp.is_some());
            Ok(recorded && deleting)
        },
    )
    .await?;
    // Someone deletes the claim: its reservation keeps it, and the rollout says so.
    claims.delete(CLAIM, &DeleteParams::default()).await?;
    wait_reason(w, "being deleted").await?;
    // The barrier removed as only the controller's identity may (the in-process reconciler
    // and this test share it), the pod let go: the claim goes, the StatefulSet makes another.
    let c = claims.get(CLAIM).await?;
    let kept: Vec<String> = c
        .finalizers()
        .iter()
        .filter(|f| *f != FINALIZER_PVC_RESERVATION)
        .cloned()
        .collect();
    claims
        .patch(
            CLAIM,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": kept}})),
        )
        .await?;
    w.pods
        .patch(POD, &PatchParams::default(), &Patch::Merge(hold(false)))
        .await?;
    wait(
        "a new claim under the same name",
        Duration::from_secs(180),
        || async {
            Ok(claims
                .get_opt(CLAIM)
                .await?
                .is_some_and(|c| c.uid().as_deref() != Some(original_uid.as_str())))
        },
    )
    .await?;
    wait_reason(w, "was recreated").await?;
    let replacement = w.pods.get_opt(POD).await?.and_then(|p| p.uid());
    tokio::time::sleep(RESYNC * 3).await;
    wait_reason(w, "was recreated").await?;
    ensure!(
        w.pods.get_opt(POD).await?.and_then(|p| p.uid()) == replacement,
        "the replacement on the new claim was deleted or replaced again"
    );
    let after = admin.layout().await?;
    ensure!(
        after.version == before.version
            && after.roles.len() == before.roles.len()
            && after.staged_role_changes.is_empty(),
        "the layout changed after the claim was replaced: {} -> {}",
        before.version,
        after.version
    );
    // Through a member that kept its disks.
    let store = w.store.as_ref().context("no objects were written")?;
    verify(store, &s3(w.sim, "garage-storage-1-0")?, &w.checksummed).await?;
    println!(
        "rollout claim barrier: the claim deleted mid-rollout stopped it (ClaimReplaced), recreated it stays stopped, layout {} unchanged, {} objects read back ({:.1}s)",
        after.version,
        w.checksummed.len(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Waits until `StorageRolloutReady=False/ClaimReplaced` with `needle` in its message.
async fn wait_reason(w: &World<'_>, needle: &str) -> anyhow::Result<()> {
    wait(
        &format!("StorageRolloutReady=False/ClaimReplaced ({needle})"),
        Duration::from_secs(120),
        || async {
            let c = w.clusters.get(NAME).await?;
            Ok(
                reason_of(&c, "StorageRolloutReady").as_deref() == Some("ClaimReplaced")
                    && message_of(&c, "StorageRolloutReady").is_some_and(|m| m.contains(needle)),
            )
        },
    )
    .await
}

/// An Admin API client of `pod` with the token of the GarageAdminToken the cluster was moved to
/// (`garage-admin-bootstrap`), or the first token when it was not moved.
async fn admin_after_rotation(
    w: &World<'_>,
    pod: &str,
) -> anyhow::Result<garage_admin::AdminClient> {
    use k8s_openapi::api::core::v1::Secret;
    let secrets: Api<Secret> = Api::namespaced(w.client.clone(), ns());
    let secret = match secrets.get_opt("garage-admin-bootstrap").await? {
        Some(s) => s,
        None => secrets.get("garage-admin-token").await?,
    };
    let token = secret
        .data
        .as_ref()
        .and_then(|d| d.get("admin-token"))
        .context("no admin-token in the Secret")?;
    let ip = w.sim.pod_ip(ns(), pod).context("pod has no address")?;
    Ok(garage_admin::AdminClient::new(
        &format!("http://{ip}:3903"),
        &garage_admin::AdminToken::new(String::from_utf8(token.0.clone())?),
    )?)
}
