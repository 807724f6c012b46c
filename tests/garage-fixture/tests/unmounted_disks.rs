//! What real Garage does when a disk is not mounted on a later start, which the operator relies
//! on for node-local pools whose HostPaths are `DirectoryOrCreate` (the kubelet then creates an
//! empty directory where the disk should be, and no `.garage-volume-id` marker is mounted):
//!
//! - an empty data directory beside the node's existing metadata: Garage refuses to start,
//!   because the data directory lacks the `garage-marker` file it wrote on the first start, so
//!   no block lands on the Node's root file system;
//! - an empty metadata directory: Garage starts as a new identity, which the operator reports
//!   (`IdentityChanged`, no layout write) instead of giving it the old role.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use garage_fixture::{ClusterOptions, GarageCluster};

fn empty(dir: &std::path::Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path).unwrap();
        } else {
            std::fs::remove_file(&path).unwrap();
        }
    }
}

#[test]
fn an_empty_data_directory_stops_garage_on_a_later_start() {
    let mut cluster = GarageCluster::start(ClusterOptions::new(1)).unwrap();
    assert!(
        cluster.data_dir(0).join("garage-marker").exists(),
        "the first start writes the marker"
    );
    cluster.kill(0).unwrap();
    empty(&cluster.data_dir(0));
    let err = cluster
        .restart(0)
        .expect_err("Garage started on an empty data directory");
    let log = std::fs::read_to_string(cluster.log_path(0)).unwrap();
    assert!(
        log.contains("garage-marker"),
        "Garage's refusal names its marker: {err}\n{log}"
    );
    assert!(!cluster.is_running(0));
    assert!(
        std::fs::read_dir(cluster.data_dir(0))
            .unwrap()
            .next()
            .is_none(),
        "nothing was written into the empty data directory"
    );
}

#[test]
fn an_empty_metadata_directory_starts_a_new_identity() {
    let mut cluster = GarageCluster::start(ClusterOptions::new(1)).unwrap();
    let before = cluster.node_id(0).to_owned();
    cluster.kill(0).unwrap();
    empty(&cluster.metadata_dir(0));
    let err = cluster
        .restart(0)
        .expect_err("an empty metadata directory kept the old identity");
    assert!(
        err.to_string().contains(&before),
        "the restart reports another identity than {before}: {err}"
    );
}
