//! Layout: assign and apply, version guard, preview, revert, removal draining until the
//! trackers catch up, gateway roles, skip-dead-nodes.

use std::time::Duration;

use garage_admin::{
    GarageError, HealthStatus, LayoutPreview, LayoutVersionStatus, NodeHealth, RoleChange,
    StagedRoleChange,
};
use garage_fixture::Signal;

use crate::common::{client, cluster, eventually, node_id};

const GIB: u64 = 1 << 30;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_storage_nodes_a_gateway_and_a_draining_removal() {
    // Four processes: three storage nodes and one gateway; replication factor 2 so that a
    // storage role can be removed later.
    let mut cluster = cluster(4, 2);
    let admin = client(&cluster, 0);
    let ids: Vec<_> = (0..4).map(|i| node_id(&cluster, i)).collect();
    assert_eq!(admin.local_node_id().await.unwrap(), ids[0]);

    // Connecting is idempotent for a known peer and reports an unreachable one per peer.
    let unreachable = format!("{}@127.0.0.1:9", "ab".repeat(32));
    let results = admin
        .connect_nodes(&[cluster.peer(1), unreachable])
        .await
        .unwrap();
    assert!(results[0].success, "{results:?}");
    assert!(
        !results[1].success && results[1].error.is_some(),
        "{results:?}"
    );

    let fresh = admin.layout().await.unwrap();
    assert_eq!(fresh.version, 0);
    assert!(fresh.roles.is_empty());
    assert!(matches!(
        admin.health().await.unwrap(),
        NodeHealth::NotReady(_)
    ));

    let mut roles: Vec<_> = (0..3)
        .map(|i| RoleChange::storage(ids[i].clone(), format!("dc{i}"), GIB, vec![]))
        .collect();
    roles.push(RoleChange::gateway(
        ids[3].clone(),
        "dc0",
        vec!["edge".into()],
    ));
    let staged = admin.stage_layout(&roles, None).await.unwrap();
    assert_eq!(staged.staged_role_changes.len(), 4);
    assert!(staged.has_staged_changes());
    let gateway_staged = staged
        .staged_role_changes
        .iter()
        .find(|c| c.id() == &ids[3])
        .unwrap();
    assert!(matches!(
        gateway_staged,
        StagedRoleChange::Assign { capacity: None, .. }
    ));

    match admin.preview_layout().await.unwrap() {
        LayoutPreview::Success { new_layout, .. } => assert_eq!(new_layout.roles.len(), 4),
        LayoutPreview::Error { error } => panic!("preview failed: {error}"),
    }

    // The version guard: anything but current + 1 is refused, typed.
    match admin.apply_layout(2).await {
        Err(GarageError::LayoutVersionMismatch {
            requested: 2,
            current: Some(0),
            ..
        }) => {}
        other => panic!("expected a version mismatch, got {other:?}"),
    }

    let applied = admin.apply_layout(1).await.unwrap();
    assert_eq!(applied.layout.version, 1);
    assert!(applied.layout.staged_role_changes.is_empty());
    let gateway = applied.layout.role(&ids[3]).unwrap();
    assert_eq!(gateway.capacity, None);
    assert_eq!(gateway.tags, vec!["edge".to_string()]);
    assert_eq!(applied.layout.role(&ids[0]).unwrap().capacity, Some(GIB));

    let history = admin.layout_history().await.unwrap();
    assert_eq!(history.current_version, 1);
    let current = history.versions.iter().find(|v| v.version == 1).unwrap();
    assert_eq!(current.status, LayoutVersionStatus::Current);
    assert_eq!((current.storage_nodes, current.gateway_nodes), (3, 1));

    eventually("a healthy cluster", Duration::from_secs(60), || async {
        let h = admin.cluster_health().await.ok()?;
        (h.status == HealthStatus::Healthy && h.partitions_all_ok == h.partitions).then_some(h)
    })
    .await;
    let status = admin.cluster_status().await.unwrap();
    assert_eq!(status.layout_version, 1);
    let gw = status.nodes.iter().find(|n| n.id == ids[3]).unwrap();
    assert_eq!(gw.role.as_ref().unwrap().capacity, None);

    // Staged changes can be dropped.
    admin
        .stage_layout(
            &[RoleChange::storage(ids[1].clone(), "dc1", 2 * GIB, vec![])],
            None,
        )
        .await
        .unwrap();
    let reverted = admin.revert_layout().await.unwrap();
    assert!(reverted.staged_role_changes.is_empty());
    assert_eq!(reverted.version, 1);

    // Remove node 2's storage role while node 1 is paused: node 1 cannot acknowledge or
    // sync version 2, so version 1 must stay Draining until it is resumed.
    cluster.signal(1, Signal::SIGSTOP).unwrap();
    admin
        .stage_layout(&[RoleChange::remove(ids[2].clone())], None)
        .await
        .unwrap();
    let applied = admin.apply_layout(2).await.unwrap();
    assert_eq!(applied.layout.version, 2);
    assert!(applied.layout.role(&ids[2]).is_none());

    tokio::time::sleep(Duration::from_secs(2)).await;
    let history = admin.layout_history().await.unwrap();
    assert_eq!(history.current_version, 2);
    let draining: Vec<u64> = history.draining_versions().map(|v| v.version).collect();
    assert_eq!(draining, vec![1], "history: {history:?}");
    assert!(!history.data_migration_settled() && !history.is_settled());
    let trackers = history.update_trackers.as_ref().unwrap();
    assert!(
        trackers[&ids[1]].sync < 2,
        "paused node synced: {trackers:?}"
    );

    cluster.signal(1, Signal::SIGCONT).unwrap();
    let settled = eventually(
        "the trackers to catch up with version 2",
        Duration::from_secs(120),
        || async {
            let h = admin.layout_history().await.ok()?;
            (h.draining_versions().count() == 0).then_some(h)
        },
    )
    .await;
    assert!(settled.is_settled(), "{settled:?}");
    assert!(
        settled
            .versions
            .iter()
            .any(|v| v.version == 1 && v.status == LayoutVersionStatus::Historical)
            || settled.versions.iter().all(|v| v.version != 1),
        "{settled:?}"
    );

    // A dead gateway never acknowledges the next version; skip-dead-nodes moves its tracker.
    cluster.kill(3).unwrap();
    eventually(
        "the gateway to be seen down",
        Duration::from_secs(30),
        || async {
            let s = admin.cluster_status().await.ok()?;
            s.nodes
                .iter()
                .any(|n| n.id == ids[3] && !n.is_up)
                .then_some(())
        },
    )
    .await;
    admin
        .stage_layout(&[RoleChange::remove(ids[3].clone())], None)
        .await
        .unwrap();
    admin.apply_layout(3).await.unwrap();
    let skipped = admin.skip_dead_nodes(3, false).await.unwrap();
    assert!(skipped.ack_updated.contains(&ids[3]), "{skipped:?}");
    assert!(skipped.sync_updated.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skip_dead_nodes_with_nothing_to_skip_is_a_bad_request() {
    let cluster = cluster(1, 1);
    cluster.bootstrap_layout(GIB, 1).unwrap();
    let admin = client(&cluster, 0);
    match admin.skip_dead_nodes(1, false).await {
        Err(GarageError::BadRequest { .. }) => {}
        other => panic!("expected a 400, got {other:?}"),
    }
}
