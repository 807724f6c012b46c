//! GarageCluster controller: secrets, config revision, Services, PDB, the generated
//! GarageNodes of the Auto storage group, the layout (the single writer of this cluster's
//! layout) and status.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::runtime::controller::Action;
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use shared_types::common::ClusterPhase;
use shared_types::conditions::{cluster as cc, common, reason};
use shared_types::garage_cluster::common::ClusterHealth as HealthStatusField;
use shared_types::garage_cluster::v1beta2::{GarageCluster, GarageClusterStatus, NodeStatus};
use shared_types::garage_node::GarageNode;

use super::conditions::{self, Desired};
use super::garage_access::{admin_token, is_ready, pod_client, random_hex32, running_ip};
use super::write::{self, ensure, ensure_immutable};
use super::{Context, Error};
use crate::desired::{Settings, config, labels, nodes, pdb, secrets, services};
use crate::garage::{AdminClient, ClusterHealth, HealthStatus, NodeId};
use crate::layout::{self, DesiredRole, Member, Observed, Plan};
use crate::names;

/// Condition types this controller owns on a GarageCluster.
const OWNED: &[&str] = &[
    common::CONDITION_READY,
    cc::CONDITION_STORAGE_SCALE_DOWN_BLOCKED,
    cc::CONDITION_STORAGE_TOPOLOGY_READY,
];

/// What the Garage part of a pass found.
#[derive(Default)]
struct GarageView {
    plan: Option<Plan>,
    layout_version: Option<u64>,
    health: Option<ClusterHealth>,
    in_layout: BTreeMap<String, bool>,
    connected: BTreeMap<String, bool>,
    applied: bool,
    error: Option<String>,
}

/// One pass over a GarageCluster.
pub async fn reconcile(cluster: Arc<GarageCluster>, ctx: Arc<Context>) -> Result<Action, Error> {
    ctx.metrics.reconciles.fetch_add(1, Ordering::Relaxed);
    if cluster.metadata.deletion_timestamp.is_some() {
        // Owner references remove what this cluster owns; no layout work on Destroy.
        return Ok(Action::await_change());
    }
    let ns = cluster.namespace().unwrap_or_default();
    let name = cluster.name_any();
    let settings = match Settings::from_cluster(&cluster) {
        Ok(mut s) => {
            s.use_default_image(&cluster, ctx.config.default_garage_image.as_deref());
            s
        }
        Err(e) => {
            let wanted = [Desired {
                type_: common::CONDITION_READY,
                status: false,
                reason: reason::REASON_VALIDATION_FAILED,
                message: e.to_string(),
            }];
            let mut status = cluster.status.clone().unwrap_or_default();
            status.phase = Some(ClusterPhase::Failed);
            publish(&cluster, &ctx, status, &wanted).await?;
            return Ok(Action::requeue(ctx.config.resync));
        }
    };
    let uid = settings.uid.clone();
    let client = &ctx.client;

    // Secrets: generated once, never replaced.
    let secrets_api: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let rpc = secrets::rpc_secret_source(&cluster, &settings);
    // The random value is used only if the Secret does not exist yet.
    if rpc.generated {
        let s = secrets::rpc_secret(&cluster, &settings, &random_hex32()?)?;
        ensure_immutable(&secrets_api, &ctx.metrics, &s, &uid, |_| true).await?;
    }
    let admin = secrets::admin_token_source(&cluster, &settings);
    if admin.generated {
        let s = secrets::admin_token_secret(&cluster, &settings, &random_hex32()?)?;
        ensure_immutable(&secrets_api, &ctx.metrics, &s, &uid, |_| true).await?;
    }

    let revision = config::revision(&cluster, &settings)?;
    let body = revision.config_map.data.clone();
    ensure_immutable(
        &Api::<ConfigMap>::namespaced(client.clone(), &ns),
        &ctx.metrics,
        &revision.config_map,
        &uid,
        |live| live.data == body,
    )
    .await?;

    let svc_api: Api<Service> = Api::namespaced(client.clone(), &ns);
    for svc in [
        services::headless(&cluster, &settings)?,
        services::api(&cluster, &settings)?,
    ] {
        ensure(&svc_api, &ctx.metrics, &svc, &uid, write::metadata_and_spec).await?;
    }
    if let Some(p) = pdb::storage_pdb(&cluster, &settings)? {
        let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), &ns);
        ensure(&api, &ctx.metrics, &p, &uid, write::metadata_and_spec).await?;
    }

    // Generated nodes: the wanted slots, and extra ones left by a scale-down.
    let gn_api: Api<GarageNode> = Api::namespaced(client.clone(), &ns);
    let mut generated: BTreeMap<u32, GarageNode> = BTreeMap::new();
    for gn in gn_api.list(&Default::default()).await?.items {
        if nodes::is_generated_by(&gn, &uid)
            && let Some(ordinal) = nodes::auto_ordinal(&name, &gn.name_any())
        {
            generated.insert(ordinal, gn);
        }
    }
    for (ordinal, gn) in generated
        .iter_mut()
        .filter(|(o, _)| **o < settings.replicas)
    {
        let desired = nodes::auto_storage_node(&cluster, &settings, *ordinal)?;
        let (_, live) = ensure(
            &gn_api,
            &ctx.metrics,
            &desired,
            &uid,
            write::metadata_and_spec,
        )
        .await?;
        *gn = live;
    }
    let extra: Vec<String> = generated
        .iter()
        .filter(|(o, _)| **o >= settings.replicas)
        .map(|(_, gn)| gn.name_any())
        .collect();

    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let pod_list = pods
        .list(
            &kube::api::ListParams::default()
                .labels(&labels::selector_string(&labels::headless_selector(&name))),
        )
        .await?
        .items;
    let pod_of = |node: &str| {
        pod_list
            .iter()
            .find(|p| p.name_any() == names::node_pod(node))
    };
    // An ID counts only while the pod it was read from is the one running now.
    let members: Vec<(Member, Option<String>)> = generated
        .iter()
        .filter(|(o, _)| **o < settings.replicas)
        .map(|(_, gn)| {
            let pod = pod_of(&gn.name_any());
            let status = gn.status.clone().unwrap_or_default();
            let proven = pod.is_some_and(|p| {
                p.metadata.uid.is_some() && p.metadata.uid == status.observed_pod_uid
            });
            let id = status
                .node_id
                .as_deref()
                .filter(|_| proven)
                .and_then(|s| s.parse::<NodeId>().ok());
            let tags = layout::tags::storage_role_tags(
                &name,
                &ns,
                &uid,
                gn.spec.tags.as_deref().unwrap_or_default(),
            );
            let member = Member {
                name: gn.name_any(),
                node_id: id,
                role: DesiredRole {
                    zone: gn.spec.zone.clone(),
                    capacity: gn
                        .spec
                        .capacity
                        .as_ref()
                        .and_then(|q| crate::desired::quantity::to_bytes(&q.0))
                        .unwrap_or(settings.capacity),
                    tags,
                },
            };
            (member, pod.and_then(running_ip))
        })
        .collect();

    let token = admin_token(&secrets_api, &admin).await?;
    let view = match &token {
        Some(token) => Box::pin(garage_pass(&ctx, &settings, &members, token)).await,
        None => GarageView {
            error: Some(format!(
                "admin token Secret {} is not readable yet",
                admin.name
            )),
            ..Default::default()
        },
    };

    // Membership: all slots at bootstrap, then one at a time once the topology is settled.
    let bootstrap = generated.is_empty()
        || view
            .layout_version
            .is_some_and(|_| view.in_layout.values().all(|v| !v));
    let topology_ready = matches!(view.plan, Some(Plan::Converged))
        && members
            .iter()
            .all(|(m, _)| view.in_layout.get(&m.name) == Some(&true));
    let missing: Vec<u32> = (0..settings.replicas)
        .filter(|o| !generated.contains_key(o))
        .collect();
    let create: Vec<u32> = if bootstrap && view.error.is_none() || generated.is_empty() {
        missing.clone()
    } else if topology_ready {
        missing.iter().copied().take(1).collect()
    } else {
        Vec::new()
    };
    if !create.is_empty() && !still_current(client, &ns, &name, &uid).await? {
        // The cached object is stale (the cluster was deleted or replaced): creating members
        // for it would only leave objects for the garbage collector.
        return Ok(Action::await_change());
    }
    for ordinal in &create {
        let gn = nodes::auto_storage_node(&cluster, &settings, *ordinal)?;
        ensure(&gn_api, &ctx.metrics, &gn, &uid, write::metadata_and_spec).await?;
    }

    // Status.
    let ready_pods = members
        .iter()
        .filter(|(m, _)| pod_of(&m.name).is_some_and(is_ready))
        .count();
    let identified = members
        .iter()
        .filter(|(m, _)| m.node_id.is_some() && pod_of(&m.name).is_some_and(is_ready))
        .count();
    let all_in_layout = members.len() == settings.replicas as usize
        && members
            .iter()
            .all(|(m, _)| view.in_layout.get(&m.name) == Some(&true));
    let healthy = view
        .health
        .as_ref()
        .is_some_and(|h| h.status == HealthStatus::Healthy);
    let mut wanted = Vec::new();
    let (ready, ready_reason, ready_message) = if ready_pods < settings.replicas as usize
        || members.iter().any(|(m, _)| m.node_id.is_none())
    {
        (
            false,
            reason::REASON_NOT_ALL_REPLICAS_READY,
            format!(
                "{identified} of {} storage members run with a known node ID",
                settings.replicas
            ),
        )
    } else if let Some(Plan::Hold { reason: r, message }) = &view.plan {
        let rs = match r {
            layout::HoldReason::ForeignStagedChanges => reason::REASON_FOREIGN_STAGED_CHANGES,
            layout::HoldReason::IdentityCollision => reason::REASON_IDENTITY_COLLISION,
            _ => reason::REASON_LAYOUT_NOT_READY,
        };
        (false, rs, message.clone())
    } else if !all_in_layout || !missing.is_empty() {
        (
            false,
            reason::REASON_STORAGE_TOPOLOGY_NOT_READY,
            "storage members are joining the layout".into(),
        )
    } else if !extra.is_empty() {
        (
            false,
            reason::REASON_ROLE_REMOVAL_UNAVAILABLE,
            "a scale-down is held; see StorageScaleDownBlocked".into(),
        )
    } else if let Some(e) = &view.error {
        (false, reason::REASON_GARAGE_API_ERROR, e.clone())
    } else if !healthy {
        (
            false,
            reason::REASON_LAYOUT_NOT_READY,
            format!(
                "Garage reports {:?}",
                view.health.as_ref().map(|h| h.status.clone())
            ),
        )
    } else {
        (true, reason::REASON_CLUSTER_READY, String::new())
    };
    wanted.push(Desired {
        type_: common::CONDITION_READY,
        status: ready,
        reason: ready_reason,
        message: ready_message,
    });
    wanted.push(Desired {
        type_: cc::CONDITION_STORAGE_TOPOLOGY_READY,
        status: all_in_layout && missing.is_empty(),
        reason: if all_in_layout && missing.is_empty() {
            reason::REASON_CONVERGED
        } else {
            reason::REASON_ADDING_MEMBERS
        },
        message: String::new(),
    });
    if !extra.is_empty() {
        wanted.push(Desired {
            type_: cc::CONDITION_STORAGE_SCALE_DOWN_BLOCKED,
            status: true,
            reason: reason::REASON_ROLE_REMOVAL_UNAVAILABLE,
            message: format!(
                "spec.storage.replicas is {} but {} stay: removing a storage role needs a prepared deletion with a drain proof, which this operator version does not implement; no role, pod or volume was removed. Restore replicas to {} to clear this",
                settings.replicas,
                extra.join(", "),
                settings.replicas as usize + extra.len()
            ),
        });
    }
    let mut status = cluster.status.clone().unwrap_or_default();
    let desired_count = i32::try_from(settings.replicas).unwrap_or(i32::MAX);
    let ready_count = i32::try_from(ready_pods).unwrap_or(i32::MAX);
    status.replicas = Some(desired_count);
    status.storage_replicas = Some(desired_count);
    status.scale_replicas = Some(desired_count);
    status.ready_replicas = Some(ready_count);
    status.storage_ready_replicas = Some(ready_count);
    status.scale_selector = Some(labels::selector_string(&labels::api_selector(&name)));
    status.selector = status.scale_selector.clone();
    status.phase = Some(if ready_pods == 0 {
        ClusterPhase::Pending
    } else if ready_pods < settings.replicas as usize {
        ClusterPhase::Degraded
    } else {
        ClusterPhase::Running
    });
    if let Some(v) = view.layout_version {
        status.layout_version = Some(i64::try_from(v).unwrap_or(i64::MAX));
    }
    status.nodes = Some(
        members
            .iter()
            .map(|(m, _)| NodeStatus {
                node_id: m.node_id.as_ref().map(ToString::to_string),
                pod_name: Some(names::node_pod(&m.name)),
                zone: Some(m.role.zone.clone()),
                capacity: Some(k8s_openapi::apimachinery::pkg::api::resource::Quantity(
                    m.role.capacity.to_string(),
                )),
                connected: view.connected.get(&m.name).copied(),
                gateway: Some(false),
                tier: Some("storage".into()),
                ..Default::default()
            })
            .collect(),
    );
    if let Some(h) = &view.health {
        status.health = Some(HealthStatusField {
            status: Some(format!("{:?}", h.status).to_ascii_lowercase()),
            healthy: Some(h.status == HealthStatus::Healthy),
            available: Some(h.status != HealthStatus::Unavailable),
            known_nodes: i64::try_from(h.known_nodes).ok(),
            connected_nodes: i64::try_from(h.connected_nodes).ok(),
            storage_nodes: i64::try_from(h.storage_nodes).ok(),
            storage_nodes_ok: i64::try_from(h.storage_nodes_up).ok(),
            partitions: i64::try_from(h.partitions).ok(),
            partitions_quorum: i64::try_from(h.partitions_quorum).ok(),
            partitions_all_ok: i64::try_from(h.partitions_all_ok).ok(),
        });
    }
    publish(&cluster, &ctx, status, &wanted).await?;
    let converged = ready && extra.is_empty() && create.is_empty() && !view.applied;
    Ok(Action::requeue(if view.applied || !create.is_empty() {
        std::time::Duration::from_millis(500)
    } else if converged
        || !extra.is_empty() && ready_pods >= settings.replicas as usize && topology_ready
    {
        ctx.config.resync
    } else {
        ctx.config.short_requeue
    }))
}

/// Writes the status when, and only when, it differs from the live one.
async fn publish(
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

/// Talks to Garage through the members' own pods: reconnects peers, plans the layout and
/// carries out at most one apply.
async fn garage_pass(
    ctx: &Context,
    s: &Settings,
    members: &[(Member, Option<String>)],
    token: &crate::garage::AdminToken,
) -> GarageView {
    let mut view = GarageView::default();
    let mut chosen: Option<AdminClient> = None;
    for (_, ip) in members {
        let Some(ip) = ip else { continue };
        let Ok(client) = pod_client(ip, s.admin_port, token, ctx.config.admin_timeout) else {
            continue;
        };
        if client.cluster_status().await.is_ok() {
            chosen = Some(client);
            break;
        }
    }
    let Some(admin) = chosen else {
        view.error = Some("no storage pod answers on its Admin API yet".into());
        return view;
    };
    match reconnect(&admin, s, members).await {
        Ok(connected) => view.connected = connected,
        Err(e) => view.error = Some(e.to_string()),
    }
    let (layout, history) = match (admin.layout().await, admin.layout_history().await) {
        (Ok(l), Ok(h)) => (l, h),
        (Err(e), _) | (_, Err(e)) => {
            view.error = Some(e.to_string());
            return view;
        }
    };
    let only: Vec<Member> = members.iter().map(|(m, _)| m.clone()).collect();
    for m in &only {
        let placed = m.node_id.as_ref().is_some_and(|id| {
            layout.role(id).is_some_and(|r| {
                r.zone == m.role.zone
                    && r.capacity == Some(m.role.capacity)
                    && layout::tags::same_multiset(&r.tags, &m.role.tags)
            })
        });
        view.in_layout.insert(m.name.clone(), placed);
    }
    view.layout_version = Some(layout.version);
    let plan = layout::plan_layout(&Observed {
        replication_factor: s.replication_factor,
        members: &only,
        layout: &layout,
        history: &history,
    });
    if let Plan::Apply {
        stage,
        intended,
        apply_version,
        bootstrap,
    } = &plan
    {
        match apply(&admin, stage, intended, *apply_version).await {
            Ok(()) => {
                ctx.metrics.layout_applies.fetch_add(1, Ordering::Relaxed);
                tracing::info!(
                    version = apply_version,
                    roles = intended.len(),
                    bootstrap,
                    "layout applied"
                );
                view.applied = true;
                // The apply answered with the new version, so status can report it now
                // rather than one pass later.
                view.layout_version = Some(*apply_version);
            }
            Err(e) => {
                tracing::warn!(error = %e, "layout change not applied");
                view.error = Some(e);
            }
        }
    } else if let Plan::Hold { message, .. } = &plan {
        tracing::info!(message, "layout change held");
    }
    view.plan = Some(plan);
    view.health = admin.cluster_health().await.ok();
    view
}

/// Stage, re-read, verify that staging holds exactly what we intend, apply at `version`.
async fn apply(
    admin: &AdminClient,
    stage: &[crate::garage::RoleChange],
    intended: &[crate::garage::RoleChange],
    version: u64,
) -> Result<(), String> {
    if !stage.is_empty() {
        admin
            .stage_layout(stage, None)
            .await
            .map_err(|e| e.to_string())?;
    }
    let layout = admin.layout().await.map_err(|e| e.to_string())?;
    if layout.version + 1 != version {
        return Err(format!(
            "the layout moved to version {} while staging; re-planning",
            layout.version
        ));
    }
    layout::verify_staged(&layout, intended)?;
    admin
        .apply_layout(version)
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// Tells the chosen pod about every member it does not see up, at the member's current pod
/// address (Garage's peer cache keeps stale IPs after restarts). Returns which members are up.
async fn reconnect(
    admin: &AdminClient,
    s: &Settings,
    members: &[(Member, Option<String>)],
) -> Result<BTreeMap<String, bool>, crate::garage::GarageError> {
    let status = admin.cluster_status().await?;
    let mut up = BTreeMap::new();
    let mut peers = Vec::new();
    for (m, ip) in members {
        let Some(id) = &m.node_id else { continue };
        let is_up = status.nodes.iter().any(|n| &n.id == id && n.is_up);
        up.insert(m.name.clone(), is_up);
        if !is_up && let Some(ip) = ip {
            let host = if ip.contains(':') {
                format!("[{ip}]")
            } else {
                ip.clone()
            };
            peers.push(format!("{id}@{host}:{}", s.rpc_port));
        }
    }
    if !peers.is_empty() {
        for (peer, result) in peers.iter().zip(admin.connect_nodes(&peers).await?) {
            if !result.success {
                tracing::info!(peer = %peer.split('@').next().unwrap_or_default(), error = ?result.error, "peer not reachable yet");
            }
        }
    }
    Ok(up)
}

/// Whether the GarageCluster `namespace/name` still exists as the object with `uid` and is not
/// being deleted, read from the API server rather than the controller's cache.
async fn still_current(
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
