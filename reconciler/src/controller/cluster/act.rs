//! Carries a GarageCluster [`Decision`] out: owned objects, generated GarageNodes, peer
//! reconnects, the one layout apply, Events and status. Every write is counted.

use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use shared_types::garage_cluster::v1beta2::{GarageCluster, GarageClusterStatus};
use shared_types::garage_node::GarageNode;

use super::decide::{Decision, LayoutChange, OWNED};
use super::observe::Observed;
use crate::controller::conditions::{self, Desired};
use crate::controller::events::Note;
use crate::controller::garage_access::random_hex32;
use crate::controller::write::{self, ensure, ensure_immutable};
use crate::controller::{Context, Error};
use crate::desired::{Settings, secrets};
use crate::garage::AdminClient;
use crate::layout;

/// Writes what `d` asks for. Returns false when the cluster turned out to be stale (deleted
/// or replaced) and nothing was created for it.
pub async fn act(
    o: &Observed,
    s: &Settings,
    mut d: Decision,
    ctx: &Context,
) -> Result<bool, Error> {
    let cluster = o.cluster.as_ref();
    let ns = s.namespace.as_str();
    let uid = s.uid.as_str();
    let client = &ctx.client;
    let m = &ctx.metrics;

    // Secrets: generated once, never replaced. The random value is used only on create.
    let secrets_api: Api<Secret> = Api::namespaced(client.clone(), ns);
    if d.rpc_secret {
        let secret = secrets::rpc_secret(cluster, s, &random_hex32()?)?;
        ensure_immutable(&secrets_api, m, &secret, uid, |_| true).await?;
    }
    if d.admin_token {
        let secret = secrets::admin_token_secret(cluster, s, &random_hex32()?)?;
        ensure_immutable(&secrets_api, m, &secret, uid, |_| true).await?;
    }
    let body = d.config.config_map.data.clone();
    ensure_immutable(
        &Api::<ConfigMap>::namespaced(client.clone(), ns),
        m,
        &d.config.config_map,
        uid,
        |live| live.data == body,
    )
    .await?;
    let svc_api: Api<Service> = Api::namespaced(client.clone(), ns);
    for svc in &d.services {
        ensure(&svc_api, m, svc, uid, write::metadata_and_spec).await?;
    }
    if let Some(p) = &d.pdb {
        let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), ns);
        ensure(&api, m, p, uid, write::metadata_and_spec).await?;
    }
    let gn_api: Api<GarageNode> = Api::namespaced(client.clone(), ns);
    for gn in &d.update_nodes {
        ensure(&gn_api, m, gn, uid, write::metadata_and_spec).await?;
    }
    if !d.create_nodes.is_empty() {
        if !still_current(client, ns, &s.name, uid).await? {
            // The cached object is stale: members created for it would only be garbage.
            return Ok(false);
        }
        for gn in &d.create_nodes {
            ensure(&gn_api, m, gn, uid, write::metadata_and_spec).await?;
        }
    }

    if let Some(admin) = &o.admin {
        reconnect(admin, &d.reconnect).await;
        if let Some(change) = &d.layout {
            match apply(admin, change).await {
                Ok(()) => {
                    m.layout_applied();
                    tracing::info!(
                        version = change.version,
                        roles = change.intended.len(),
                        bootstrap = change.bootstrap,
                        "layout applied"
                    );
                    d.notes.push(Note::normal(
                        "LayoutApplied",
                        "ApplyLayout",
                        format!(
                            "Garage layout version {} applied ({} role change(s){})",
                            change.version,
                            change.intended.len(),
                            if change.bootstrap {
                                ", first layout"
                            } else {
                                ""
                            }
                        ),
                    ));
                    // The apply answered with the new version, so status reports it now.
                    d.status.layout_version = i64::try_from(change.version).ok();
                }
                Err(e) => {
                    tracing::warn!(error = %e, "layout change not applied");
                    d.notes.push(Note::warning(
                        shared_types::conditions::reason::REASON_GARAGE_API_ERROR,
                        "ApplyLayout",
                        format!("layout version {} not applied: {e}", change.version),
                    ));
                }
            }
        }
    }
    ctx.events.publish(cluster, &d.notes).await;
    publish(cluster, ctx, d.status, &d.conditions).await?;
    Ok(true)
}

/// Writes the status when, and only when, it differs from the live one.
pub async fn publish(
    cluster: &GarageCluster,
    ctx: &Context,
    mut status: GarageClusterStatus,
    wanted: &[Desired],
) -> Result<(), Error> {
    let current = cluster.status.clone().unwrap_or_default();
    status.observed_generation = cluster.metadata.generation;
    status.conditions = Some(conditions::merge(
        current.conditions.as_deref(),
        wanted,
        OWNED,
        cluster.metadata.generation,
    ));
    if status == current {
        return Ok(());
    }
    let api: Api<GarageCluster> =
        Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default());
    let mut value = serde_json::to_value(&status).unwrap_or_default();
    // Fields that disappeared must be cleared explicitly in a merge patch.
    if status.conditions.as_ref().is_some_and(Vec::is_empty) {
        value["conditions"] = json!(null);
    }
    write::patch_status(&api, &ctx.metrics, &cluster.name_any(), value).await
}

/// Stage, re-read, verify that staging holds exactly what was intended, apply.
async fn apply(admin: &AdminClient, change: &LayoutChange) -> Result<(), String> {
    if !change.stage.is_empty() {
        admin
            .stage_layout(&change.stage, None)
            .await
            .map_err(|e| e.to_string())?;
    }
    let live = admin.layout().await.map_err(|e| e.to_string())?;
    if live.version + 1 != change.version {
        return Err(format!(
            "the layout moved to version {} while staging; re-planning",
            live.version
        ));
    }
    layout::verify_staged(&live, &change.intended)?;
    admin
        .apply_layout(change.version)
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// Tells Garage where members it does not see up run now (its peer cache keeps stale
/// addresses after a restart). Failures are expected while pods start and only logged.
async fn reconnect(admin: &AdminClient, peers: &[String]) {
    if peers.is_empty() {
        return;
    }
    match admin.connect_nodes(peers).await {
        Ok(results) => {
            for (peer, result) in peers.iter().zip(results) {
                if !result.success {
                    tracing::info!(peer = %peer.split('@').next().unwrap_or_default(), error = ?result.error, "peer not reachable yet");
                }
            }
        }
        Err(e) => tracing::info!(error = %e, "peers not reconnected"),
    }
}

/// Whether the GarageCluster `namespace/name` still exists as the object with `uid` and is not
/// being deleted, read from the API server rather than the controller's cache.
pub async fn still_current(
    client: &Client,
    namespace: &str,
    name: &str,
    uid: &str,
) -> Result<bool, Error> {
    let live = Api::<GarageCluster>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await?;
    Ok(live.is_some_and(|c| {
        c.metadata.uid.as_deref() == Some(uid) && c.metadata.deletion_timestamp.is_none()
    }))
}
