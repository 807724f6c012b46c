//! Table tests of the GarageCluster decision in the middle of a transition: members restarted
//! or seen at old addresses, drains and rollouts in flight, one transaction per pass.

use super::*;

/// A converged cluster with a Manual member joining, while Garage still sees member 1 at an
/// old address; returns the pod of member 1.
fn seen_at_an_old_address(o: &mut Observed) -> &mut k8s_openapi::api::core::v1::Pod {
    o.user_nodes.push(manual("manual-a", Some(id(9))));
    o.pods.push(pod("manual-a", 30, "sts-m"));
    if let GarageView::Read(r) = &mut o.garage {
        r.status
            .nodes
            .iter_mut()
            .find(|n| n.id == id(1))
            .unwrap()
            .addr = Some("198.18.0.99:3901".into());
    }
    o.pods
        .iter_mut()
        .find(|p| p.metadata.name.as_deref() == Some("garage-storage-1-0"))
        .unwrap()
}

#[test]
fn a_restarted_member_still_seen_at_its_old_address_holds_layout_changes() {
    let mut o = converged();
    let now = o.now;
    seen_at_an_old_address(&mut o).metadata.creation_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(
        d.layout.is_none(),
        "no layout change over a stale connection"
    );
    assert!(!ready(&d).0);
    assert_eq!(
        d.rejoin.iter().map(|(h, _)| h.as_str()).collect::<Vec<_>>(),
        ["198.18.0.11"],
        "only the restarted member is asked to dial out"
    );
    // Two minutes later the hold ends even if Garage never updates the address.
    o.now += RECONNECT_GRACE;
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.layout.is_some());
}

#[test]
fn a_recent_restart_does_not_make_a_converged_cluster_unready() {
    let mut o = converged();
    for p in &mut o.pods {
        p.metadata.creation_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(o.now));
    }
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert_eq!(ready(&d), (true, reason::REASON_CLUSTER_READY));
}

#[test]
fn an_unreadable_garage_mid_drain_removes_nothing_and_says_so() {
    let c = cluster(4);
    let (mut generated, pods) = auto(&c, &[true, true, true, true]);
    generated.get_mut(&3).unwrap().metadata.annotations = Some(BTreeMap::from([(
        shared_types::keys::annotation::ANNOTATION_DRAIN.to_string(),
        "true".to_string(),
    )]));
    let o = observed(
        c,
        generated,
        vec![],
        pods,
        GarageView::Unavailable("GetClusterStatus: HTTP 500".into()),
    );
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.drain.is_none() && d.delete_nodes.is_empty() && d.layout.is_none());
    let drain = d
        .conditions
        .iter()
        .find(|c| c.type_ == shared_types::conditions::cluster::CONDITION_STORAGE_DRAIN_READY)
        .unwrap();
    assert!(!drain.status);
    assert_eq!(drain.reason, reason::REASON_GARAGE_API_ERROR);
    assert!(drain.message.contains("HTTP 500"), "{}", drain.message);
}

#[test]
fn whole_site_retirement_is_reported_unsupported_and_removes_nothing() {
    let mut o = converged();
    let mut cluster = (*o.cluster).clone();
    cluster.metadata.annotations = Some(BTreeMap::from([(
        shared_types::keys::annotation::ANNOTATION_DRAIN.to_string(),
        "true".to_string(),
    )]));
    o.cluster = std::sync::Arc::new(cluster);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.drain.is_none() && d.layout.is_none() && d.delete_nodes.is_empty());
    let drain = d
        .conditions
        .iter()
        .find(|c| c.type_ == shared_types::conditions::cluster::CONDITION_STORAGE_DRAIN_READY)
        .unwrap();
    assert_eq!(
        (drain.status, drain.reason),
        (false, reason::REASON_UNSUPPORTED)
    );
}

/// Makes the StatefulSet of `member` want `revision`, as a changed template does.
pub(super) fn with_statefulset_revision(o: &mut Observed, member: &str, revision: &str) {
    let sts = o
        .statefulsets
        .iter_mut()
        .find(|s| s.name_any() == member)
        .unwrap();
    sts.status.as_mut().unwrap().update_revision = Some(revision.into());
}

#[test]
fn a_changed_template_rolls_one_pod_recorded_first_and_holds_layout_writers() {
    let mut o = converged();
    let s = settings(&o.cluster);
    with_statefulset_revision(&mut o, "garage-storage-1", "rev-2");
    with_statefulset_revision(&mut o, "garage-storage-2", "rev-2");
    let d = decide(&o, &s, &timing()).unwrap();
    let Some(crate::machine::rollout::Step::Record(r)) = &d.rollout else {
        panic!("expected a rollout record, got {:?}", d.rollout);
    };
    assert_eq!(r.garage_node_name.as_deref(), Some("garage-storage-1"));
    assert_eq!(r.previous_pod_uid.as_deref(), Some("pod-garage-storage-1"));
    let rollout = d
        .conditions
        .iter()
        .find(|c| c.type_ == shared_types::conditions::cluster::CONDITION_STORAGE_ROLLOUT_READY)
        .unwrap();
    assert_eq!(
        (rollout.status, rollout.reason),
        (false, reason::REASON_STORAGE_ROLLING_OUT)
    );
    // With the record written, the next pass deletes exactly that pod, and nothing else of
    // the layout moves meanwhile.
    let mut c = (*o.cluster).clone();
    c.status.get_or_insert_default().storage_rollout = Some((**r).clone());
    o.cluster = Arc::new(c);
    let d = decide(&o, &s, &timing()).unwrap();
    assert_eq!(
        d.rollout,
        Some(crate::machine::rollout::Step::DeletePod {
            name: "garage-storage-1-0".into(),
            uid: "pod-garage-storage-1".into()
        })
    );
    assert!(d.layout.is_none());
}

#[test]
fn old_config_revisions_go_only_once_the_rollout_converged_and_nothing_mounts_them() {
    let mut o = converged();
    let s = settings(&o.cluster);
    let cm = |name: &str| -> k8s_openapi::api::core::v1::ConfigMap {
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap()
    };
    let revision = crate::desired::config::revision(&o.cluster, &s).unwrap();
    let current = revision.name;
    let hash16 = revision.revision[..16].to_owned();
    o.config_maps = vec![cm(&current), cm("garage-config-000000000000"), cm("other")];
    let d = decide(&o, &s, &timing()).unwrap();
    assert_eq!(
        d.prune_configs,
        vec!["garage-config-000000000000".to_owned()]
    );
    // A template that still mounts it keeps it.
    let mut kept = o.statefulsets[0].clone();
    kept.spec = Some(serde_json::from_value(serde_json::json!({
        "selector": {}, "serviceName": "x",
        "template": {
            "metadata": {"annotations": {shared_types::keys::annotation::ANNOTATION_CONFIG_HASH: &hash16}},
            "spec": {"containers": [], "volumes": [
                {"name": "config", "configMap": {"name": "garage-config-000000000000"}},
                {"name": "admin-token", "secret": {"secretName": "garage-admin-token"}},
            ]},
        },
    })).unwrap());
    o.statefulsets[0] = kept;
    assert!(decide(&o, &s, &timing()).unwrap().prune_configs.is_empty());
    // While pods still run an old revision, nothing is pruned.
    let mut o = converged();
    o.config_maps = vec![cm("garage-config-000000000000")];
    with_statefulset_revision(&mut o, "garage-storage-0", "rev-2");
    assert!(decide(&o, &s, &timing()).unwrap().prune_configs.is_empty());
}

#[test]
fn a_node_that_shares_its_id_with_another_is_never_drained() {
    // As in the drain test above, but the fourth member reports the third member's ID (a
    // copied metadata directory): removing that role would take it from the third too.
    let c = cluster(4);
    let (mut generated, pods) = auto(&c, &[true, true, true, true]);
    generated.get_mut(&3).unwrap().metadata.annotations = Some(BTreeMap::from([(
        shared_types::keys::annotation::ANNOTATION_DRAIN.to_string(),
        "true".to_string(),
    )]));
    let copied = generated[&2].status.clone();
    generated.get_mut(&3).unwrap().status = copied;
    let roles: Vec<_> = (0..3u8)
        .map(|n| auto_role(&format!("garage-storage-{n}"), &id(n)))
        .collect();
    let ids = [id(0), id(1), id(2)];
    let up: Vec<&NodeId> = ids.iter().collect();
    let o = observed(
        c,
        generated,
        vec![],
        pods,
        read(layout(1, &roles, &[]), &up, true),
    );
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.drain.is_none(), "nothing is drained: {:?}", d.drain);
    let drain = d
        .conditions
        .iter()
        .find(|c| c.type_ == shared_types::conditions::cluster::CONDITION_STORAGE_DRAIN_READY)
        .unwrap();
    assert_eq!(
        (drain.status, drain.reason),
        (false, reason::REASON_IDENTITY_COLLISION)
    );
}

#[test]
fn a_spec_change_not_yet_rendered_into_every_workload_is_not_converged() {
    // The cluster's new spec has not reached garage-storage-1 yet (its rendered hash is the
    // old one): its StatefulSet still shows the old revision, which must not count as current.
    let mut o = converged();
    let s = settings(&o.cluster);
    o.generated
        .get_mut(&1)
        .unwrap()
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(
            shared_types::keys::annotation::ANNOTATION_RENDERED_HASH.into(),
            "from-an-older-spec".into(),
        );
    let d = decide(&o, &s, &timing()).unwrap();
    let rollout = d
        .conditions
        .iter()
        .find(|c| c.type_ == shared_types::conditions::cluster::CONDITION_STORAGE_ROLLOUT_READY)
        .unwrap();
    assert!(!rollout.status, "{}", rollout.message);
    assert!(
        rollout.message.contains("garage-storage-1"),
        "{}",
        rollout.message
    );
    assert!(
        d.rollout.is_none(),
        "nothing is replaced before the workload is rendered"
    );
}

/// What a pass starts: a layout change, a drain (its intent record), a pod replacement (its
/// rollout record).
fn started(d: &Decision) -> (bool, bool, bool) {
    (
        d.layout.is_some(),
        matches!(d.drain, Some(crate::machine::drain::Step::Record(_))),
        matches!(d.rollout, Some(crate::machine::rollout::Step::Record(_))),
    )
}

#[test]
fn a_pass_starts_one_transaction_at_most() {
    // A drain asked for and a changed template at once: the second member's StatefulSet
    // wants a new revision.
    let mut o = fourth_asks_to_drain();
    with_statefulset_revision(&mut o, "garage-storage-1", "rev-2");
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert_eq!(started(&d), (false, true, false), "the drain starts alone");

    // A drifted role and a changed template at once.
    let mut o = converged();
    if let GarageView::Read(r) = &mut o.garage {
        let mut roles: Vec<_> = (0..3u8)
            .map(|n| auto_role(&format!("garage-storage-{n}"), &id(n)))
            .collect();
        roles[0]["zone"] = "elsewhere".into();
        r.layout = layout(1, &roles, &[]);
    }
    with_statefulset_revision(&mut o, "garage-storage-1", "rev-2");
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert_eq!(
        started(&d),
        (true, false, false),
        "the layout change goes alone"
    );
    let rollout = d
        .conditions
        .iter()
        .find(|c| c.type_ == shared_types::conditions::cluster::CONDITION_STORAGE_ROLLOUT_READY)
        .unwrap();
    assert_eq!(rollout.reason, reason::REASON_STORAGE_ROLLOUT_WAITING);
}

#[test]
fn the_reconnect_grace_follows_the_api_servers_clock_not_the_nodes() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::SignedDuration;
    // Created just now, on a Node whose clock is an hour behind or ahead: still held.
    for skew in [-3600, 3600] {
        let mut o = converged();
        let now = o.now;
        let p = seen_at_an_old_address(&mut o);
        p.metadata.creation_timestamp = Some(Time(now));
        p.status.as_mut().unwrap().start_time = Some(Time(now + SignedDuration::from_secs(skew)));
        let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
        assert!(d.layout.is_none(), "skew {skew}: a fresh pod held nothing");
    }
    // Created long ago, though its Node's clock says it started just now: nothing to wait for.
    let mut o = converged();
    let now = o.now;
    let p = seen_at_an_old_address(&mut o);
    p.metadata.creation_timestamp = Some(Time(now - RECONNECT_GRACE * 2));
    p.status.as_mut().unwrap().start_time = Some(Time(now));
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(
        d.layout.is_some(),
        "an old pod's skewed start time held the layout"
    );
}

#[test]
fn members_with_their_own_rpc_address_get_their_own_revision_and_are_rolled_onto_it() {
    let mut o = converged();
    let mut c = (*o.cluster).clone();
    c.spec.storage.as_mut().unwrap().rpc_public_addr = Some("store-{ordinal}.example:3901".into());
    o.cluster = Arc::new(c);
    let s = settings(&o.cluster);
    let d = decide(&o, &s, &timing()).unwrap();
    let names: Vec<&str> = d.node_configs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    for n in 0..3 {
        assert!(
            names
                .iter()
                .any(|r| r.starts_with(&format!("garage-config-garage-storage-{n}-"))),
            "{names:?}"
        );
    }
    let addresses: Vec<Option<String>> = d
        .update_nodes
        .iter()
        .map(|gn| {
            gn.spec
                .network
                .as_ref()
                .and_then(|n| n.rpc_public_addr.clone())
        })
        .collect();
    assert_eq!(
        addresses,
        (0..3)
            .map(|n| Some(format!("store-{n}.example:3901")))
            .collect::<Vec<_>>()
    );

    // Once the nodes carry it, a StatefulSet still mounting the shared revision is not
    // current: the rollout replaces its pod.
    for gn in d.update_nodes {
        let ordinal = crate::desired::nodes::slot_of("garage", &gn).unwrap();
        let live = o.generated.get_mut(&ordinal).unwrap();
        live.spec = gn.spec;
        live.metadata.annotations = gn.metadata.annotations;
    }
    // First the roles take the address as a tag, one version at a time.
    let d = decide(&o, &s, &timing()).unwrap();
    let staged = d.layout.expect("the tag change").intended;
    assert!(
        staged
            .iter()
            .any(|r| matches!(r, RoleChange::Assign { tags, .. }
            if tags.last().is_some_and(|t| t.starts_with("rpc-address:store-")))),
        "{staged:?}"
    );
    // With every role tagged, a StatefulSet still mounting the shared revision is not
    // current: the rollout starts.
    let roles: Vec<_> = (0..3u8)
        .map(|n| {
            let name = format!("garage-storage-{n}");
            let mut tags = storage_role_tags("garage", "ns", "uid-1", &[format!("{name}-0")]);
            tags.push(format!("rpc-address:store-{n}.example:3901"));
            role(&id(n), "default", 1 << 30, &tags)
        })
        .collect();
    let ids = [id(0), id(1), id(2)];
    let up: Vec<&NodeId> = ids.iter().collect();
    o.garage = read(layout(1, &roles, &[]), &up, true);
    let d = decide(&o, &s, &timing()).unwrap();
    assert!(d.layout.is_none(), "{:?}", d.layout);
    assert!(
        !matches!(&d.rollout, Some(crate::machine::rollout::Step::Record(_))),
        "a template on the shared revision is not the one to roll to: {:?}",
        d.rollout
    );
    // Once each StatefulSet mounts its member's own revision, the pods on the old template
    // are replaced.
    for sts in &mut o.statefulsets {
        let gn = o
            .generated
            .values()
            .find(|g| g.name_any() == sts.name_any())
            .unwrap();
        let own = crate::desired::node_config::revision_for(&o.cluster, &s, gn).unwrap();
        let meta = sts
            .spec
            .as_mut()
            .unwrap()
            .template
            .metadata
            .as_mut()
            .unwrap();
        meta.annotations.as_mut().unwrap().insert(
            shared_types::keys::annotation::ANNOTATION_CONFIG_HASH.into(),
            own.revision[..16].to_owned(),
        );
        sts.status.as_mut().unwrap().update_revision = Some("rev-2".into());
    }
    let d = decide(&o, &s, &timing()).unwrap();
    assert!(
        matches!(&d.rollout, Some(crate::machine::rollout::Step::Record(_))),
        "{:?}",
        d.rollout
    );
}

#[test]
fn a_member_seen_at_the_address_it_advertises_is_not_a_stale_connection() {
    let mut o = converged();
    let mut c = (*o.cluster).clone();
    c.spec
        .network
        .get_or_insert_with(Default::default)
        .rpc_public_addr = Some("garage.example:3901".into());
    o.cluster = Arc::new(c);
    if let GarageView::Read(r) = &mut o.garage {
        for n in &mut r.status.nodes {
            n.addr = Some("garage.example:3901".into());
        }
    }
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.reconnect.is_empty(), "{:?}", d.reconnect);
    assert!(d.rejoin.is_empty(), "{:?}", d.rejoin);
    // Anywhere else is still an old connection.
    if let GarageView::Read(r) = &mut o.garage {
        r.status.nodes[1].addr = Some("198.18.0.99:3901".into());
    }
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert_eq!(d.reconnect.len(), 1, "{:?}", d.reconnect);
}

#[test]
fn a_draining_slots_public_service_stays_until_its_member_is_gone() {
    let mut o = converged();
    let mut c = (*o.cluster).clone();
    c.spec.public_endpoint = Some(
        serde_json::from_value(serde_json::json!(
            {"type": "LoadBalancer", "loadBalancer": {"perNode": true}}
        ))
        .unwrap(),
    );
    c.spec.storage.as_mut().unwrap().replicas = Some(2);
    o.cluster = Arc::new(c);
    let s = settings(&o.cluster);
    let d = decide(&o, &s, &timing()).unwrap();
    let names: Vec<String> = d
        .services
        .iter()
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    assert!(names.contains(&"garage-2-rpc".to_owned()), "{names:?}");
    assert!(d.delete_services.is_empty(), "{:?}", d.delete_services);
    // Once slot 2's node is gone, its Service is deleted.
    o.generated.remove(&2);
    o.services = d.services.clone();
    for svc in &mut o.services {
        svc.metadata.uid = Some(format!("svc-{}", svc.metadata.name.clone().unwrap()));
    }
    let d = decide(&o, &s, &timing()).unwrap();
    assert_eq!(
        d.delete_services,
        [("garage-2-rpc".to_owned(), "svc-garage-2-rpc".to_owned())]
    );
}

#[test]
fn a_member_seen_running_its_identity_before_its_role_does_not_hold_layout_changes() {
    use k8s_openapi::api::core::v1::{ContainerStatus, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use shared_types::keys::annotation::ANNOTATION_SEEN_WITHOUT_ROLE;
    // Member 1's pod was created just now and holds its role; manual-a joins.
    let mut o = converged();
    o.user_nodes.push(manual("manual-a", Some(id(9))));
    o.pods.push(pod("manual-a", 30, "sts-m"));
    let now = o.now;
    let set = |o: &mut Observed, mark: Option<String>, restarts: i32| {
        let p = o
            .pods
            .iter_mut()
            .find(|p| p.metadata.name.as_deref() == Some("garage-storage-1-0"))
            .unwrap();
        p.metadata.creation_timestamp = Some(Time(now));
        p.metadata.annotations =
            mark.map(|m| BTreeMap::from([(ANNOTATION_SEEN_WITHOUT_ROLE.to_string(), m)]));
        p.status
            .get_or_insert_with(PodStatus::default)
            .container_statuses = Some(vec![
            ContainerStatus {
                name: "garage".into(),
                restart_count: restarts,
                ..Default::default()
            },
            // A sidecar's restarts make no new Garage process.
            ContainerStatus {
                name: "proxy".into(),
                restart_count: 5,
                ..Default::default()
            },
        ]);
    };
    let held = |o: &Observed| {
        decide(o, &settings(&o.cluster), &timing())
            .unwrap()
            .layout
            .is_none()
    };

    // Nothing is marked before the cluster has recorded the layout version it saw.
    set(&mut o, None, 0);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.seen_without_role.is_empty());
    let seen = match &o.garage {
        GarageView::Read(r) => i64::try_from(r.layout.version).unwrap(),
        GarageView::Unavailable(_) => unreachable!(),
    };
    std::sync::Arc::make_mut(&mut o.cluster)
        .status
        .get_or_insert_with(Default::default)
        .layout_version = Some(seen);
    // No mark: a pod this young holding a role may be a restart, and holds the change.
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.layout.is_none(), "a possible restart holds the change");
    let marks: Vec<(String, String, String)> = d
        .seen_without_role
        .iter()
        .map(|m| (m.pod.clone(), m.uid.clone(), m.value.clone()))
        .collect();
    assert_eq!(
        marks,
        [(
            "manual-a-0".to_string(),
            "pod-manual-a".to_string(),
            format!("{}/0", id(9))
        )],
        "the joining member runs its identity without a role: its pod is marked"
    );
    // Marked for the process it runs: its role came after that process started.
    set(&mut o, Some(format!("{}/0", id(1))), 0);
    assert!(!held(&o), "no restart to wait out");
    // Marked for another identity, or for a process before a restart: no proof.
    set(&mut o, Some(format!("{}/0", id(7))), 0);
    assert!(held(&o));
    set(&mut o, Some(format!("{}/0", id(1))), 1);
    assert!(held(&o), "its container restarted since the mark");
    // Read through a node behind the cluster, every member looks role-less: nothing is marked.
    set(&mut o, None, 0);
    std::sync::Arc::make_mut(&mut o.cluster)
        .status
        .get_or_insert_with(Default::default)
        .layout_version = Some(99);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.seen_without_role.is_empty());
}
