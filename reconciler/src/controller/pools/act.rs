//! Carries out a [`PoolPlan`]: the capability proof first, then DaemonSets, activation labels,
//! gate releases, member GarageNodes and identity records. Every write is counted.

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use shared_types::conditions::reason;
use shared_types::garage_node::GarageNode;
use shared_types::keys::label;
use shared_types::keys::scheduling_gate::SCHEDULING_GATE_NODE_LOCAL_POOL_ACTIVATION;

use super::probe;
use crate::controller::write::{self, ensure};
use crate::controller::{Context, Error};
use crate::desired::Settings;
use crate::desired::pool::node_label_value;
use decide::cluster::observed::Observed;
use decide::note::Note;
use decide::pools::plan::{PoolPlan, Release};

/// Writes what the pools ask for: the probe when the decision waits on it, else the pools'
/// writes (which the decision made only on a fresh proof that the gate fences pods).
pub async fn act(
    o: &Observed,
    s: &Settings,
    plan: PoolPlan,
    notes: &mut Vec<Note>,
    ctx: &Context,
) -> Result<(), Error> {
    if plan.run_probe {
        let m = &ctx.metrics;
        let verdict =
            probe::probe(&ctx.client, &o.cluster, &s.image, &ctx.gate_evidence, m).await?;
        ctx.gate_evidence.record_verdict(&s.namespace, &verdict);
        return Ok(());
    }
    prepare(s, &plan, ctx).await?;
    start_members(o, s, &plan, notes, ctx).await?;
    finish(s, &plan, notes, ctx).await
}

/// What must exist before a pool pod may run: the Nodes' disk claims, the pools' config
/// revisions and their DaemonSets.
async fn prepare(s: &Settings, plan: &PoolPlan, ctx: &Context) -> Result<(), Error> {
    let m = &ctx.metrics;
    let ns = s.namespace.as_str();
    let uid = s.uid.as_str();
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    // Claims first: a Node's disks are spoken for before a pod may mount them.
    for (node, key, claim) in &plan.claims {
        patch_node(
            &nodes,
            ctx,
            node,
            json!({"metadata": {"annotations": {key: claim}}}),
        )
        .await?;
        m.step("pool", "claim_host_paths");
    }
    // A pool's own config revisions exist before any DaemonSet template names them.
    let cm_api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), ns);
    for config in &plan.configs {
        let body = config.config_map.data.clone();
        write::ensure_immutable(&cm_api, m, &config.config_map, uid, |live| {
            live.data == body
        })
        .await?;
    }
    let ds_api: Api<DaemonSet> = Api::namespaced(ctx.client.clone(), ns);
    for ds in &plan.create_daemonsets {
        ensure(&ds_api, m, ds, uid, write::metadata_and_spec).await?;
    }
    for ds in &plan.daemonsets {
        // Each carries the resourceVersion of the DaemonSet the decision checked: one changed
        // or deleted since is refused by the API server and never overwritten or recreated
        // here; the next pass decides again from what is there.
        ensure(&ds_api, m, ds, uid, write::metadata_and_spec).await?;
    }
    Ok(())
}

/// Activates Nodes, lifts the gates of checked pods and creates the GarageNodes standing
/// for scheduled pool pods.
async fn start_members(
    o: &Observed,
    s: &Settings,
    plan: &PoolPlan,
    notes: &mut Vec<Note>,
    ctx: &Context,
) -> Result<(), Error> {
    let m = &ctx.metrics;
    let ns = s.namespace.as_str();
    let uid = s.uid.as_str();
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    for (node, key) in &plan.activate {
        patch_node(
            &nodes,
            ctx,
            node,
            json!({"metadata": {"labels": {key: "true"}}}),
        )
        .await?;
        m.step("pool", "activate");
        notes.push(Note::normal(
            reason::REASON_RECONCILE_SUCCESS,
            "ActivateNode",
            format!("Node {node} activated for a node-local pool; its pool pod waits behind the activation gate"),
        ));
    }
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), ns);
    for r in &plan.release {
        if let Some(pod) = o.pods.iter().find(|p| p.name_any() == r.pod) {
            release(&pods, ctx, pod, r).await?;
            notes.push(Note::normal(
                reason::REASON_RECONCILE_SUCCESS,
                "ReleaseGate",
                format!("pool pod {} may start on Node {}", r.pod, r.node),
            ));
        }
    }
    let gn_api: Api<GarageNode> = Api::namespaced(ctx.client.clone(), ns);
    if !plan.create_members.is_empty()
        && crate::controller::cluster::act::still_current(&ctx.client, ns, &s.name, uid).await?
    {
        for gn in &plan.create_members {
            ensure(&gn_api, m, gn, uid, write::metadata_and_spec).await?;
            notes.push(Note::normal(
                reason::REASON_RECONCILE_SUCCESS,
                "CreateMember",
                format!(
                    "pool pod scheduled on Node {}: GarageNode {} stands for it",
                    gn.spec.kubernetes_node_name.clone().unwrap_or_default(),
                    gn.name_any()
                ),
            ));
        }
    }
    Ok(())
}

/// Records identities on Nodes, deactivates Nodes that leave, and deletes removed pools'
/// DaemonSets.
async fn finish(
    s: &Settings,
    plan: &PoolPlan,
    notes: &mut Vec<Note>,
    ctx: &Context,
) -> Result<(), Error> {
    let m = &ctx.metrics;
    let ns = s.namespace.as_str();
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    for (node, key, id) in &plan.record_ids {
        patch_node(
            &nodes,
            ctx,
            node,
            json!({"metadata": {"annotations": {key: id}}}),
        )
        .await?;
        m.step("pool", "record_identity");
    }
    for (node, key) in &plan.deactivate {
        patch_node(
            &nodes,
            ctx,
            node,
            json!({"metadata": {"labels": {key: null}}}),
        )
        .await?;
        m.step("pool", "deactivate");
    }
    let ds_api: Api<DaemonSet> = Api::namespaced(ctx.client.clone(), ns);
    for name in &plan.delete_daemonsets {
        write::delete_if_present(&ds_api, m, name, &DeleteParams::background()).await?;
        notes.push(Note::normal(
            reason::REASON_RECONCILE_SUCCESS,
            "DeletePool",
            format!(
                "DaemonSet {name} of a removed pool deleted; its HostPath data stays on the Nodes"
            ),
        ));
    }
    Ok(())
}

async fn patch_node(
    nodes: &Api<Node>,
    ctx: &Context,
    node: &str,
    body: serde_json::Value,
) -> Result<(), Error> {
    ctx.metrics.wrote();
    nodes
        .patch(node, &PatchParams::default(), &Patch::Merge(body))
        .await?;
    Ok(())
}

/// Lifts the activation gate of exactly the pod incarnation that was checked (its UID and
/// resourceVersion are preconditions) and labels it with its Node and GarageNode.
async fn release(pods: &Api<Pod>, ctx: &Context, pod: &Pod, r: &Release) -> Result<(), Error> {
    let gates: Vec<_> = pod
        .spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|g| g.name != SCHEDULING_GATE_NODE_LOCAL_POOL_ACTIVATION)
        .collect();
    let escape = |k: &str| k.replace('~', "~0").replace('/', "~1");
    let mut ops = vec![
        json!({"op": "test", "path": "/metadata/uid", "value": pod.metadata.uid}),
        json!({"op": "test", "path": "/metadata/resourceVersion", "value": pod.resource_version()}),
        json!({"op": "replace", "path": "/spec/schedulingGates", "value": gates}),
    ];
    if pod.metadata.annotations.is_none() {
        ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": {}}));
    }
    ops.push(json!({"op": "add", "path": format!("/metadata/labels/{}", escape(label::LABEL_KUBERNETES_NODE)), "value": node_label_value(&r.node)}));
    ops.push(json!({"op": "add", "path": format!("/metadata/labels/{}", escape(label::LABEL_NODE)), "value": r.member}));
    ops.push(json!({"op": "add", "path": format!("/metadata/annotations/{}", escape(label::LABEL_KUBERNETES_NODE)), "value": r.node}));
    let patch: json_patch::Patch = serde_json::from_value(serde_json::Value::Array(ops))
        .map_err(|e| Error::Encoding(format!("building the gate release patch: {e}")))?;
    ctx.metrics.wrote();
    match pods
        .patch(&r.pod, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
    {
        Ok(_) => {
            ctx.metrics.step("pool", "release_gate");
            Ok(())
        }
        // The pod changed since it was checked: the next pass checks it again.
        Err(kube::Error::Api(e)) if e.code == 422 || e.code == 409 || e.code == 404 => {
            Err(Error::Stale(format!("pod {}", r.pod)))
        }
        Err(e) => Err(e.into()),
    }
}
