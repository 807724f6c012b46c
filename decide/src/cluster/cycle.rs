//! The graceful cycle of a storage GarageNode (`garage.rajsingh.info/cycle: "true"`): an
//! add-before-remove replacement. A sibling with a fresh identity and the same volumes joins
//! first; only then does the source leave, through the ordinary prepared drain; and only once
//! that drain's proof is complete and names the sibling among its verification nodes is the
//! sibling promoted into the source's place and the source deleted.
//!
//! Progress is the source's status (`cyclePhase`, `cycleSiblingName`, `cycleSiblingNodeId`)
//! and the sibling's existence, so a restart resumes where the last pass stopped. A sibling is
//! recognised by its `cycle-sibling` label and its source as controller, which is also the
//! shape of a cycle the Go operator left half done: such a cycle is resumed, not restarted.
//! One cycle runs per cluster at a time. Decided purely; the cluster controller creates the
//! sibling, writes the source's status, asks the drain, promotes and deletes.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use shared_types::conditions::node::CONDITION_CYCLING;
use shared_types::conditions::reason;
use shared_types::drain as contract;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::{CyclePhase, GarageNode};
use shared_types::keys::annotation::{ANNOTATION_CYCLE, ANNOTATION_DRAIN};
use shared_types::keys::label;

use super::members::MemberView;
use super::observed::{GarageRead, Observed};
use super::removal::drain_requested;
use crate::conditions::Desired;
use crate::desired::{DesiredError, Settings, controller_ref, labels, nodes};
use crate::names;

/// What the cluster does about cycles this pass.
#[derive(Debug, Clone, Default)]
pub struct Cycle {
    /// The sibling to create, before the source's status names it.
    pub create: Option<GarageNode>,
    /// Status writes on cycling sources (only those that change something).
    pub status: Vec<SourceStatus>,
    /// A source to ask to drain (`drain=true`).
    pub drain: Option<String>,
    /// The sibling to promote into its source's place.
    pub promote: Option<Promotion>,
    /// `(name, uid)` of the source to delete once its sibling is promoted.
    pub delete: Option<(String, String)>,
    /// A cycle is in progress or waits: look again soon.
    pub busy: bool,
}

/// The cycle fields of one source's status and its `Cycling` condition.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceStatus {
    /// The source GarageNode.
    pub node: String,
    /// `cyclePhase` (`None` clears it).
    pub cycle_phase: Option<CyclePhase>,
    /// `cycleSiblingName`.
    pub cycle_sibling_name: Option<String>,
    /// `cycleSiblingNodeId`.
    pub cycle_sibling_node_id: Option<String>,
    /// `Cycling` (`None` removes it).
    pub condition: Option<Desired>,
}

/// The metadata a promoted sibling gets.
#[derive(Debug, Clone, PartialEq)]
pub struct Promotion {
    /// The sibling GarageNode.
    pub sibling: String,
    /// The resourceVersion the promotion was decided on: a sibling changed since is read
    /// again by the next pass.
    pub resource_version: Option<String>,
    /// Labels to set (`Some`) or remove (`None`).
    pub labels: BTreeMap<String, Option<String>>,
    /// The owner references it keeps: its source's goes (deleting the source must not take
    /// the sibling with it); an Auto sibling gets the cluster as controller.
    pub owner_references: Vec<OwnerReference>,
    /// The sibling carries a `cycle` request of its own, set while it could not be honoured:
    /// removed, so the promoted node does not start a second cycle at once.
    pub drop_cycle_request: bool,
}

/// The name of `source`'s sibling: `<source>-cycle`, bounded so that its pod name still fits
/// a label value.
pub fn sibling_name(source: &str) -> String {
    names::bounded(&format!("{source}{}", nodes::CYCLE_SUFFIX), 61)
}

/// True when `node` asks for a cycle or has one in progress.
pub fn in_cycle(node: &GarageNode) -> bool {
    requested(node) || phase(node).is_some()
}

fn requested(node: &GarageNode) -> bool {
    node.annotations().get(ANNOTATION_CYCLE).map(String::as_str) == Some("true")
}

fn phase(node: &GarageNode) -> Option<CyclePhase> {
    node.status.as_ref().and_then(|s| s.cycle_phase)
}

/// True when `node` is a cycle's sibling not promoted yet.
pub fn is_sibling(node: &GarageNode) -> bool {
    node.labels()
        .get(label::LABEL_CYCLE_SIBLING)
        .map(String::as_str)
        == Some("true")
}

/// What one pass reads a cycle from.
struct Facts<'a> {
    o: &'a Observed,
    s: &'a Settings,
    views: &'a [MemberView],
    read: Option<&'a GarageRead>,
    nodes: Vec<&'a GarageNode>,
}

/// The cycle decision of this pass: the cycle in progress (or the first requested one, by
/// name) advances by one step; every other requested cycle waits for it.
pub fn decide(
    o: &Observed,
    s: &Settings,
    views: &[MemberView],
    read: Option<&GarageRead>,
) -> Result<Cycle, DesiredError> {
    let f = Facts {
        o,
        s,
        views,
        read,
        nodes: o
            .generated
            .values()
            .chain(&o.retiring)
            .chain(&o.user_nodes)
            .collect(),
    };
    // A deleting source still counts while it drains: its sibling must be let go of before
    // the source is gone, or the garbage collector would take it too.
    let mut sources: Vec<(&GarageNode, bool)> = o
        .generated
        .values()
        .chain(&o.retiring)
        .map(|n| (n, true))
        .chain(o.user_nodes.iter().map(|n| (n, false)))
        .filter(|(n, _)| {
            in_cycle(n)
                && (n.metadata.deletion_timestamp.is_none()
                    || phase(n) == Some(CyclePhase::Draining))
        })
        .collect();
    sources.sort_by_key(|(n, _)| (phase(n).is_none(), n.name_any()));
    let mut cycle = Cycle::default();
    let mut running: Option<String> = None;
    for (n, generated) in sources {
        cycle.busy = true;
        if let Some(first) = &running {
            let message = format!(
                "waits for the cycle of {first} to finish: one member is replaced at a time"
            );
            push_status(
                &mut cycle,
                n,
                report(n).blocked(reason::REASON_CYCLE_BLOCKED, message),
            );
            continue;
        }
        running = Some(n.name_any());
        let (step, status) = source(&f, n, generated)?;
        push_status(&mut cycle, n, status);
        cycle.create = step.create;
        cycle.drain = step.drain;
        cycle.promote = step.promote;
        cycle.delete = step.delete;
    }
    Ok(cycle)
}

/// The writes of one source's step, beside its status.
#[derive(Default)]
struct Step {
    create: Option<GarageNode>,
    drain: Option<String>,
    promote: Option<Promotion>,
    delete: Option<(String, String)>,
}

/// One source's step and the status it reports.
fn source(
    f: &Facts,
    n: &GarageNode,
    generated: bool,
) -> Result<(Step, SourceStatus), DesiredError> {
    let r = report(n);
    let name = r
        .cycle_sibling_name
        .clone()
        .unwrap_or_else(|| sibling_name(&n.name_any()));
    let sibling = f.nodes.iter().copied().find(|m| m.name_any() == name);
    let draining = phase(n) == Some(CyclePhase::Draining);
    let c = f.o.cluster.as_ref();
    let slot = generated.then(|| nodes::slot_of(&f.s.name, n)).flatten();
    let owned = |sib: &GarageNode| owned_sibling(n, sib, c, slot);
    // A source deleted while it drains only lets go of its sibling: nothing else about the
    // cycle matters any more, and no re-check may keep the sibling tied to it.
    if draining && n.metadata.deletion_timestamp.is_some() {
        return draining_step(f, n, sibling.filter(|s| owned(s).is_ok()), generated, r);
    }
    // Removing the request cancels a cycle until its source drains (admission refuses the
    // removal after that; a drain already asked for runs to its end regardless).
    if !(requested(n) || draining && drain_requested(n)) {
        return Ok((
            Step::default(),
            cancelled(sibling.filter(|s| owned(s).is_ok()), r),
        ));
    }
    if let Err(why) = eligible(n, c) {
        return Ok((
            Step::default(),
            r.blocked(reason::REASON_CYCLE_BLOCKED, why),
        ));
    }
    if let Some(sib) = sibling
        && let Err(why) = owned(sib)
    {
        return Ok((
            Step::default(),
            r.blocked(reason::REASON_CYCLE_BLOCKED, why),
        ));
    }
    if draining {
        return draining_step(f, n, sibling, generated, r);
    }
    match sibling {
        None if phase(n).is_some() => {
            let why = format!(
                "status.cyclePhase is {:?} but its sibling {name} does not exist; it may already have held a layout role, so no other identity is created. Remove the {ANNOTATION_CYCLE} annotation to clear the cycle, then request it again",
                phase(n)
            );
            Ok((
                Step::default(),
                r.blocked(reason::REASON_CYCLE_BLOCKED, why),
            ))
        }
        None => start(f, n, generated, name, r),
        Some(sib) => Ok(joining(f, n, sib, r)),
    }
}

/// The first step: the sibling is created, once the source is a proven, committed member and
/// no other transaction holds the layout.
fn start(
    f: &Facts,
    n: &GarageNode,
    generated: bool,
    name: String,
    r: SourceStatus,
) -> Result<(Step, SourceStatus), DesiredError> {
    if let Some(why) = transaction(f.o) {
        return Ok((
            Step::default(),
            r.blocked(reason::REASON_CYCLE_BLOCKED, why),
        ));
    }
    let view = f.views.iter().find(|v| v.member.name == n.name_any());
    let committed = view
        .and_then(|v| v.member.node_id.as_ref().filter(|_| v.ready))
        .is_some_and(|id| in_layout(f.read, id));
    if !committed {
        let why = "the source must be Ready, its Garage identity proven from its running pod and committed in the layout before a sibling is made; nothing was created".to_owned();
        return Ok((
            Step::default(),
            r.blocked(reason::REASON_CYCLE_BLOCKED, why),
        ));
    }
    let sibling = sibling_for(f, n, generated, &name)?;
    let message = format!(
        "sibling {name} created with a fresh identity and the same volumes; waiting for its pod and identity"
    );
    let status = r
        .at(CyclePhase::Provisioning, Some(name), None)
        .active(reason::REASON_CYCLE_PROVISIONING, message);
    Ok((
        Step {
            create: Some(sibling),
            ..Step::default()
        },
        status,
    ))
}

/// Provisioning and Syncing: the sibling's pod and identity, then its committed role in a
/// settled layout; then the source is asked to drain.
fn joining(f: &Facts, n: &GarageNode, sib: &GarageNode, r: SourceStatus) -> (Step, SourceStatus) {
    let name = sib.name_any();
    let view = f.views.iter().find(|v| v.member.name == name);
    let Some(id) = view.and_then(|v| v.member.node_id.clone().filter(|_| v.ready)) else {
        let message = format!(
            "waiting for sibling {name}'s pod to be Ready and its Garage identity to be read from it"
        );
        return (
            Step::default(),
            r.at(CyclePhase::Provisioning, Some(name), None)
                .active(reason::REASON_CYCLE_PROVISIONING, message),
        );
    };
    if let Some(recorded) = r.cycle_sibling_node_id.as_deref()
        && recorded != id.as_str()
    {
        let why = format!(
            "sibling {name} changed its Garage identity from {recorded} to {id}; an ambiguous replacement is not advanced. Remove the {ANNOTATION_CYCLE} annotation, drain and delete {name}, then request the cycle again"
        );
        return (
            Step::default(),
            r.blocked(reason::REASON_CYCLE_BLOCKED, why),
        );
    }
    let syncing = r.at(
        CyclePhase::Syncing,
        Some(name.clone()),
        Some(id.to_string()),
    );
    let up = f
        .read
        .is_some_and(|read| read.status.nodes.iter().any(|m| m.id == id && m.is_up));
    let settled = f
        .read
        .is_some_and(|read| read.history.is_settled() && !read.layout.has_staged_changes());
    if !(in_layout(f.read, &id) && up && settled) {
        let message = format!(
            "sibling {name} ({id}) is Ready; waiting for its role to be committed, connected and the layout history settled"
        );
        return (
            Step::default(),
            syncing.active(reason::REASON_CYCLE_SYNCING, message),
        );
    }
    if let Some(why) = transaction(f.o) {
        let message = format!("sibling {name} ({id}) is in the layout; the source's drain {why}");
        return (
            Step::default(),
            syncing.active(reason::REASON_CYCLE_SYNCING, message),
        );
    }
    let message = format!(
        "sibling {name} ({id}) is in a settled layout; the source drains through the prepared drain, with {name} among the nodes its proof covers"
    );
    let draining = syncing
        .at(CyclePhase::Draining, Some(name), Some(id.to_string()))
        .active(reason::REASON_DRAINING, message);
    (
        Step {
            drain: Some(n.name_any()),
            ..Step::default()
        },
        draining,
    )
}

/// Draining: the drain is (re)asked for; once its proof is complete for exactly this source
/// and covers the sibling, and the sibling still runs that identity, the sibling is promoted
/// and the source deleted.
fn draining_step(
    f: &Facts,
    n: &GarageNode,
    sibling: Option<&GarageNode>,
    generated: bool,
    r: SourceStatus,
) -> Result<(Step, SourceStatus), DesiredError> {
    let mut step = Step {
        drain: (!drain_requested(n)).then(|| n.name_any()),
        ..Step::default()
    };
    if n.metadata.deletion_timestamp.is_some() {
        // Deleted by hand (admission allows that once the proof is complete): the sibling is
        // a live member and must not go with its controller, so it is let go of whatever the
        // proof says about it. Promotion only changes its labels and owners.
        step.drain = None;
        if let Some(sib) = sibling.filter(|sib| is_sibling(sib)) {
            step.promote = Some(promotion(f, n, sib, generated)?);
        }
        let message =
            "this node is being deleted; its sibling, if any, stays as a member of its own"
                .to_owned();
        return Ok((step, r.active(reason::REASON_DRAINING, message)));
    }
    let recorded = r.cycle_sibling_node_id.clone().unwrap_or_default();
    let Some(sib) = sibling else {
        let why = format!(
            "the source drains but its sibling {} is gone; nothing is promoted or deleted. Let the drain finish, then delete this node by hand once DrainPrepared is True",
            r.cycle_sibling_name.clone().unwrap_or_default()
        );
        return Ok((step, r.blocked(reason::REASON_CYCLE_BLOCKED, why)));
    };
    let name = sib.name_any();
    let record =
        f.o.cluster
            .status
            .as_ref()
            .and_then(|s| s.storage_drain.as_ref());
    let source_id = n
        .status
        .as_ref()
        .and_then(|s| s.node_id.clone())
        .unwrap_or_default();
    let completed = record.is_some_and(|rec| {
        contract::removal_proven(
            rec,
            &n.namespace().unwrap_or_default(),
            &n.name_any(),
            n.metadata.uid.as_deref().unwrap_or_default(),
            &source_id,
        )
    });
    if !completed {
        let message = format!(
            "the source drains through the prepared drain; its proof must cover sibling {name} ({recorded}) before {name} takes its place"
        );
        return Ok((step, r.active(reason::REASON_DRAINING, message)));
    }
    let covered = record
        .and_then(|rec| rec.verification_node_ids.as_ref())
        .is_some_and(|ids| ids.contains(&recorded));
    if !covered {
        let why = format!(
            "the drain proof is complete but does not name sibling {name} ({recorded}) among its verification nodes; nothing is promoted or deleted"
        );
        return Ok((step, r.blocked(reason::REASON_CYCLE_BLOCKED, why)));
    }
    let runs = f.views.iter().any(|v| {
        v.member.name == name
            && v.ready
            && v.member
                .node_id
                .as_ref()
                .is_some_and(|id| id.as_str() == recorded)
    });
    if !runs {
        let why = format!(
            "the drain proof names sibling {name} ({recorded}), but its pod is not Ready with that identity now; the source is kept until it is"
        );
        return Ok((step, r.blocked(reason::REASON_CYCLE_BLOCKED, why)));
    }
    // A sibling promoted already (by a pass whose deletion did not land) is not written again.
    if is_sibling(sib) {
        step.promote = Some(promotion(f, n, sib, generated)?);
    }
    step.delete = Some((n.name_any(), n.metadata.uid.clone().unwrap_or_default()));
    let message = format!(
        "drained with a complete proof covering {name}; {name} takes this node's place and this node is deleted"
    );
    Ok((step, r.active(reason::REASON_DRAINING, message)))
}

/// A cycle whose request was removed before its source drained; `sibling` is its own.
fn cancelled(sibling: Option<&GarageNode>, r: SourceStatus) -> SourceStatus {
    match sibling {
        Some(sib) => {
            let why = format!(
                "the {ANNOTATION_CYCLE} annotation was removed before the source drained, but sibling {} exists and may hold a layout role: drain it (garage.rajsingh.info/drain=true) and delete it once DrainPrepared is True, then the cancellation clears",
                sib.name_any()
            );
            SourceStatus {
                condition: Some(Desired {
                    type_: CONDITION_CYCLING,
                    status: false,
                    reason: reason::REASON_CANCELLATION_BLOCKED,
                    message: why,
                }),
                ..r
            }
        }
        None => SourceStatus {
            node: r.node,
            cycle_phase: None,
            cycle_sibling_name: None,
            cycle_sibling_node_id: None,
            condition: None,
        },
    }
}

/// Why `n` cannot be replaced by a clone, if it cannot. Admission checks the profile and the
/// parent's network when the request is made (GN-CY0, GN-CY2); this holds for a cycle
/// admitted elsewhere (the Go operator's), bypassing it, or whose parent changed since.
fn eligible(n: &GarageNode, c: &GarageCluster) -> Result<(), String> {
    if is_sibling(n) {
        return Err("a cycle's sibling cannot be cycled before it is promoted".into());
    }
    if drain_requested(n) && phase(n) != Some(CyclePhase::Draining) {
        // Drained outside the cycle, the source's proof need not cover the sibling and the
        // cycle could never promote it.
        return Err(format!(
            "{ANNOTATION_DRAIN}=true was set outside the cycle; remove it and the cycle asks for the drain itself once its sibling is in the layout, or remove {ANNOTATION_CYCLE} to drain this node alone"
        ));
    }
    if n.spec
        .capacity
        .as_ref()
        .and_then(|q| crate::desired::quantity::to_bytes(&q.0))
        == Some(0)
    {
        return Err("only a node with a positive capacity can be cycled".into());
    }
    if let Some(field) = shared_parent_address(c) {
        return Err(format!(
            "the GarageCluster's {field} would be shared by the node and its sibling; add a replacement GarageNode by hand and drain this one"
        ));
    }
    if crate::suspension::of_node(n, None).is_some() {
        return Err(
            "the node is suspended; the cycle resumes once the suspension is lifted".into(),
        );
    }
    if nodes::shape(n) != Ok(nodes::NodeShape::Managed) {
        return Err("only a StatefulSet-backed storage GarageNode can be cycled".into());
    }
    if n.spec
        .network
        .as_ref()
        .and_then(|net| net.rpc_public_addr.as_deref())
        .is_some_and(|a| !a.trim().is_empty())
    {
        return Err("spec.network.rpcPublicAddr belongs to this identity and cannot be cloned; add a replacement GarageNode by hand and drain this one".into());
    }
    let storage = n.spec.storage.as_ref();
    let mut volumes = vec![
        (
            "storage.metadata".to_owned(),
            storage.and_then(|st| st.metadata.as_ref()),
        ),
        (
            "storage.data".to_owned(),
            storage.and_then(|st| st.data.as_ref()),
        ),
    ];
    for (i, p) in storage
        .and_then(|st| st.data_paths.as_ref())
        .into_iter()
        .flatten()
        .enumerate()
    {
        volumes.push((format!("storage.dataPaths[{i}]"), Some(p)));
    }
    if let Some((field, _)) = volumes
        .iter()
        .find(|(_, v)| v.is_some_and(|v| v.existing_claim.is_some()))
    {
        return Err(format!(
            "spec.{field}.existingClaim is a claim the user manages and is never cloned; add a replacement GarageNode by hand and drain this one"
        ));
    }
    Ok(())
}

/// The parent setting that would give the source and its sibling one address, if any.
fn shared_parent_address(c: &GarageCluster) -> Option<&'static str> {
    let set = |v: Option<&String>| v.is_some_and(|a| !a.trim().is_empty());
    let spec = &c.spec;
    if set(spec
        .network
        .as_ref()
        .and_then(|n| n.rpc_public_addr.as_ref()))
    {
        Some("spec.network.rpcPublicAddr")
    } else if set(spec
        .storage
        .as_ref()
        .and_then(|st| st.rpc_public_addr.as_ref()))
    {
        Some("spec.storage.rpcPublicAddr")
    } else if set(spec
        .gateway
        .as_ref()
        .and_then(|g| g.rpc_public_addr.as_ref()))
    {
        Some("spec.gateway.rpcPublicAddr")
    } else if spec.public_endpoint.is_some() {
        Some("spec.publicEndpoint")
    } else {
        None
    }
}

/// `sib` is `n`'s sibling: labelled as one, with `n` as its controller; or, while `n` drains,
/// already promoted by an earlier pass whose deletion of `n` did not land: then exactly the
/// shape promotion gives it (the cluster as controller and `n`'s slot for an Auto source, no
/// controller for a user-written one).
fn owned_sibling(
    n: &GarageNode,
    sib: &GarageNode,
    c: &GarageCluster,
    slot: Option<u32>,
) -> Result<(), String> {
    let uid = n.metadata.uid.as_deref().unwrap_or_default();
    if is_sibling(sib) && crate::desired::is_controlled_by(sib, uid) {
        return Ok(());
    }
    let cluster_uid = c.metadata.uid.as_deref().unwrap_or_default();
    let promoted = match slot {
        Some(ordinal) => {
            nodes::is_generated_by(sib, cluster_uid)
                && nodes::slot_of(&c.name_any(), sib) == Some(ordinal)
        }
        None => !sib
            .owner_references()
            .iter()
            .any(|o| o.controller == Some(true)),
    };
    if !is_sibling(sib) && phase(n) == Some(CyclePhase::Draining) && promoted {
        return Ok(());
    }
    Err(format!(
        "GarageNode {} exists but is not this node's cycle sibling (label {} and this node as controller); rename or remove it, nothing was created",
        sib.name_any(),
        label::LABEL_CYCLE_SIBLING
    ))
}

/// Why the layout is not free for a new replacement: a drain or a rollout is recorded.
fn transaction(o: &Observed) -> Option<String> {
    let st = o.cluster.status.as_ref()?;
    if let Some(actor) = st.storage_drain.as_ref().and_then(|d| d.actor.as_ref()) {
        return Some(format!(
            "waits for the drain of {} recorded on the cluster to finish",
            actor.name.clone().unwrap_or_default()
        ));
    }
    st.storage_rollout
        .as_ref()
        .map(|_| "waits for the storage rollout recorded on the cluster to finish".to_owned())
}

fn in_layout(read: Option<&GarageRead>, id: &garage_api_types::NodeId) -> bool {
    read.is_some_and(|r| {
        r.layout
            .roles
            .iter()
            .any(|role| role.id == *id && role.capacity.is_some_and(|c| c > 0))
    })
}

/// The sibling of `n`: an Auto source's slot rendered under the sibling's name, or a clone of
/// a user-written source's spec without its node ID; labelled as a sibling (without the
/// managed-by label, so Auto slot management leaves it alone) and controlled by `n`.
fn sibling_for(
    f: &Facts,
    n: &GarageNode,
    generated: bool,
    name: &str,
) -> Result<GarageNode, DesiredError> {
    let slot = generated.then(|| nodes::slot_of(&f.s.name, n)).flatten();
    let mut sib = match slot {
        Some(ordinal) => nodes::auto_storage_node_as(f.o.cluster.as_ref(), f.s, ordinal, name)?,
        None => {
            let mut spec = n.spec.clone();
            spec.node_id = None;
            let mut labels = BTreeMap::new();
            if let Some(c) = n.labels().get(label::LABEL_CLUSTER) {
                labels.insert(label::LABEL_CLUSTER.to_owned(), c.clone());
            }
            GarageNode {
                metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                    name: Some(name.to_owned()),
                    namespace: n.namespace(),
                    labels: Some(labels),
                    ..Default::default()
                },
                spec,
                status: None,
            }
        }
    };
    let labels = sib.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.remove(label::LABEL_APP_MANAGED_BY);
    labels.insert(label::LABEL_CYCLE_SIBLING.to_owned(), "true".to_owned());
    sib.metadata.owner_references = Some(vec![controller_ref(n)?]);
    Ok(sib)
}

/// The sibling's metadata once promoted: no sibling label, no owner reference to the source;
/// an Auto sibling takes the slot's labels and the cluster as controller.
fn promotion(
    f: &Facts,
    n: &GarageNode,
    sib: &GarageNode,
    generated: bool,
) -> Result<Promotion, DesiredError> {
    let source_uid = n.metadata.uid.clone().unwrap_or_default();
    let mut owners: Vec<OwnerReference> = sib
        .owner_references()
        .iter()
        .filter(|o| o.uid != source_uid)
        .cloned()
        .collect();
    let mut set: BTreeMap<String, Option<String>> =
        BTreeMap::from([(label::LABEL_CYCLE_SIBLING.to_owned(), None)]);
    if let Some(ordinal) = generated.then(|| nodes::slot_of(&f.s.name, n)).flatten() {
        let slot = names::auto_storage_node(&f.s.name, ordinal);
        for (k, v) in labels::generated_node_labels(&f.s.name, &slot) {
            set.insert(k, Some(v));
        }
        owners.retain(|o| o.controller != Some(true));
        owners.push(controller_ref(f.o.cluster.as_ref())?);
    }
    Ok(Promotion {
        sibling: sib.name_any(),
        resource_version: sib.metadata.resource_version.clone(),
        labels: set,
        owner_references: owners,
        drop_cycle_request: sib.annotations().contains_key(ANNOTATION_CYCLE),
    })
}

/// The cycle fields `n`'s status holds now, with its `Cycling` condition.
fn report(n: &GarageNode) -> SourceStatus {
    let st = n.status.clone().unwrap_or_default();
    SourceStatus {
        node: n.name_any(),
        cycle_phase: st.cycle_phase,
        cycle_sibling_name: st.cycle_sibling_name,
        cycle_sibling_node_id: st.cycle_sibling_node_id,
        // Every step sets the condition it publishes; `push_status` compares with the live one.
        condition: None,
    }
}

impl SourceStatus {
    fn at(self, phase: CyclePhase, sibling: Option<String>, id: Option<String>) -> Self {
        SourceStatus {
            cycle_phase: Some(phase),
            cycle_sibling_name: sibling.or(self.cycle_sibling_name),
            cycle_sibling_node_id: id.or(self.cycle_sibling_node_id),
            ..self
        }
    }

    fn active(self, reason: &'static str, message: String) -> Self {
        self.condition(true, reason, message)
    }

    fn blocked(self, reason: &'static str, message: String) -> Self {
        self.condition(false, reason, message)
    }

    fn condition(self, status: bool, reason: &'static str, message: String) -> Self {
        SourceStatus {
            condition: Some(Desired {
                type_: CONDITION_CYCLING,
                status,
                reason,
                message,
            }),
            ..self
        }
    }
}

/// Adds `status` unless `n`'s status already says exactly that.
fn push_status(cycle: &mut Cycle, n: &GarageNode, status: SourceStatus) {
    let now = n.status.clone().unwrap_or_default();
    let current = now
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == CONDITION_CYCLING);
    let same_condition = match (&status.condition, current) {
        (None, None) => true,
        (Some(d), Some(c)) => {
            (c.status == "True") == d.status && c.reason == d.reason && c.message == d.message
        }
        _ => false,
    };
    if same_condition
        && status.cycle_phase == now.cycle_phase
        && status.cycle_sibling_name == now.cycle_sibling_name
        && status.cycle_sibling_node_id == now.cycle_sibling_node_id
    {
        return;
    }
    cycle.status.push(status);
}

#[cfg(test)]
mod tests;
