//! Table tests of the HA rules on GarageClusters: pool HostPaths inside the install's roots
//! and outside the Node's system, Garage containers without privilege, unchanged values
//! not judged again, and an install that widens both.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use super::tests::{create, create_with, pool, pool_base, run, set, update, update_with};
use crate::admission::Context;
use crate::admission::host_access::HostAccessPolicy;

#[test]
fn pool_host_paths_stay_inside_the_install_roots() {
    let at = |root: &str| {
        set(
            pool_base(),
            "/spec/storage/nodeLocalPools/0",
            pool("local-700", root),
        )
    };
    let data = |path: &str| {
        set(
            pool_base(),
            "/spec/storage/nodeLocalPools/0/data/hostPath",
            json!(path),
        )
    };
    let multi = set(
        super::tests::del(pool_base(), "/spec/storage/nodeLocalPools/0/data"),
        "/spec/storage/nodeLocalPools/0/dataPaths",
        json!([{"path": "/data/a", "hostPath": "/var/lib/kubelet/x", "capacity": "700Gi"}]),
    );
    run(vec![
        ("documented root", create(&at("/var/lib/garage/x")), None),
        ("/mnt", create(&at("/mnt/disk1")), None),
        ("/srv", create(&at("/srv/garage")), None),
        ("/data", create(&at("/data/garage")), None),
        ("/etc", create(&data("/etc/cron.d")), Some("HA-PATH")),
        (
            "kubelet state",
            create(&at("/var/lib/kubelet")),
            Some("HA-PATH"),
        ),
        (
            "a home directory",
            create(&data("/home/me")),
            Some("HA-PATH"),
        ),
        ("a dataPaths entry", create(&multi), Some("HA-PATH")),
    ]);
    let v = create(&data("/etc/cron.d"));
    let msg = v.message();
    assert!(
        msg.contains("spec.storage.nodeLocalPools[0].data.hostPath"),
        "{msg}"
    );
    let v = create(&data("/home/me"));
    assert!(
        v.message().contains("garageSecurity.hostPathRoots"),
        "{}",
        v.message()
    );
}

#[test]
fn an_install_decides_the_roots_and_old_paths_are_kept() {
    let ctx = Context {
        host_access: HostAccessPolicy::new(&["/disks".into()], false).unwrap(),
        ..Context::default()
    };
    let outside = set(
        pool_base(),
        "/spec/storage/nodeLocalPools/0",
        pool("local-700", "/home/garage"),
    );
    let inside = set(
        pool_base(),
        "/spec/storage/nodeLocalPools/0",
        pool("local-700", "/disks/a"),
    );
    let relabelled = set(outside.clone(), "/metadata/labels", json!({"team": "x"}));
    run(vec![
        ("the install's root", create_with(&inside, &ctx), None),
        ("outside it", create_with(&outside, &ctx), Some("HA-PATH")),
        (
            "a path the cluster already had",
            update_with(&outside, &relabelled, &ctx),
            None,
        ),
        (
            "a new path outside",
            update(
                &pool_base(),
                &set(
                    pool_base(),
                    "/spec/storage/nodeLocalPools/0/data/hostPath",
                    json!("/home/new"),
                ),
            ),
            Some("HA-PATH"),
        ),
    ]);
}

#[test]
fn garage_containers_get_no_privilege() {
    let base = pool_base();
    let storage =
        |sc: serde_json::Value| set(base.clone(), "/spec/storage/containerSecurityContext", sc);
    let pool_sc = |sc: serde_json::Value| {
        set(
            base.clone(),
            "/spec/storage/nodeLocalPools/0/podTemplate",
            json!({"containerSecurityContext": sc}),
        )
    };
    run(vec![
        (
            "hardened",
            create(&storage(
                json!({"capabilities": {"drop": ["ALL"]}, "allowPrivilegeEscalation": false}),
            )),
            None,
        ),
        (
            "privileged",
            create(&storage(json!({"privileged": true}))),
            Some("HA-PRIV"),
        ),
        (
            "added capability",
            create(&storage(json!({"capabilities": {"add": ["SYS_ADMIN"]}}))),
            Some("HA-PRIV"),
        ),
        (
            "a pool's privileged template",
            create(&pool_sc(json!({"privileged": true}))),
            Some("HA-PRIV"),
        ),
        (
            "privilege escalation",
            create(&storage(json!({"allowPrivilegeEscalation": true}))),
            Some("HA-PRIV"),
        ),
    ]);
    let v = create(&storage(json!({"privileged": true})));
    assert!(
        v.message()
            .contains("spec.storage.containerSecurityContext.privileged"),
        "{}",
        v.message()
    );
    let open = Context {
        host_access: HostAccessPolicy::new(&[], true).unwrap(),
        ..Context::default()
    };
    assert!(create_with(&storage(json!({"privileged": true})), &open).allowed());
    let privileged = storage(json!({"privileged": true}));
    let relabelled = set(privileged.clone(), "/metadata/labels", json!({"team": "x"}));
    assert!(
        update(&privileged, &relabelled).allowed(),
        "unchanged: not judged again"
    );
}
