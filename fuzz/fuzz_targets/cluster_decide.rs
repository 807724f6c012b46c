//! Feeds the GarageCluster decision (`controller::cluster::decide::decide`, and `refuse` for
//! settings it cannot use) an arbitrary cluster and an arbitrary observed world.
//!
//! Input: a GarageCluster manifest as JSON (the sample manifests are the seeds), a NUL byte,
//! then bytes that describe the world (`operator_fuzz::world::World`): generated and
//! user-written GarageNodes, pods, StatefulSets, Garage's layout, staging area, history,
//! status and health, the drain and rollout records and the drain proof's reads. No world
//! bytes is the converged world. Spec fields this version refuses are removed unless the
//! world keeps them, so that the samples reach the decision.
//!
//! Invariants, beyond "no panic":
//! - the decision is a function of its input: deciding twice gives the same decision;
//! - steady state is silent: the status it publishes, fed back as the cluster's status,
//!   yields that same status again (so the next pass writes none);
//! - its conditions have distinct types, all among the types it owns (status conditions are a
//!   map keyed by type, and a type it does not own would never be removed);
//! - without a Garage read nothing touches Garage: no layout change, no drain step, no
//!   reconnect, no deletion;
//! - a layout change only adds roles, for proven member identities, at `current + 1`, with a
//!   settled history, never while a drain or rollout is recorded or acting, and what it
//!   stages on top of the staging area verifies as exactly what it intends to apply;
//! - a role removal has a recorded, hash-consistent, unfinished drain of exactly that node,
//!   whose actor still asks to drain, a live source (a lost role is never removed by the
//!   operator), a fully healthy cluster, a settled history, nothing else staged, and enough
//!   storage roles left for the replication factor;
//! - a drain record it writes is hash-consistent; a new one names a GarageNode that asks to
//!   drain and its identity, and is never started while a pod replacement is recorded; one
//!   that continues keeps its transaction, actor and node sets; completion is recorded only
//!   once the role is gone, the history is settled, the quiet window and (for a live source)
//!   Garage's block hand-over delay have passed since the removal;
//! - the record is dropped only when its actor no longer asks to drain and the role was never
//!   removed, or once it completed;
//! - a GarageNode is deleted only by a completed drain record naming exactly it;
//! - a pod is deleted only as the recorded rollout's actor's pod, and a rollout is started
//!   only on a settled, healthy cluster with no drain recorded;
//! - one pass starts at most one of: a layout change, a drain, a pod replacement;
//! - a role-only (gateway) transaction touches only capacity-less roles of gateway
//!   GarageNodes: recorded first with the gateway's identity, a role removed only for a
//!   gateway being deleted or swapped onto a live gateway's new identity in the same version,
//!   acknowledgements advanced only once no target holds a role, completion only once the
//!   roles are gone and the history has settled; capacity-less roles are planned only for
//!   gateways; one extra generated gateway is deleted at a time; a gateway's pod leaves the
//!   gateway Service only when its gateway leaves, its identity is not proven, or Garage sees
//!   an identity up at it that
//!   holds no role (or is not the recorded one, or is being retired), and enters it only when Garage sees the
//!   recorded identity up at it holding a role; stale roles are removed only once listed in the status and
//!   when no GarageNode records them;
//! - a GarageNode it creates fills a free slot below its tier's count: storage nodes the
//!   storage slots, gateway nodes (`gateway: true`) the gateway slots.

#![no_main]

use std::time::Duration;

use decide::Config;
use decide::cluster::decision::{Decision, OWNED, decide, refuse};
use decide::cluster::observed::GarageView;
use decide::conditions;
use kube::ResourceExt;
use libfuzzer_sys::fuzz_target;
use operator_fuzz::facts;
use operator_fuzz::input;
use operator_fuzz::world::{self, Built, World};
use reconciler::desired::nodes;
use reconciler::garage::{ClusterLayout, RoleChange, StagedRoleChange};
use reconciler::layout::verify_staged;
use reconciler::machine::drain::{Step, quiet_floor};
use reconciler::machine::rollout;
use reconciler::names;
use shared_types::drain::{self, hash_consistent};
use shared_types::garage_cluster::common::StorageDrainStatus;
use shared_types::garage_cluster::v1beta2::GarageCluster;

/// The most replicas admission lets a cluster have.
const MAX_REPLICAS: u32 = 50;

fn timing() -> Config {
    Config {
        resync: Duration::from_secs(60),
        short_requeue: Duration::from_secs(5),
        ..Config::default()
    }
}

/// The layout after `stage` is staged on top of what is staged already.
fn staged_on_top(
    layout: &ClusterLayout,
    stage: &[RoleChange],
    parameters: Option<&garage_admin::LayoutParameters>,
) -> ClusterLayout {
    let mut next = layout.clone();
    next.staged_role_changes
        .extend(stage.iter().cloned().map(StagedRoleChange::from));
    if let Some(p) = parameters {
        next.staged_parameters = Some(p.clone());
    }
    next
}

fn check(b: &Built, d: &Decision, t: &Config) {
    let o = &b.observed;
    let s = &b.settings;
    let status = o.cluster.status.as_ref();
    let record = status.and_then(|st| st.storage_drain.as_ref());
    let rollout_record = status.and_then(|st| st.storage_rollout.as_ref());
    let read = match &o.garage {
        GarageView::Read(r) => Some(r.as_ref()),
        GarageView::Unavailable(_) => None,
    };

    facts::owned_and_distinct(&d.conditions, OWNED);

    if read.is_none() {
        assert!(
            d.layout.is_none()
                && d.drain.is_none()
                && d.reconnect.is_empty()
                && d.rejoin.is_empty()
                && d.delete_nodes.is_empty(),
            "acted on Garage without reading it: {d:?}"
        );
    }

    let proven: Vec<_> = facts::all_nodes(o)
        .into_iter()
        .filter_map(|n| facts::proven_id(o, n))
        .collect();
    let gateway_ids: Vec<_> = facts::all_nodes(o)
        .into_iter()
        .filter(|n| nodes::is_gateway(n))
        .filter_map(|n| facts::proven_id(o, n))
        .collect();
    if let Some(change) = &d.layout {
        let read = read.expect("checked above");
        assert!(
            record.is_none() && rollout_record.is_none(),
            "a layout change beside a recorded transaction"
        );
        assert!(d.drain.is_none(), "a layout change beside a drain step");
        assert_eq!(change.version, read.layout.version + 1);
        assert!(
            read.history.is_settled(),
            "a layout change over an unsettled history"
        );
        for c in change.intended.iter().chain(&change.stage) {
            let RoleChange::Assign { id, capacity, .. } = c else {
                panic!("the layout change removes a role: {c:?}");
            };
            assert!(
                proven.contains(id),
                "a role for an identity no member proved: {c:?}"
            );
            assert!(
                capacity.is_some() || gateway_ids.contains(id),
                "a capacity-less role for a storage identity: {c:?}"
            );
        }
        assert!(change.stage.iter().all(|c| change.intended.contains(c)));
        if let Err(e) = verify_staged(
            &staged_on_top(&read.layout, &change.stage, change.parameters.as_ref()),
            &change.intended,
            change.parameters.as_ref(),
        ) {
            panic!("staging the change would not verify: {e}");
        }
    }

    let new_drain = matches!(&d.drain, Some(Step::Record(_))) && record.is_none();
    let role_only = match &d.drain {
        Some(Step::Record(r)) if record.is_none() => drain::role_only(r),
        _ => record.is_some_and(drain::role_only),
    };
    match &d.drain {
        Some(step) if role_only => check_role_only(o, read, record, step),
        Some(Step::RemoveRole { id, version }) => {
            let r = record.expect("a role removal without a record");
            let read = read.expect("checked above");
            assert!(r.completed_at.is_none() && hash_consistent(r));
            assert!(
                facts::removed_ids(r).contains(id),
                "removes a node the record does not name"
            );
            assert!(
                !facts::lost_ids(r).contains(id),
                "removes a lost role itself"
            );
            let actor = facts::drain_actor(o, r).expect("the actor exists");
            assert!(
                facts::asks_to_drain(actor),
                "the actor no longer asks to drain"
            );
            assert!(read.layout.role(id).is_some());
            assert_eq!(*version, read.layout.version + 1);
            assert!(
                facts::fully_healthy(read.health.as_ref()),
                "removal on an unhealthy cluster"
            );
            assert!(
                read.history.is_settled(),
                "removal over an unsettled history"
            );
            assert!(
                facts::staged_only_removal_of(&read.layout, id),
                "removal over foreign staged changes"
            );
            assert_eq!(s.consistency_mode, "consistent");
            let rf = usize::try_from(s.replication_factor)
                .unwrap_or(usize::MAX)
                .max(1);
            assert!(
                facts::storage_roles_except(&read.layout, id) >= rf,
                "too few roles left"
            );
        }
        Some(Step::Record(r)) => {
            assert!(hash_consistent(r), "writes an inconsistent drain record");
            match record {
                None => {
                    assert!(
                        rollout_record.is_none(),
                        "a drain starts beside a recorded rollout"
                    );
                    assert!(r.completed_at.is_none());
                    let actor =
                        facts::drain_actor(o, r).expect("a new drain names an existing node");
                    assert!(
                        facts::asks_to_drain(actor)
                            && actor.metadata.deletion_timestamp.is_none()
                            && !nodes::is_gateway(actor)
                    );
                    assert_eq!(facts::removed_ids(r), facts::recorded_ids(actor));
                }
                Some(prev) => {
                    facts::continues_drain(prev, r);
                    if r.completed_at.is_some() && prev.completed_at.is_none() {
                        let read = read.expect("checked above");
                        let quiet = t.drain_quiet.max(quiet_floor(s.rpc_timeout));
                        facts::completion_earned(
                            prev,
                            r,
                            &read.layout,
                            &read.history,
                            o.now,
                            quiet,
                        );
                    }
                }
            }
        }
        Some(Step::LaunchRepairs { record: r, nodes }) => {
            let prev = record.expect("repairs without a record");
            let read = read.expect("checked above");
            assert!(
                hash_consistent(r)
                    && r.transaction_id == prev.transaction_id
                    && r.actor == prev.actor
            );
            assert!(!nodes.is_empty());
            assert!(
                facts::removed_ids(r)
                    .iter()
                    .all(|i| read.layout.role(i).is_none()),
                "repairs before the removal"
            );
            assert!(read.history.is_settled());
        }
        Some(Step::Clear) => {
            let r = record.expect("clears nothing");
            let read = read.expect("checked above");
            // `drain=true` never drains a gateway: on one it asks for nothing.
            let requested = facts::drain_actor(o, r)
                .is_some_and(|a| facts::asks_to_drain(a) && !nodes::is_gateway(a));
            let role_left = facts::removed_ids(r)
                .iter()
                .any(|i| read.layout.role(i).is_some());
            assert!(
                !requested && (r.completed_at.is_some() || role_left),
                "dropped a drain record mid-proof"
            );
        }
        Some(other) => panic!("a drain step that does nothing is handed to act: {other:?}"),
        None => {}
    }

    for name in &d.delete_nodes {
        let r = record.expect("a deletion without a drain record");
        assert!(
            r.completed_at.is_some(),
            "{name} deleted before its drain completed"
        );
        let actor = facts::drain_actor(o, r).expect("the deleted node is the actor");
        assert_eq!(&actor.name_any(), name);
        assert!(
            o.generated
                .values()
                .any(|g| g.metadata.uid == actor.metadata.uid)
        );
    }
    check_gateways(o, s, read, d);
    for name in &d.annotate_drain {
        assert!(
            record.is_none(),
            "a drain is asked for beside a recorded one"
        );
        let ordinal = nodes::auto_ordinal(&s.name, name).expect("a slot");
        assert!(
            ordinal >= s.replicas,
            "{name} is below replicas and asked to drain"
        );
    }
    assert!(d.annotate_drain.len() <= 1);
    assert!(d.eject.is_empty() || s.manual);

    let new_rollout =
        matches!(&d.rollout, Some(rollout::Step::Record(_))) && rollout_record.is_none();
    match &d.rollout {
        Some(rollout::Step::DeletePod { name, uid }) => {
            let r = rollout_record.expect("a pod deleted without a rollout record");
            let pod = o
                .pods
                .iter()
                .find(|p| &p.name_any() == name)
                .expect("the pod exists");
            assert_eq!(pod.metadata.uid.as_deref(), Some(uid.as_str()));
            assert!(pod.metadata.deletion_timestamp.is_none());
            let owner = facts::all_nodes(o)
                .into_iter()
                .find(|n| names::node_pod(&n.name_any()) == *name)
                .expect("the pod's GarageNode");
            assert_eq!(
                owner.metadata.uid, r.garage_node_uid,
                "deletes a pod of another member than the recorded actor"
            );
        }
        Some(rollout::Step::Record(r)) => match rollout_record {
            None => {
                let read = read.expect("a rollout starts without a Garage read");
                assert!(record.is_none(), "a rollout starts beside a recorded drain");
                assert!(facts::fully_healthy(read.health.as_ref()) && read.every_view_healthy);
                assert!(read.history.is_settled());
                let pod = o
                    .pods
                    .iter()
                    .find(|p| p.metadata.uid == r.previous_pod_uid)
                    .expect("the recorded pod exists");
                assert!(pod.metadata.deletion_timestamp.is_none());
            }
            Some(prev) => facts::continues_rollout(prev, r),
        },
        Some(rollout::Step::Clear) => assert!(rollout_record.is_some()),
        Some(other) => panic!("a rollout step that does nothing is handed to act: {other:?}"),
        None => {}
    }

    // One transaction at a time: of what a pass can start, at most one.
    if record.is_none() && rollout_record.is_none() {
        let started = [d.layout.is_some(), new_drain, new_rollout];
        assert!(
            started.iter().filter(|x| **x).count() <= 1,
            "one pass starts a layout change {}, a drain {} and a rollout {}",
            started[0],
            started[1],
            started[2]
        );
    }

    for gn in &d.create_nodes {
        let name = gn.name_any();
        if let Some(ordinal) = nodes::gateway_ordinal(&s.name, &name) {
            assert!(nodes::is_gateway(gn), "a gateway name holds a storage node");
            assert!(ordinal < s.gateway_replicas && !o.gateways.contains_key(&ordinal));
            continue;
        }
        let ordinal = nodes::auto_ordinal(&s.name, &name).expect("a slot");
        assert!(!nodes::is_gateway(gn), "a storage slot holds a gateway");
        assert!(ordinal < s.replicas && !o.generated.contains_key(&ordinal));
    }
}

/// The drain step of a role-only (gateway) transaction: it only ever touches capacity-less
/// roles of gateway GarageNodes, names them in its record first, removes a role only for a
/// gateway being deleted (or swaps it onto the live gateway's new identity in the same
/// version), advances acknowledgements only once every target is out of the layout, and
/// completes only once the roles are gone and the history has settled.
fn check_role_only(
    o: &decide::cluster::observed::Observed,
    read: Option<&decide::cluster::observed::GarageRead>,
    record: Option<&StorageDrainStatus>,
    step: &Step,
) {
    let read = read.expect("checked above");
    let gateway_actor = |r: &StorageDrainStatus| {
        let actor = facts::drain_actor(o, r).expect("the actor exists");
        assert!(
            nodes::is_gateway(actor),
            "a role-only transaction for a storage node"
        );
        actor
    };
    match step {
        Step::RemoveRole { id, version }
        | Step::SwapRole {
            remove: id,
            version,
            ..
        } => {
            let r = record.expect("a role change without a record");
            assert!(r.completed_at.is_none() && hash_consistent(r));
            assert!(
                facts::role_ids(r).contains(id),
                "removes a role the record does not name"
            );
            let actor = gateway_actor(r);
            assert!(
                read.layout
                    .role(id)
                    .is_some_and(|role| role.capacity.is_none()),
                "a role-only transaction removes a storage role"
            );
            assert_eq!(*version, read.layout.version + 1);
            assert!(
                facts::staged_only_removal_of(&read.layout, id),
                "a role removal over foreign staged changes"
            );
            if let Step::SwapRole { add, .. } = step {
                let RoleChange::Assign {
                    id: new, capacity, ..
                } = add
                else {
                    panic!("a swap that adds no role: {add:?}");
                };
                assert!(capacity.is_none() && new != id, "a swap onto {add:?}");
                assert!(
                    actor.metadata.deletion_timestamp.is_none(),
                    "swaps the role of a leaving gateway"
                );
            } else {
                assert!(
                    actor.metadata.deletion_timestamp.is_some(),
                    "removes the role of a gateway that stays"
                );
            }
        }
        Step::SkipRetiredAcks { version } => {
            let r = record.expect("acknowledgements advanced without a record");
            assert!(r.completed_at.is_none() && hash_consistent(r));
            assert!(
                facts::role_ids(r)
                    .iter()
                    .all(|i| read.layout.role(i).is_none()),
                "acknowledgements advanced while a target holds its role"
            );
            assert_eq!(*version, read.layout.version);
        }
        Step::Record(r) => {
            assert!(hash_consistent(r), "writes an inconsistent drain record");
            assert!(drain::role_only(r), "a role-only record gained storage");
            match record {
                None => {
                    assert!(r.completed_at.is_none());
                    let actor = gateway_actor(r);
                    assert_eq!(
                        facts::role_ids(r),
                        facts::recorded_ids(actor),
                        "a role-only record names another identity than its gateway's"
                    );
                }
                Some(prev) => {
                    facts::continues_drain(prev, r);
                    if r.completed_at.is_some() && prev.completed_at.is_none() {
                        assert!(
                            facts::role_ids(r)
                                .iter()
                                .all(|i| read.layout.role(i).is_none()),
                            "completed with the role in place"
                        );
                        assert!(
                            read.history.is_settled(),
                            "completed over an unsettled history"
                        );
                    }
                }
            }
        }
        Step::Clear => {
            let r = record.expect("clears nothing");
            let role_left = facts::role_ids(r)
                .iter()
                .any(|i| read.layout.role(i).is_some());
            assert!(
                r.completed_at.is_some() || role_left,
                "dropped a role-only record after its role went"
            );
        }
        other => panic!("a role-only transaction hands act {other:?}"),
    }
}

/// The generated gateways it deletes, the pods it takes out of the gateway Service and the
/// stale roles it removes: one extra live gateway at a time, leaving gateways' pods only, and
/// capacity-less roles that no GarageNode records, once listed in the status.
fn check_gateways(
    o: &decide::cluster::observed::Observed,
    s: &decide::desired::Settings,
    read: Option<&decide::cluster::observed::GarageRead>,
    d: &Decision,
) {
    if let Some(name) = &d.delete_gateway {
        let ordinal = nodes::gateway_ordinal(&s.name, name).expect("a generated gateway");
        assert!(ordinal >= s.gateway_replicas, "{name} is below replicas");
        let gn = o.gateways.get(&ordinal).expect("an existing gateway");
        assert!(gn.metadata.deletion_timestamp.is_none());
        assert!(
            o.gateways
                .values()
                .all(|g| g.metadata.deletion_timestamp.is_none()),
            "a second gateway leaves while one is leaving"
        );
    }
    // The identity Garage sees up at a pod's address, and whether it holds a role.
    let at_pod = |pod: &str| -> Option<(String, bool)> {
        let read = read?;
        let ip = o
            .pods
            .iter()
            .find(|p| p.name_any() == pod)?
            .status
            .as_ref()?
            .pod_ip
            .clone()?;
        let seen = read.status.nodes.iter().find(|n| {
            n.is_up
                && n.addr
                    .as_deref()
                    .and_then(|a| a.rsplit_once(':'))
                    .is_some_and(|(host, _)| host.trim_matches(['[', ']']) == ip)
        })?;
        Some((seen.id.to_string(), read.layout.role(&seen.id).is_some()))
    };
    let gateway_of = |pod: &str| {
        facts::all_nodes(o)
            .into_iter()
            .find(|n| nodes::is_gateway(n) && names::node_pod(&n.name_any()) == pod)
    };
    let retiring: Vec<String> = o
        .cluster
        .status
        .as_ref()
        .and_then(|st| st.storage_drain.as_ref())
        .filter(|r| drain::role_only(r))
        .and_then(|r| r.role_removal_node_ids.clone())
        .unwrap_or_default();
    for pod in &d.unserve_pods {
        let gw = gateway_of(pod).expect("a gateway's pod leaves the gateway Service");
        assert!(
            gw.metadata.deletion_timestamp.is_some()
                || facts::proven_id(o, gw).is_none()
                || at_pod(pod).is_some_and(|(seen, held)| {
                    !held
                        || retiring.contains(&seen)
                        || gw.status.as_ref().and_then(|st| st.node_id.as_ref()) != Some(&seen)
                }),
            "{pod} leaves the gateway Service while its gateway stays with its role"
        );
    }
    for pod in &d.serve_pods {
        let gw = gateway_of(pod).expect("a gateway's pod enters the gateway Service");
        assert!(read.is_some() && gw.metadata.deletion_timestamp.is_none());
        assert!(
            at_pod(pod).is_some_and(|(seen, held)| {
                held && gw.status.as_ref().and_then(|st| st.node_id.as_ref()) == Some(&seen)
            }),
            "{pod} enters the gateway Service without its recorded identity holding a role"
        );
    }
    if let Some(change) = &d.remove_tombstones {
        let read = read.expect("stale roles removed without a read");
        let recorded: Vec<String> = facts::all_nodes(o)
            .into_iter()
            .filter_map(|n| n.status.as_ref()?.node_id.clone())
            .collect();
        let listed = o
            .cluster
            .status
            .as_ref()
            .and_then(|st| st.pending_gateway_tombstones.clone())
            .unwrap_or_default();
        assert_eq!(change.version, read.layout.version + 1);
        for c in change.intended.iter().chain(&change.stage) {
            let RoleChange::Remove { id, .. } = c else {
                panic!("a stale-role removal assigns {c:?}");
            };
            assert!(read.layout.role(id).is_some_and(|r| r.capacity.is_none()));
            assert!(
                !recorded.contains(&id.to_string()),
                "removes {id}, recorded"
            );
            assert!(
                listed.contains(&id.to_string()),
                "removes {id}, never listed"
            );
        }
    }
}

/// Publishes `d`'s status as act would, feeds it back and decides again: the status must not
/// change.
fn feedback(b: &mut Built, d: &Decision, t: &Config) {
    let o = &mut b.observed;
    let current = o.cluster.status.clone().unwrap_or_default();
    let generation = o.cluster.metadata.generation;
    let publish =
        |status: &shared_types::garage_cluster::v1beta2::GarageClusterStatus,
         wanted: &[decide::conditions::Desired],
         current: &shared_types::garage_cluster::v1beta2::GarageClusterStatus| {
            let mut out = status.clone();
            out.storage_drain = current.storage_drain.clone();
            out.storage_rollout = current.storage_rollout.clone();
            out.observed_generation = generation;
            out.conditions = Some(conditions::merge(
                current.conditions.as_deref(),
                wanted,
                OWNED,
                generation,
            ));
            out
        };
    let published = publish(&d.status, &d.conditions, &current);
    let mut cluster: GarageCluster = (*o.cluster).clone();
    cluster.status = Some(published.clone());
    o.cluster = std::sync::Arc::new(cluster);
    let again = decide(o, &b.settings, t).expect("the same settings decide again");
    let next = publish(&again.status, &again.conditions, &published);
    assert_eq!(
        next, published,
        "a second pass over the published status changes it"
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((manifest, w)) = input::manifest_and::<World>(data) else {
        return;
    };
    let manifest = if w.keep_unsupported {
        manifest.to_vec()
    } else {
        input::without_unsupported(manifest)
    };
    let Some(cluster) = input::object::<GarageCluster>(&manifest, "garage") else {
        return;
    };
    let t = timing();
    let mut built = match world::build(cluster, &w) {
        Ok(b) => b,
        Err(refused) => {
            let world::Refused { cluster, error } = *refused;
            let o = world::bare(cluster);
            let first = refuse(&o, &error, &t);
            assert_eq!(
                format!("{first:?}"),
                format!("{:?}", refuse(&o, &error, &t))
            );
            return;
        }
    };
    // Admission bounds replicas to 50 (GC-C15); past that a pass creates one GarageNode per
    // missing slot, which only measures the allocator.
    if built.settings.replicas > MAX_REPLICAS {
        return;
    }
    // Admission (GC-C3) refuses a name whose Auto slot names do not fit unshortened; the
    // reconciler tells its slots by those names.
    let s = &built.settings;
    let last = s.replicas.saturating_add(1);
    if nodes::auto_ordinal(&s.name, &names::auto_storage_node(&s.name, last)) != Some(last) {
        return;
    }
    let first = decide(&built.observed, &built.settings, &t);
    let second = decide(&built.observed, &built.settings, &t);
    assert_eq!(
        format!("{first:?}"),
        format!("{second:?}"),
        "the decision is not a function of its input"
    );
    let Ok(d) = first else {
        return;
    };
    check(&built, &d, &t);
    feedback(&mut built, &d, &t);
});
