//! Carries out a pass's cycle step ([`decide::cluster::cycle`]): the sibling is created before
//! the source's status names it, the source is asked to drain, and the sibling is promoted
//! before its source is deleted, so that the source's deletion never takes the sibling with
//! it (its controller reference is the source's until then).

use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Api, ResourceExt};
use serde_json::{Map, Value, json};
use shared_types::conditions::node::CONDITION_CYCLING;
use shared_types::conditions::reason;
use shared_types::garage_node::GarageNode;

use crate::controller::write;
use crate::controller::{Context, Error};
use decide::cluster::cycle::{Cycle, Promotion, SourceStatus};
use decide::cluster::observed::Observed;
use decide::conditions;
use decide::note::Note;

/// Writes `cycle`'s step in namespace `ns`, noting what it did in `notes`.
pub async fn act(
    ns: &str,
    o: &Observed,
    cycle: &Cycle,
    notes: &mut Vec<Note>,
    ctx: &Context,
) -> Result<(), Error> {
    let api: Api<GarageNode> = Api::namespaced(ctx.client.clone(), ns);
    let m = &ctx.metrics;
    if let Some(sibling) = &cycle.create {
        m.wrote();
        match api.create(&PostParams::default(), sibling).await {
            Ok(_) => {
                m.step("cycle", "create_sibling");
                notes.push(Note::normal(
                    reason::REASON_CYCLE_PROVISIONING,
                    "CreateSibling",
                    format!("cycle: sibling {} created", sibling.name_any()),
                ));
            }
            // Made by a pass whose status write did not land: the next pass adopts it.
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    for st in &cycle.status {
        if !write_status(&api, o, st, ctx).await? {
            // The node changed since this pass read it: the next pass decides again.
            return Ok(());
        }
    }
    if let Some(name) = &cycle.drain {
        super::act::request_drain(&api, name, m).await?;
        notes.push(Note::normal(
            reason::REASON_DRAINING,
            "RequestDrain",
            format!("cycle: {name}'s sibling is in a settled layout; {name} asked to drain"),
        ));
    }
    // The decision deletes a source only with its sibling promoted, now or by an earlier
    // pass; a promotion that fails stops here, before the deletion.
    if let Some(p) = &cycle.promote {
        promote(&api, p, ctx).await?;
        notes.push(Note::normal(
            reason::REASON_DRAINING,
            "PromoteSibling",
            format!("cycle: {} takes its source's place", p.sibling),
        ));
    }
    if let Some((name, uid)) = &cycle.delete {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::background()
        };
        write::delete_if_present(&api, m, name, &params).await?;
        m.step("cycle", "delete_source");
        notes.push(Note::normal(
            reason::REASON_NODE_DRAIN_PREPARED,
            "DeleteNode",
            format!(
                "cycle: {name} is drained with a complete proof covering its sibling; deleting it"
            ),
        ));
    }
    Ok(())
}

/// The cycle fields of one source and its `Cycling` condition, merged into the conditions it
/// held when this pass read it. A merge patch of those fields alone, conditioned on that
/// resourceVersion so that a condition the node controller wrote since is never undone;
/// `false` when the node changed (409) or went (404) meanwhile.
async fn write_status(
    api: &Api<GarageNode>,
    o: &Observed,
    st: &SourceStatus,
    ctx: &Context,
) -> Result<bool, Error> {
    let Some(node) = o
        .generated
        .values()
        .chain(&o.retiring)
        .chain(&o.user_nodes)
        .find(|n| n.name_any() == st.node)
    else {
        return Ok(false);
    };
    let current = node.status.as_ref().and_then(|s| s.conditions.as_deref());
    let desired: Vec<conditions::Desired> = st.condition.iter().cloned().collect();
    let merged = conditions::merge(
        current,
        &desired,
        &[CONDITION_CYCLING],
        node.metadata.generation,
    );
    let body = json!({
        "metadata": {"resourceVersion": node.metadata.resource_version},
        "status": {
            "cyclePhase": st.cycle_phase,
            "cycleSiblingName": st.cycle_sibling_name,
            "cycleSiblingNodeId": st.cycle_sibling_node_id,
            "conditions": merged,
        },
    });
    ctx.metrics.wrote();
    match api
        .patch_status(&st.node, &PatchParams::default(), &Patch::Merge(body))
        .await
    {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Promotes the sibling: its labels and owner references, conditioned on the resourceVersion
/// the decision read.
async fn promote(api: &Api<GarageNode>, p: &Promotion, ctx: &Context) -> Result<(), Error> {
    let labels: Map<String, Value> = p
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().map_or(Value::Null, Value::String)))
        .collect();
    let mut metadata = json!({
        "labels": labels,
        "ownerReferences": p.owner_references,
    });
    if p.drop_cycle_request {
        metadata["annotations"] = json!({ shared_types::keys::annotation::ANNOTATION_CYCLE: null });
    }
    if let Some(rv) = &p.resource_version {
        metadata["resourceVersion"] = json!(rv);
    }
    ctx.metrics.wrote();
    api.patch(
        &p.sibling,
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": metadata })),
    )
    .await?;
    ctx.metrics.step("cycle", "promote_sibling");
    Ok(())
}
