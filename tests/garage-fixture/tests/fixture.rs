//! The fixture itself: sizes, addresses, kill and restart, and no process left behind.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use garage_fixture::{ClusterOptions, FixtureError, GarageCluster, MAX_NODES};
use nix::sys::signal::kill;
use nix::unistd::Pid;

fn alive(pid: u32) -> bool {
    kill(Pid::from_raw(pid as i32), None).is_ok()
}

#[test]
fn sizes_outside_one_to_five_are_refused() {
    for n in [0, MAX_NODES + 1] {
        match GarageCluster::start(ClusterOptions::new(n)) {
            Err(FixtureError::Invalid(_)) => {}
            other => panic!("{n} nodes: expected Invalid, got {other:?}"),
        }
    }
}

#[test]
fn five_nodes_connect_restart_and_leave_no_process_behind() {
    let mut cluster = GarageCluster::start(ClusterOptions::new(MAX_NODES)).unwrap();
    let ips: std::collections::BTreeSet<_> = (0..cluster.len()).map(|i| cluster.ip(i)).collect();
    assert_eq!(ips.len(), MAX_NODES, "every node has its own address");
    cluster.connect_all().unwrap();

    let before = cluster.pid(4).unwrap();
    cluster.kill(4).unwrap();
    assert!(!alive(before));
    assert!(!cluster.is_running(4));
    cluster.restart(4).unwrap();
    assert!(cluster.is_running(4));
    cluster.connect_all().unwrap();
    let status = cluster
        .admin_json(4, "GET", "/v2/GetClusterStatus", None)
        .unwrap();
    assert_eq!(status["nodes"].as_array().unwrap().len(), MAX_NODES);

    let pids: Vec<u32> = (0..cluster.len()).filter_map(|i| cluster.pid(i)).collect();
    let root = cluster.root().to_path_buf();
    drop(cluster);
    for pid in pids {
        assert!(!alive(pid), "garage {pid} survived the fixture");
    }
    assert!(!root.exists(), "{} was not removed", root.display());
}
