//! The generated gateways of a cluster with storage and gateway tiers (`C-gateway-N`): which
//! to create, which to keep up to date, which to retire. Pure.
//!
//! Gateways hold capacity-less roles, so the layout planner adds each as it gets an identity
//! (one role per layout version, like every other change) and no block proof guards their
//! removal. A gateway leaves by deletion: its GarageNode's finalizer holds the workload until
//! the cluster's role-only transaction has taken the role out of the layout and the history
//! has settled (`machine::drain`).

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use shared_types::drain as contract;
use shared_types::garage_cluster::common::{LayoutPolicy, StorageDrainStatus};
use shared_types::garage_node::GarageNode;

use super::members::MemberView;
use super::observed::{GarageRead, Observed};
use crate::desired::{DesiredError, Settings, nodes};
use crate::machine::drain::Candidate;
use garage_api_types::NodeId;

/// What the pass does about the generated gateways.
#[derive(Debug, Clone, Default)]
pub struct GatewayGroup {
    /// Live gateways below `replicas`, as they should be (applied when they drifted).
    pub update: Vec<GarageNode>,
    /// Missing gateways below `replicas`.
    pub create: Vec<GarageNode>,
    /// The gateway to retire this pass (the highest extra ordinal), by name.
    pub delete: Option<String>,
}

/// The plan for the generated gateways. Under the cluster's Manual layout policy the
/// generated ones are handed to the user instead ([`ejected`]), never deleted.
pub fn plan(o: &Observed, s: &Settings) -> Result<GatewayGroup, DesiredError> {
    let c = o.cluster.as_ref();
    if manual(o) {
        return Ok(GatewayGroup::default());
    }
    let live = |gn: &&GarageNode| gn.metadata.deletion_timestamp.is_none();
    let update = o
        .gateways
        .iter()
        .filter(|(n, gn)| **n < s.gateway_replicas && live(gn))
        .map(|(n, _)| nodes::auto_gateway_node(c, s, *n))
        .collect::<Result<Vec<_>, _>>()?;
    // A slot whose previous gateway is still leaving is filled once it is gone.
    let create = (0..s.gateway_replicas)
        .filter(|n| !o.gateways.contains_key(n))
        .map(|n| nodes::auto_gateway_node(c, s, n))
        .collect::<Result<Vec<_>, _>>()?;
    // One at a time: the next leaves once the previous one's role is gone.
    let leaving = o.gateways.values().any(|gn| !live(&gn));
    let delete = o
        .gateways
        .iter()
        .rev()
        .find(|(n, gn)| **n >= s.gateway_replicas && live(gn))
        .filter(|_| !leaving)
        .map(|(_, gn)| gn.name_any());
    Ok(GatewayGroup {
        update,
        create,
        delete,
    })
}

/// Generated gateways under the cluster's Manual layout policy: handed to the user, as the
/// storage tier's are (their identities and roles stay as they are).
pub fn ejected(o: &Observed) -> Vec<String> {
    if manual(o) {
        o.gateways.values().map(ResourceExt::name_any).collect()
    } else {
        Vec::new()
    }
}

fn manual(o: &Observed) -> bool {
    o.cluster.spec.layout_policy == Some(LayoutPolicy::Manual)
}

/// The live generated gateways the layout plans for (those below `replicas`).
pub fn members<'a>(o: &'a Observed, s: &Settings) -> impl Iterator<Item = &'a GarageNode> {
    let replicas = s.gateway_replicas;
    o.gateways
        .iter()
        .filter(move |(n, gn)| **n < replicas && gn.metadata.deletion_timestamp.is_none())
        .map(|(_, gn)| gn)
}

/// The gateways whose role-only transaction may run, by name: those being deleted
/// (`removal::gateway_leaving`), then those whose pod runs another identity than the one that
/// holds their role (a lost metadata volume): the old role is swapped for the new identity's.
pub fn candidates(
    all_nodes: &[&GarageNode],
    pods: &[Pod],
    read: Option<&GarageRead>,
    views: &[MemberView],
    record: Option<&StorageDrainStatus>,
) -> Vec<Candidate> {
    let mut gateways: Vec<&GarageNode> = all_nodes
        .iter()
        .copied()
        .filter(|n| nodes::is_gateway(n))
        .collect();
    gateways.sort_by_key(|n| n.name_any());
    let mut leaving = Vec::new();
    let mut swaps = Vec::new();
    for n in gateways {
        if super::removal::gateway_leaving(n) {
            leaving.push(super::removal::candidate(n, pods, read));
        } else if n.metadata.deletion_timestamp.is_none()
            && let Some(c) = swap(n, pods, read, views, record)
        {
            swaps.push(c);
        }
    }
    leaving.extend(swaps);
    leaving
}

/// True when `v` is a gateway running an identity the operator has not proven: it is asked to
/// dial its peers (`garage_facts`), and its pod leaves the gateway Service first ([`serving`]).
pub fn unproven(v: &MemberView) -> bool {
    v.member.node_id.is_none() && v.member.role.capacity.is_none() && !v.external
}

/// Which gateway pods enter or leave the gateway Service (by their tier label).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Serving {
    /// Pods to take out: a leaving gateway's, before its role goes; one whose running identity
    /// holds no role (a new gateway before its role is added, or one that lost its metadata),
    /// which would refuse signed requests.
    pub unserve: Vec<String>,
    /// Pods to put back: a live gateway's whose running identity is the one it records and
    /// holds its role.
    pub serve: Vec<String>,
}

/// The gateway pods to take out of or put back into the gateway Service. Leaving gateways'
/// pods go out whatever Garage says. So does the pod of a gateway whose running identity is
/// not proven (`unproven`, the gateways this pass asks to dial their peers): a new identity
/// becomes healthy, and Ready, as soon as it has dialled them, before any pass could see that
/// it holds no role; it leaves the Service before it dials. The others move on what Garage is
/// read to see up at the pod's address: out when that identity holds no role, back when it is
/// the recorded one and holds its role.
pub fn serving(
    all_nodes: &[&GarageNode],
    pods: &[Pod],
    read: Option<&GarageRead>,
    (candidates, unproven): (&[Candidate], &[String]),
    record: Option<&StorageDrainStatus>,
) -> Serving {
    let mut out = Serving {
        unserve: candidates
            .iter()
            .filter(|c| c.swap.is_none() && c.serving)
            .filter_map(|c| c.lost.pod.clone())
            .collect(),
        serve: Vec::new(),
    };
    let Some(read) = read else {
        return out;
    };
    let retiring: Vec<&String> = record
        .filter(|r| contract::role_only(r))
        .iter()
        .flat_map(|r| r.role_removal_node_ids.iter().flatten())
        .collect();
    for n in all_nodes.iter().filter(|n| nodes::is_gateway(n)) {
        if n.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let Some(pod) = super::members::pod_of(n, pods) else {
            continue;
        };
        let labelled = pod
            .labels()
            .get(shared_types::keys::label::LABEL_TIER)
            .map(String::as_str)
            == Some(shared_types::keys::label::value::TIER_GATEWAY);
        if unproven.contains(&n.name_any()) {
            if labelled {
                out.unserve.push(pod.name_any());
            }
            continue;
        }
        let Some(seen) = crate::pods::running_ip(pod)
            .and_then(|ip| super::removal::seen_at(read, &ip, None, true))
        else {
            continue;
        };
        let recorded = n.status.as_ref().and_then(|st| st.node_id.as_deref());
        let held = read.layout.role(&seen).is_some()
            && recorded == Some(seen.as_str())
            && !retiring.iter().any(|id| **id == seen.to_string());
        // A gateway in a transaction goes back once the transaction is over.
        let in_transaction = candidates.iter().any(|c| c.name == n.name_any());
        match (labelled, held) {
            (true, false) => out.unserve.push(pod.name_any()),
            (false, true) if !in_transaction => out.serve.push(pod.name_any()),
            _ => {}
        }
    }
    out.unserve.sort();
    out.unserve.dedup();
    out
}

/// The swap candidate of the live gateway `n`, when it runs a new identity and its old one
/// holds a role: the identity being retired (the record's target, else the one `n` records)
/// and the new one with its desired role.
fn swap(
    n: &GarageNode,
    pods: &[Pod],
    read: Option<&GarageRead>,
    views: &[MemberView],
    record: Option<&StorageDrainStatus>,
) -> Option<Candidate> {
    let read = read?;
    let mut c = super::removal::candidate(n, pods, read.into());
    let role = views
        .iter()
        .find(|v| v.member.name == c.name)?
        .member
        .role
        .clone();
    let ours = record.filter(|r| {
        contract::role_only(r) && contract::actor_is_node(r, &c.namespace, &c.name, &c.uid)
    });
    // Recorded: the target stays the old identity; the new one is what the node records now
    // (once it took it over) or what Garage sees up at its pod. Unrecorded: the identity the
    // node records, whether or not it ever got a role (the transaction is what lets the node
    // take the new one).
    let old: NodeId = match ours {
        Some(r) => r.role_removal_node_ids.as_ref()?.first()?.parse().ok()?,
        None => c.lost.recorded_id.clone()?,
    };
    let new = c
        .node_id
        .clone()
        .filter(|id| *id != old && ours.is_some())
        .or_else(|| up_at_pod(n, pods, read, &old))?;
    c.lost.recorded_id = Some(old);
    c.swap = Some((new, role));
    Some(c)
}

/// The identity Garage sees up at `n`'s pod address other than `old`: what the pod runs after
/// its metadata was lost. Only one that is up counts: an identity that left before may still
/// be listed at the same address.
fn up_at_pod(n: &GarageNode, pods: &[Pod], read: &GarageRead, old: &NodeId) -> Option<NodeId> {
    let ip = super::members::pod_of(n, pods).and_then(crate::pods::running_ip)?;
    super::removal::seen_at(read, &ip, Some(old), true)
}

/// The generated gateways (below `replicas`) that hold no role in the layout as `read` shows
/// it, with `GatewayLayoutDegraded` saying so; `None` without a gateway tier or a read. A
/// gateway without its role keeps no copy of the access keys, so signed requests through it
/// can fail.
pub fn layout_degraded(
    o: &Observed,
    s: &Settings,
    read: Option<&GarageRead>,
) -> Option<(Vec<String>, crate::conditions::Desired)> {
    use shared_types::conditions::{cluster as cc, reason};
    let read = read.filter(|_| s.gateway_tier)?;
    // The identity each records, proven from its current pod or not: a gateway restarting
    // keeps its role and is not reported.
    let missing: Vec<String> = members(o, s)
        .filter(|gn| {
            let id = gn
                .status
                .as_ref()
                .and_then(|st| st.node_id.as_deref())
                .and_then(|id| id.parse::<NodeId>().ok());
            id.is_none_or(|id| read.layout.role(&id).is_none())
        })
        .map(ResourceExt::name_any)
        .collect();
    let condition = if missing.is_empty() {
        crate::conditions::Desired {
            type_: cc::CONDITION_GATEWAY_LAYOUT_DEGRADED,
            status: false,
            reason: reason::REASON_GATEWAY_ROLES_PRESENT,
            message: "every gateway holds its role in the layout".into(),
        }
    } else {
        crate::conditions::Desired {
            type_: cc::CONDITION_GATEWAY_LAYOUT_DEGRADED,
            status: true,
            reason: reason::REASON_GATEWAY_ROLE_MISSING,
            message: format!(
                "{} hold no role in the layout yet; signed requests through them can fail until they do",
                missing.join(", ")
            ),
        }
    };
    Some((missing, condition))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::observed::GarageView;
    use crate::fixtures::{cluster, deleting, observed_cluster};

    fn unified(gateways: i32) -> shared_types::garage_cluster::v1beta2::GarageCluster {
        let mut c = cluster(3);
        c.spec.gateway = Some(shared_types::garage_cluster::v1beta2::GatewaySpec {
            replicas: Some(gateways),
            ..Default::default()
        });
        c
    }

    fn with_gateways(
        c: &shared_types::garage_cluster::v1beta2::GarageCluster,
        ordinals: &[u32],
    ) -> Observed {
        let s = Settings::from_cluster(c).unwrap();
        let mut o = observed_cluster(c.clone(), GarageView::Unavailable(String::new()));
        for n in ordinals {
            o.gateways
                .insert(*n, nodes::auto_gateway_node(c, &s, *n).unwrap());
        }
        o
    }

    /// A read at layout version 2 (settled) whose status lists `nodes` and whose layout holds
    /// a gateway role for each identity number of `roles`.
    fn read_of(nodes: serde_json::Value, roles: &[u8]) -> GarageRead {
        use crate::fixtures::{id, layout, settled};
        let roles: Vec<serde_json::Value> = roles
            .iter()
            .map(|n| serde_json::json!({"id": id(*n).as_str(), "zone": "default", "capacity": null, "tags": []}))
            .collect();
        GarageRead {
            status: serde_json::from_value(serde_json::json!({"layoutVersion": 2, "nodes": nodes}))
                .unwrap(),
            layout: layout(2, &roles, &[]),
            history: settled(2),
            health: None,
            every_view_healthy: false,
            build: None,
            worker_variables: std::collections::BTreeMap::new(),
        }
    }

    #[test]
    fn missing_gateways_are_created_and_live_ones_kept_up_to_date() {
        let c = unified(3);
        let s = Settings::from_cluster(&c).unwrap();
        let o = with_gateways(&c, &[1]);
        let p = plan(&o, &s).unwrap();
        let names = |v: &[GarageNode]| v.iter().map(|n| n.name_any()).collect::<Vec<_>>();
        assert_eq!(names(&p.create), ["garage-gateway-0", "garage-gateway-2"]);
        assert_eq!(names(&p.update), ["garage-gateway-1"]);
        assert_eq!(p.delete, None);
        assert_eq!(members(&o, &s).count(), 1);
    }

    #[test]
    fn extra_gateways_leave_one_at_a_time_highest_first() {
        let c = unified(1);
        let s = Settings::from_cluster(&c).unwrap();
        let mut o = with_gateways(&c, &[0, 1, 2]);
        assert_eq!(
            plan(&o, &s).unwrap().delete.as_deref(),
            Some("garage-gateway-2")
        );
        o.gateways.get_mut(&2).unwrap().metadata.deletion_timestamp = deleting();
        let p = plan(&o, &s).unwrap();
        assert_eq!(p.delete, None, "the next waits for the leaving one");
        assert!(
            p.create.is_empty(),
            "a leaving slot above replicas is not refilled"
        );
        // Below replicas, a leaving gateway's slot is refilled only once it is gone.
        let c = unified(3);
        let s = Settings::from_cluster(&c).unwrap();
        let mut o = with_gateways(&c, &[0, 1, 2]);
        o.gateways.get_mut(&1).unwrap().metadata.deletion_timestamp = deleting();
        let p = plan(&o, &s).unwrap();
        assert!(p.create.is_empty());
        assert_eq!(p.update.len(), 2);
        assert_eq!(members(&o, &s).count(), 2);
    }

    #[test]
    fn the_manual_policy_hands_generated_gateways_to_the_user() {
        let mut c = unified(2);
        c.spec.layout_policy = Some(LayoutPolicy::Manual);
        let s = Settings::from_cluster(&c).unwrap();
        let o = with_gateways(&c, &[0, 1]);
        let p = plan(&o, &s).unwrap();
        assert!(p.update.is_empty() && p.create.is_empty() && p.delete.is_none());
        assert_eq!(ejected(&o), ["garage-gateway-0", "garage-gateway-1"]);
        // A cluster without a gateway tier retires them instead.
        let mut c = unified(2);
        c.spec.gateway = None;
        let s = Settings::from_cluster(&c).unwrap();
        let o = with_gateways(&unified(2), &[0, 1]);
        let o = Observed {
            cluster: std::sync::Arc::new(c),
            ..o
        };
        assert_eq!(
            plan(&o, &s).unwrap().delete.as_deref(),
            Some("garage-gateway-1")
        );
        assert!(ejected(&o).is_empty());
    }

    #[test]
    fn a_gateway_running_a_new_identity_is_a_swap_candidate_while_that_one_is_up() {
        use crate::fixtures::{id, layout, manual, pod};
        let c = unified(1);
        let s = Settings::from_cluster(&c).unwrap();
        let mut gw = manual("gw", Some(id(5)));
        gw.spec.gateway = Some(true);
        // The node controller dropped the pod proof when the pod reported another identity.
        gw.status.as_mut().unwrap().observed_pod_uid = None;
        let mut p = pod("gw", 40, "sts-gw");
        p.metadata.labels = Some(crate::desired::labels::gateway_pod_labels("garage", "gw"));
        let pods = vec![p];
        let view = super::super::members::member(&gw, &pods, &s, false).unwrap();
        let read = |up6: bool| {
            read_of(
                serde_json::json!([
                    {"id": id(5).as_str(), "isUp": false, "draining": false, "addr": "198.18.0.40:3901"},
                    {"id": id(6).as_str(), "isUp": up6, "draining": false, "addr": "198.18.0.40:3901"},
                ]),
                &[5],
            )
        };
        let up = read(true);
        let found = candidates(&[&gw], &pods, Some(&up), std::slice::from_ref(&view), None);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].lost.recorded_id, Some(id(5)));
        assert_eq!(found[0].swap.as_ref().map(|(n, _)| n.clone()), Some(id(6)));
        assert_eq!(found[0].swap.as_ref().unwrap().1, view.member.role);
        // A new identity that is not up is no replacement; nor is anything without a read.
        let down = read(false);
        assert!(
            candidates(
                &[&gw],
                &pods,
                Some(&down),
                std::slice::from_ref(&view),
                None
            )
            .is_empty()
        );
        assert!(candidates(&[&gw], &pods, None, std::slice::from_ref(&view), None).is_empty());
        // An old identity that never got a role is swapped out all the same (the node takes
        // the new one only through the transaction); a stale entry at the same address that
        // is down is no replacement.
        let mut no_role = read(true);
        no_role.layout = layout(2, &[], &[]);
        let found = candidates(
            &[&gw],
            &pods,
            Some(&no_role),
            std::slice::from_ref(&view),
            None,
        );
        assert_eq!(found[0].swap.as_ref().map(|(n, _)| n.clone()), Some(id(6)));
        // A storage node in the same state is no gateway candidate.
        let mut storage = gw.clone();
        storage.spec.gateway = None;
        assert!(candidates(&[&storage], &pods, Some(&up), &[view], None).is_empty());
    }

    #[test]
    fn the_gateway_service_holds_only_pods_whose_running_identity_holds_its_role() {
        use crate::fixtures::{id, manual, pod};
        let mut gw = manual("gw", Some(id(5)));
        gw.spec.gateway = Some(true);
        let gw_pod = |labelled: bool| {
            let mut p = pod("gw", 40, "sts-gw");
            let mut labels = crate::desired::labels::gateway_pod_labels("garage", "gw");
            if !labelled {
                labels.remove(shared_types::keys::label::LABEL_TIER);
            }
            p.metadata.labels = Some(labels);
            p
        };
        let read = |seen: Option<u8>, roles: &[u8]| {
            read_of(
                serde_json::json!(seen.map(|n| vec![serde_json::json!(
                    {"id": id(n).as_str(), "isUp": true, "draining": false, "addr": "198.18.0.40:3901"}
                )]).unwrap_or_default()),
                roles,
            )
        };
        let retiring_5 = {
            let ids = vec![id(5).to_string()];
            StorageDrainStatus {
                role_removal_node_ids: Some(ids.clone()),
                removed_storage_node_ids: Some(vec![]),
                target_hash: Some(contract::target_hash(&ids, &[], &[])),
                ..Default::default()
            }
        };
        let none: (Vec<&str>, Vec<&str>) = (vec![], vec![]);
        let out = (vec!["gw-0"], vec![]);
        let back = (vec![], vec!["gw-0"]);
        // (pod labelled, identity Garage sees up at the pod, roles, record, expected)
        type Case<'a> = (
            bool,
            Option<u8>,
            Vec<u8>,
            Option<&'a StorageDrainStatus>,
            (Vec<&'a str>, Vec<&'a str>),
        );
        let cases: Vec<Case> = vec![
            (true, Some(5), vec![5], None, none.clone()),
            // A new identity (metadata lost) or one not added yet refuses signed requests.
            (true, Some(6), vec![5], None, out.clone()),
            (true, Some(5), vec![], None, out.clone()),
            // Nothing seen at the pod yet (a restart in progress): left as it is.
            (true, None, vec![], None, none.clone()),
            (false, None, vec![5], None, none.clone()),
            (false, Some(5), vec![5], None, back.clone()),
            // An identity the node does not record, or one being retired, is not put back.
            (false, Some(6), vec![6], None, none.clone()),
            (false, Some(5), vec![5], Some(&retiring_5), none.clone()),
        ];
        for (i, (labelled, seen, roles, record, want)) in cases.into_iter().enumerate() {
            let pods = vec![gw_pod(labelled)];
            let r = read(seen, &roles);
            let got = serving(&[&gw], &pods, Some(&r), (&[], &[]), record);
            let want = Serving {
                unserve: want.0.into_iter().map(String::from).collect(),
                serve: want.1.into_iter().map(String::from).collect(),
            };
            assert_eq!(got, want, "case {i}");
            // Without a read nothing moves.
            assert_eq!(
                serving(&[&gw], &pods, None, (&[], &[]), record),
                Serving::default()
            );
        }
        // A gateway being deleted is the transaction's: not put back, whatever Garage sees.
        let mut leaving = gw.clone();
        leaving.metadata.deletion_timestamp = crate::fixtures::deleting();
        let pods = vec![gw_pod(false)];
        let r = read(Some(5), &[5]);
        assert_eq!(
            serving(&[&leaving], &pods, Some(&r), (&[], &[]), None),
            Serving::default()
        );
        // A gateway asked to dial its peers (its running identity unproven) leaves the
        // Service first, whatever Garage sees; and only with a read.
        let pods = vec![gw_pod(true)];
        let unproven = vec!["gw".to_owned()];
        assert_eq!(
            serving(&[&gw], &pods, Some(&r), (&[], &unproven), None).unserve,
            vec!["gw-0".to_owned()]
        );
        assert_eq!(
            serving(&[&gw], &pods, None, (&[], &unproven), None),
            Serving::default()
        );
    }
}
