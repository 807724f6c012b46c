//! The last step: deleting the GarageCluster tears the whole store down through the
//! finalizers and leaves only the retained claims.

use std::time::{Duration, Instant};

use anyhow::{anyhow, ensure};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::api::DeleteParams;
use kube::{Api, ResourceExt};
use localcluster::wait_until as wait;
use shared_types::keys::annotation::{ANNOTATION_GARAGE_NODE_UID, ANNOTATION_RETIRED_NODE_ID};
use shared_types::keys::finalizer::FINALIZER_PVC_RESERVATION;

use crate::support::*;
use crate::{NAME, World, ns};

fn reserved(c: &PersistentVolumeClaim) -> bool {
    c.finalizers()
        .iter()
        .any(|f| f == FINALIZER_PVC_RESERVATION)
}

/// The operator-generated claims (those naming their GarageNode) for which `pick` holds.
async fn reservations(
    client: &kube::Client,
    pick: impl Fn(&PersistentVolumeClaim) -> bool,
) -> anyhow::Result<Vec<String>> {
    Ok(
        Api::<PersistentVolumeClaim>::namespaced(client.clone(), ns())
            .list(&Default::default())
            .await?
            .items
            .iter()
            .filter(|c| c.annotations().contains_key(ANNOTATION_GARAGE_NODE_UID) && pick(c))
            .map(ResourceExt::name_any)
            .collect(),
    )
}

pub(crate) async fn run(w: &mut World<'_>) -> anyhow::Result<()> {
    destroy(w, &[]).await
}

/// [`run`] for a site that made some objects of the kinds the operator writes itself
/// (`user_made`, as `Kind/name`, e.g. `Secret/garage-admin-token`): they are not the
/// operator's to delete, so they are left out of the leftovers and must still be there.
pub(crate) async fn destroy(w: &mut World<'_>, user_made: &[&str]) -> anyhow::Result<()> {
    let client = &w.client.clone();
    let clusters = w.clusters.clone();
    // 7. Deleting the cluster, with admission back in place, tears the whole store down
    //    without anyone touching a finalizer: every operator-made object goes, claims stay
    //    (the default retention policy is Retain).
    let claims_before = claim_names(client).await?;
    // Every claim a live member mounts is reserved until the store goes (a retired gateway's
    // claim names a GarageNode that is gone).
    let live: Vec<String> = w
        .gns
        .list(&Default::default())
        .await?
        .items
        .iter()
        .filter_map(|n| n.metadata.uid.clone())
        .collect();
    let unreserved = reservations(client, |c| {
        !c.annotations().contains_key(ANNOTATION_RETIRED_NODE_ID)
            && !reserved(c)
            && c.annotations()
                .get(ANNOTATION_GARAGE_NODE_UID)
                .is_some_and(|uid| live.contains(uid))
    })
    .await?;
    ensure!(
        unreserved.is_empty(),
        "claims of live members without their reservation: {unreserved:?}"
    );
    let t = Instant::now();
    clusters.delete(NAME, &DeleteParams::default()).await?;
    wait(
        "the GarageCluster to be gone",
        Duration::from_secs(240),
        || async { Ok(clusters.get_opt(NAME).await?.is_none()) },
    )
    .await?;
    let deleted_after = t.elapsed();
    wait(
        "no operator-made object left",
        Duration::from_secs(60),
        || async {
            let left = leftovers(client).await?;
            Ok(left.iter().all(|k| user_made.contains(&k.as_str())))
        },
    )
    .await
    .map_err(|e| anyhow!("{e:#}"))?;
    let left = leftovers(client).await?;
    for kept in user_made {
        ensure!(
            left.iter().any(|k| k == kept),
            "{kept}, made by the user, went on Destroy"
        );
    }
    ensure!(
        claim_names(client).await? == claims_before,
        "claims changed on Destroy with the Retain policy"
    );
    let still = reservations(client, reserved).await?;
    ensure!(
        still.is_empty(),
        "reservations left after Destroy: {still:?}"
    );
    println!(
        "cluster deleted in {:.1}s; nothing left but the {} retained claims",
        deleted_after.as_secs_f64(),
        claims_before.len()
    );
    Ok(())
}
