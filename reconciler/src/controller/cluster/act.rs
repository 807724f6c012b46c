//! Carries a GarageCluster [`Decision`] out: owned objects, generated GarageNodes, peer
//! reconnects, the one layout apply, Events and status. Every write is counted.

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use shared_types::conditions::reason;
use shared_types::garage_cluster::common::StorageDrainStatus;
use shared_types::garage_cluster::v1beta2::{GarageCluster, GarageClusterStatus};
use shared_types::garage_node::GarageNode;
use shared_types::keys::annotation::ANNOTATION_DRAIN;

use super::observe::Access;
use super::recovery;
use crate::controller::garage_access::{pod_client, random_hex32};
use crate::controller::write::{self, ensure, ensure_immutable};
use crate::controller::{Context, Error, Metrics};
use crate::desired::{Settings, secrets};
use crate::garage::{AdminClient, NodeTarget, RepairType, RoleChange};
use crate::layout;
use crate::machine::drain::Step;
use crate::machine::rollout::Step as RolloutStep;
use decide::cluster::decision::{Decision, LayoutChange, OWNED};
use decide::cluster::observed::{GarageView, Observed};
use decide::conditions::{self, Desired};
use decide::note::Note;

/// Writes what `d` asks for. Returns false when the cluster turned out to be stale (deleted
/// or replaced) and nothing was created for it.
pub async fn act(
    o: &Observed,
    access: &Access,
    s: &Settings,
    mut d: Decision,
    ctx: &Context,
) -> Result<bool, Error> {
    let cluster = o.cluster.as_ref();
    let ns = s.namespace.as_str();
    let client = &ctx.client;
    let m = &ctx.metrics;

    if !ensure_objects(o, s, &d, ctx).await? {
        // The cached object is stale: members created for it would only be garbage.
        return Ok(false);
    }
    // Scraping is not storage: a ServiceMonitor the API server refuses is reported, and the
    // rest of the pass goes on.
    if let Err(e) = super::service_monitor::converge(&d.service_monitor, ns, &s.uid, ctx).await {
        super::service_monitor::failed(&mut d.conditions, &mut d.notes, &e);
    }
    let gn_api: Api<GarageNode> = Api::namespaced(client.clone(), ns);

    let pools = std::mem::take(&mut d.pools);
    crate::controller::pools::act::act(o, s, pools, &mut d.notes, ctx).await?;

    super::gateways::serve(ns, (&d.unserve_pods, &d.serve_pods), ctx).await?;
    if let (Some(token), false) = (&access.token, d.rejoin.is_empty()) {
        for (host, peers) in &d.rejoin {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            if let Ok(member) = pod_client(host, s.admin_port, token, ctx.config.admin_timeout) {
                reconnect(&member, peers).await;
            }
        }
    }
    mark_nodes(&gn_api, &d.eject, &d.annotate_drain, &mut d.notes, m).await?;
    super::member_status::write(ns, &d.member_facts, ctx).await?;
    super::member_status::mark_seen_without_role(ns, &d.seen_without_role, ctx).await;
    super::cycle::act(ns, o, &d.cycle, &mut d.notes, ctx).await?;
    // Before the drain: the recovery is what unblocks a drain held by a dead node (the
    // decision holds the drain step back in a pass that runs it).
    if let (Some(allow), Some(admin), GarageView::Read(read)) =
        (d.skip_dead_nodes, &access.admin, &o.garage)
    {
        recovery::skip_dead_nodes(
            cluster,
            admin,
            read.layout.version,
            allow,
            &mut d.notes,
            ctx,
        )
        .await?;
    }
    if let Some(step) = d.drain.take() {
        drain_step(o, access.admin.as_ref(), step, &mut d.notes, ctx).await?;
    }
    if let Some(step) = d.rollout.take() {
        rollout_step(o, step, &mut d.notes, ctx).await?;
    }
    delete_retired(ns, &d.prune_configs, &d.delete_nodes, &mut d.notes, ctx).await?;
    super::gateways::retire(ns, d.delete_gateway.as_deref(), &mut d.notes, ctx).await?;
    if let Some(admin) = &access.admin {
        reconnect(admin, &d.reconnect).await;
        super::workers::apply(admin, &d.worker_variables, &mut d.notes).await;
        if let Some(p) = &d.operation {
            d.status.last_operation =
                Some(super::operations::run(cluster, admin, p, &mut d.notes, ctx).await?);
        }
        if let Some(r) = &d.go_token {
            super::go_token::act(cluster, admin, r, &mut d.notes, ctx).await?;
        }
        if let Some(change) = &d.remove_tombstones {
            super::gateways::remove_tombstones(admin, change, &mut d.notes, m).await;
        }
        if let Some(change) = &d.layout
            && let Some(version) = apply_layout(admin, change, &mut d.notes, m).await
        {
            // The apply answered with the new version, so status reports it now.
            d.status.layout_version = Some(version);
        }
    }
    ctx.events.publish(cluster, &d.notes).await;
    publish(cluster, ctx, d.status, &d.conditions).await?;
    Ok(true)
}

/// Ensures the objects the cluster owns: its Secrets (generated once), config revision,
/// Services, PDB, the Garage pods' NetworkPolicy (or its removal) and generated GarageNodes.
/// False when the cluster changed under the pass and new members must not be created for it.
async fn ensure_objects(
    o: &Observed,
    s: &Settings,
    d: &Decision,
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
    let cm_api = Api::<ConfigMap>::namespaced(client.clone(), ns);
    for revision in std::iter::once(&d.config).chain(&d.node_configs) {
        let body = revision.config_map.data.clone();
        ensure_immutable(&cm_api, m, &revision.config_map, uid, |live| {
            live.data == body
        })
        .await?;
    }
    let svc_api: Api<Service> = Api::namespaced(client.clone(), ns);
    for svc in &d.services {
        ensure(&svc_api, m, svc, uid, write::metadata_and_spec).await?;
    }
    for (name, svc_uid) in &d.delete_services {
        let params = DeleteParams {
            preconditions: Some(kube::api::Preconditions {
                uid: Some(svc_uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::background()
        };
        write::delete_if_present(&svc_api, m, name, &params).await?;
    }
    let pdb_api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), ns);
    // A budget turned off (or with nobody left to protect) goes: one left in place would keep
    // refusing evictions nobody asked it to refuse.
    for (wanted, name) in [
        (&d.pdb, crate::names::storage_pdb(&s.name)),
        (&d.gateway_pdb, crate::names::gateway_service(&s.name)),
    ] {
        match wanted {
            Some(p) => {
                ensure(&pdb_api, m, p, uid, write::metadata_and_spec).await?;
            }
            None => {
                write::remove_controlled(&pdb_api, m, &name, uid).await?;
            }
        }
    }
    super::network_policy::converge(&d.network_policy, ns, uid, ctx).await?;
    let gn_api: Api<GarageNode> = Api::namespaced(client.clone(), ns);
    for gn in &d.update_nodes {
        ensure(&gn_api, m, gn, uid, write::metadata_and_spec).await?;
    }
    if !d.create_nodes.is_empty() {
        if !still_current(client, ns, &s.name, uid).await? {
            return Ok(false);
        }
        for gn in &d.create_nodes {
            ensure(&gn_api, m, gn, uid, write::metadata_and_spec).await?;
        }
    }

    Ok(true)
}

/// Hands `eject` to the user (controller reference and managed-by label removed) and asks
/// each of `drain` to drain.
async fn mark_nodes(
    gn_api: &Api<GarageNode>,
    eject: &[String],
    drain: &[String],
    notes: &mut Vec<Note>,
    m: &Metrics,
) -> Result<(), Error> {
    for name in eject {
        m.wrote();
        gn_api
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {
                    "ownerReferences": null,
                    "labels": {shared_types::keys::label::LABEL_APP_MANAGED_BY: null},
                }})),
            )
            .await?;
        notes.push(Note::normal(
            reason::REASON_RECONCILE_SUCCESS,
            "EjectNode",
            format!("layoutPolicy is Manual: {name} is now a user-owned GarageNode; its identity and role are unchanged"),
        ));
    }
    for name in drain {
        request_drain(gn_api, name, m).await?;
        notes.push(Note::normal(
            reason::REASON_DRAINING,
            "RequestDrain",
            format!("scale-down: {name} asked to drain before it is removed"),
        ));
    }
    Ok(())
}

/// Asks GarageNode `name` to drain (`drain=true`), as Auto scale-down and a cycle do.
pub(super) async fn request_drain(
    gn_api: &Api<GarageNode>,
    name: &str,
    m: &Metrics,
) -> Result<(), Error> {
    m.wrote();
    gn_api
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {ANNOTATION_DRAIN: "true"}}})),
        )
        .await?;
    m.step("drain", "request");
    Ok(())
}

/// Deletes config revisions nothing mounts any more and GarageNodes whose drain is proven.
async fn delete_retired(
    ns: &str,
    configs: &[String],
    nodes: &[String],
    notes: &mut Vec<Note>,
    ctx: &Context,
) -> Result<(), Error> {
    let m = &ctx.metrics;
    let gn_api: Api<GarageNode> = Api::namespaced(ctx.client.clone(), ns);
    let cm_api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), ns);
    for name in configs {
        write::delete_if_present(&cm_api, m, name, &DeleteParams::background()).await?;
        m.step("rollout", "prune_config");
    }
    for name in nodes {
        write::delete_if_present(&gn_api, m, name, &DeleteParams::background()).await?;
        m.step("drain", "delete_node");
        notes.push(Note::normal(
            reason::REASON_NODE_DRAIN_PREPARED,
            "DeleteNode",
            format!("{name} is drained with a complete block proof; deleting it"),
        ));
    }
    Ok(())
}

/// Applies the pass's one layout change; the version applied, or `None` (with a warning
/// Event) when Garage refused it or something moved.
async fn apply_layout(
    admin: &AdminClient,
    change: &LayoutChange,
    notes: &mut Vec<Note>,
    m: &Metrics,
) -> Option<i64> {
    match apply(admin, change).await {
        Ok(()) => {
            m.layout_applied();
            tracing::info!(
                version = change.version,
                roles = change.intended.len(),
                bootstrap = change.bootstrap,
                "layout applied"
            );
            notes.push(Note::normal(
                "LayoutApplied",
                "ApplyLayout",
                format!(
                    "Garage layout version {} applied ({} role change(s){}{})",
                    change.version,
                    change.intended.len(),
                    change
                        .parameters
                        .as_ref()
                        .map(|p| format!(", zone redundancy {:?}", p.zone_redundancy))
                        .unwrap_or_default(),
                    if change.bootstrap {
                        ", first layout"
                    } else {
                        ""
                    }
                ),
            ));
            i64::try_from(change.version).ok()
        }
        Err(e) => {
            tracing::warn!(error = %e, "layout change not applied");
            notes.push(Note::warning(
                reason::REASON_GARAGE_API_ERROR,
                "ApplyLayout",
                format!("layout version {} not applied: {e}", change.version),
            ));
            None
        }
    }
}

/// Writes the status when, and only when, it differs from the live one.
pub async fn publish(
    cluster: &GarageCluster,
    ctx: &Context,
    status: GarageClusterStatus,
    wanted: &[Desired],
) -> Result<(), Error> {
    publish_owning(cluster, ctx, status, wanted, OWNED).await
}

/// [`publish`], with `owned` the condition types the pass decides (those not wanted go).
pub async fn publish_owning(
    cluster: &GarageCluster,
    ctx: &Context,
    mut status: GarageClusterStatus,
    wanted: &[Desired],
    owned: &[&str],
) -> Result<(), Error> {
    let current = cluster.status.clone().unwrap_or_default();
    // Transaction records are written only by `write_transaction`, with a precondition.
    status.storage_drain = current.storage_drain.clone();
    status.storage_rollout = current.storage_rollout.clone();
    status.observed_generation = cluster.metadata.generation;
    status.conditions = Some(conditions::merge(
        current.conditions.as_deref(),
        wanted,
        owned,
        cluster.metadata.generation,
    ));
    if status == current {
        return Ok(());
    }
    let api: Api<GarageCluster> =
        Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default());
    let mut value = serde_json::to_value(&status)
        .map_err(|e| Error::Encoding(format!("encoding the cluster status: {e}")))?;
    // Fields that disappeared must be cleared explicitly in a merge patch.
    let before = serde_json::to_value(&current)
        .map_err(|e| Error::Encoding(format!("encoding the cluster status: {e}")))?;
    if let (Some(map), Some(was)) = (value.as_object_mut(), before.as_object()) {
        for key in was.keys() {
            if !map.contains_key(key) {
                map.insert(key.clone(), serde_json::Value::Null);
            }
        }
        map.remove("storageDrain");
        map.remove("storageRollout");
    }
    if status.conditions.as_ref().is_some_and(Vec::is_empty) {
        value["conditions"] = json!(null);
    }
    write::patch_status(&api, &ctx.metrics, &cluster.name_any(), value).await
}

/// Publishes `wanted` and nothing else: conditions of other types and `observedGeneration`
/// stay what the last acting pass wrote, since nothing of a later generation was acted on
/// (a suspended cluster's `Suspended`, or a `Ready=False` saying what the pass waits for).
pub async fn publish_only(
    cluster: &GarageCluster,
    ctx: &Context,
    wanted: &Desired,
) -> Result<(), Error> {
    let current = cluster.status.clone().unwrap_or_default();
    let merged = conditions::merge(
        current.conditions.as_deref(),
        std::slice::from_ref(wanted),
        &[wanted.type_],
        cluster.metadata.generation,
    );
    if current.conditions.as_ref() == Some(&merged) {
        return Ok(());
    }
    let api: Api<GarageCluster> =
        Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default());
    write::patch_status(
        &api,
        &ctx.metrics,
        &cluster.name_any(),
        json!({"conditions": merged}),
    )
    .await
}

/// Stage, re-read, verify that staging holds exactly what was intended, apply.
/// Why a planned layout change was not applied. Each is reported in a warning Event and the
/// next pass plans again from what Garage then reports.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Garage refused or failed one of the calls.
    #[error("{step}: {source}")]
    Garage {
        /// The call: staging, reading back, applying.
        step: &'static str,
        /// Garage's answer.
        source: crate::garage::GarageError,
    },
    /// Someone else changed the layout between the plan and the apply.
    #[error("the layout moved to version {live} while staging; re-planning")]
    Moved {
        /// The version Garage reported.
        live: u64,
    },
    /// The staged changes read back are not exactly the plan's.
    #[error("{0}")]
    NotAsPlanned(String),
}

/// Stages the change, reads it back, verifies it is exactly the plan's, then applies it.
pub(super) async fn apply(admin: &AdminClient, change: &LayoutChange) -> Result<(), ApplyError> {
    let garage = |step| move |source| ApplyError::Garage { step, source };
    if !change.stage.is_empty() || change.parameters.is_some() {
        admin
            .stage_layout(&change.stage, change.parameters.as_ref())
            .await
            .map_err(garage("staging the changes"))?;
    }
    let live = admin
        .layout()
        .await
        .map_err(garage("reading the staged layout back"))?;
    if live.version + 1 != change.version {
        return Err(ApplyError::Moved { live: live.version });
    }
    layout::verify_staged(&live, &change.intended, change.parameters.as_ref())
        .map_err(ApplyError::NotAsPlanned)?;
    if let Err(e) = admin.apply_layout(change.version).await {
        // Garage refused the version (a zone redundancy it cannot meet, say). Staging was
        // verified to hold this change alone, so it is discarded rather than left to block
        // the next writer (a drain's role removal verifies staging too); the next pass plans
        // again from what Garage then reports.
        // (Not when another writer moved the version in between: what is staged now is
        // not known to be ours.)
        if !matches!(e, crate::garage::GarageError::LayoutVersionMismatch { .. })
            && let Err(revert) = admin.revert_layout().await
        {
            tracing::warn!(error = %revert, "the refused layout change could not be unstaged");
        }
        return Err(garage("applying")(e));
    }
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

/// Carries out one step of the drain transaction. The record is always written first, with
/// the cluster's resourceVersion as precondition, so a concurrent writer makes the step fail
/// rather than act on a stale record.
async fn drain_step(
    o: &Observed,
    admin: Option<&AdminClient>,
    step: Step,
    notes: &mut Vec<Note>,
    ctx: &Context,
) -> Result<(), Error> {
    let m = &ctx.metrics;
    match step {
        Step::Record(record) => {
            let first = o
                .cluster
                .status
                .as_ref()
                .and_then(|s| s.storage_drain.as_ref())
                .is_none();
            write_record(&o.cluster, Some(&record), ctx).await?;
            m.step("drain", if first { "intent" } else { "evidence" });
            if first {
                notes.push(Note::normal(
                    reason::REASON_DRAINING,
                    "RecordDrain",
                    format!(
                        "drain of {} recorded (transaction {}) before any change",
                        record
                            .actor
                            .as_ref()
                            .and_then(|a| a.name.clone())
                            .unwrap_or_default(),
                        record.transaction_id.clone().unwrap_or_default()
                    ),
                ));
            }
            if record.completed_at.is_some() {
                notes.push(Note::normal(
                    reason::REASON_NODE_DRAIN_PREPARED,
                    "ProveDrain",
                    "role removed and block proof complete; the drained node may be deleted".into(),
                ));
            }
        }
        Step::LaunchRepairs { record, nodes } => {
            write_record(&o.cluster, Some(&record), ctx).await?;
            let Some(admin) = admin else {
                return Ok(());
            };
            for node in &nodes {
                if let Err(e) = admin
                    .launch_repair(&NodeTarget::Node(node.clone()), RepairType::Blocks)
                    .await
                {
                    // The next pass adopts what started or launches again.
                    tracing::info!(node = %node.short(), error = %e, "blocks repair not launched");
                }
            }
            m.step("drain", "launch_repairs");
            notes.push(Note::normal(
                reason::REASON_DRAINING,
                "LaunchRepairs",
                format!("Blocks repair launched on {} node(s)", nodes.len()),
            ));
        }
        Step::RemoveRole { id, version } => {
            let Some(admin) = admin else {
                return Ok(());
            };
            let change = LayoutChange {
                stage: vec![RoleChange::remove(id.clone())],
                intended: vec![RoleChange::remove(id.clone())],
                version,
                bootstrap: false,
                parameters: None,
            };
            let done = format!(
                "role of node {} removed in layout version {version}; its pod keeps running until the transaction completes",
                id.short()
            );
            super::gateways::role_change(admin, &id, &change, done, notes, m).await;
        }
        step @ (Step::SwapRole { .. } | Step::SkipRetiredAcks { .. }) => {
            if let Some(admin) = admin {
                super::gateways::drain_step(admin, step, notes, m).await;
            }
        }
        Step::Clear => {
            write_record(&o.cluster, None, ctx).await?;
            m.step("drain", "clear");
        }
        Step::Idle | Step::Wait { .. } => {}
    }
    Ok(())
}

/// Replaces (or removes) `status.storageDrain`, only if the cluster is still at the
/// resourceVersion the decision was made from.
pub(super) async fn write_record(
    cluster: &GarageCluster,
    record: Option<&StorageDrainStatus>,
    ctx: &Context,
) -> Result<(), Error> {
    // A record that cannot be encoded is an error, never a null that would clear it.
    let value = record
        .map(serde_json::to_value)
        .transpose()
        .map_err(|e| Error::Encoding(format!("encoding the drain record: {e}")))?;
    write_transaction(cluster, "storageDrain", value, ctx).await
}

/// Replaces (or removes) the transaction record `status.<field>`, only if the cluster is
/// still at the resourceVersion the decision was made from.
pub(super) async fn write_transaction(
    cluster: &GarageCluster,
    field: &str,
    record: Option<serde_json::Value>,
    ctx: &Context,
) -> Result<(), Error> {
    let api: Api<GarageCluster> =
        Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default());
    let mut ops = vec![json!({
        "op": "test", "path": "/metadata/resourceVersion", "value": cluster.resource_version()
    })];
    if cluster.status.is_none() {
        ops.push(json!({"op": "add", "path": "/status", "value": {}}));
    }
    let path = format!("/status/{field}");
    match record {
        Some(r) => ops.push(json!({"op": "add", "path": path, "value": r})),
        None => ops.push(json!({"op": "remove", "path": path})),
    }
    let patch: json_patch::Patch = serde_json::from_value(serde_json::Value::Array(ops))
        .map_err(|e| Error::Encoding(format!("building the {field} record patch: {e}")))?;
    ctx.metrics.wrote();
    match api
        .patch_status(
            &cluster.name_any(),
            &PatchParams::default(),
            &Patch::<()>::Json(patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        // A refused test of the resourceVersion (422) means someone wrote the cluster after
        // this pass read it; any other refusal is a real error and is reported as one.
        Err(kube::Error::Api(e)) if e.code == 422 || e.code == 409 => {
            let live = api.get(&cluster.name_any()).await?;
            if live.resource_version() != cluster.resource_version() {
                Err(Error::Stale(format!(
                    "GarageCluster {}",
                    cluster.name_any()
                )))
            } else {
                Err(kube::Error::Api(e).into())
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Carries out one step of the storage rollout; the record is written before the pod it
/// names is deleted, and the delete names that exact pod UID.
async fn rollout_step(
    o: &Observed,
    step: RolloutStep,
    notes: &mut Vec<Note>,
    ctx: &Context,
) -> Result<(), Error> {
    let m = &ctx.metrics;
    let record = o
        .cluster
        .status
        .as_ref()
        .and_then(|s| s.storage_rollout.as_ref());
    match step {
        RolloutStep::Record(r) => {
            let value = serde_json::to_value(&*r)
                .map_err(|e| Error::Encoding(format!("serialising the rollout record: {e}")))?;
            write_transaction(&o.cluster, "storageRollout", Some(value), ctx).await?;
            m.step("rollout", "record");
            notes.push(Note::normal(
                reason::REASON_STORAGE_ROLLING_OUT,
                "RecordRollout",
                decide::machine::rollout::record_note(record, &r),
            ));
        }
        RolloutStep::DeletePod { name, uid } => {
            let pods: Api<Pod> = Api::namespaced(
                ctx.client.clone(),
                &o.cluster.namespace().unwrap_or_default(),
            );
            let dp = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: Some(uid.clone()),
                    resource_version: None,
                }),
                ..DeleteParams::background()
            };
            m.wrote();
            match pods.delete(&name, &dp).await {
                Ok(_) => {}
                // Gone already, or another incarnation now: the next pass sees which.
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                Err(e) => return Err(e.into()),
            }
            m.step("rollout", "delete_pod");
            notes.push(Note::normal(
                reason::REASON_STORAGE_ROLLING_OUT,
                "ReplacePod",
                format!(
                    "pod {name} of {} deleted; its workload starts the replacement on the current revision",
                    record
                        .and_then(|r| r.garage_node_name.clone())
                        .unwrap_or_default()
                ),
            ));
        }
        RolloutStep::Clear => {
            write_transaction(&o.cluster, "storageRollout", None, ctx).await?;
            m.step("rollout", "clear");
            notes.push(Note::normal(
                reason::REASON_STORAGE_ROLLING_OUT,
                "ProveReplacement",
                format!(
                    "the replacement of {} is Ready, runs the same Garage identity in its role, and the cluster is healthy",
                    record
                        .and_then(|r| r.garage_node_name.clone())
                        .unwrap_or_default()
                ),
            ));
        }
        RolloutStep::Converged | RolloutStep::Wait { .. } => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::ApplyError;
    use crate::garage::GarageError;

    #[test]
    fn a_layout_not_applied_says_which_call_failed_or_why_it_was_not_ours() {
        let refused = GarageError::from_status(
            "ApplyClusterLayout",
            400,
            br#"{"code":"InvalidRequest","message":"wrong version","region":"garage","path":"/"}"#,
        );
        let table = [
            (
                ApplyError::Garage {
                    step: "applying",
                    source: refused,
                },
                "applying: ",
            ),
            (
                ApplyError::Moved { live: 7 },
                "the layout moved to version 7 while staging; re-planning",
            ),
            (
                ApplyError::NotAsPlanned("staged roles differ".into()),
                "staged roles differ",
            ),
        ];
        for (error, starts) in table {
            let text = error.to_string();
            assert!(text.starts_with(starts), "{text:?} should start {starts:?}");
        }
    }
}
