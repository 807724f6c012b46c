//! The controllers' watches after a real kube-apiserver restart. Every watch fails once then
//! (its resource version is older than the new watch cache). A controller built the way the
//! reconciler builds its own ([`reconciler::controller::triggers`]) hears a change to its own
//! object, and one reaching it through a watch of another namespace, as soon as the API
//! server is back; the failures of its 30 other watches hold nothing up.
//!
//! `cargo test -p reconciler --test watch_recovery`

// A failed expectation in a test is the test failing; panics are the point.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client};
use localcluster::{LocalCluster, Options};
use reconciler::controller::triggers;
use serde_json::json;

/// The namespace of the controller's own object.
const NS: &str = "watched";
/// Namespaces watched beside it, as the reconciler watches one kind in every namespace.
const OTHERS: usize = 30;
/// Far above the few seconds a recovered watch takes, far below the minutes the merged
/// back-off of `Controller::new` held every change back in the same scenario.
const HEARD_WITHIN: Duration = Duration::from_secs(60);

async fn create_namespace(client: &Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

async fn create_map(api: &Api<ConfigMap>, name: &str) {
    let map = serde_json::from_value(json!({"metadata": {"name": name}, "data": {"n": "0"}}));
    api.create(&PostParams::default(), &map.unwrap())
        .await
        .unwrap();
}

/// Sets `n` on a ConfigMap until the API server takes it (it may still be coming back).
async fn set(api: &Api<ConfigMap>, name: &str, n: &str) {
    let patch = Patch::Merge(json!({"data": {"n": n}}));
    let deadline = Instant::now() + Duration::from_secs(60);
    while api
        .patch(name, &PatchParams::default(), &patch)
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "the API server never took {name}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the controller has reconciled after seeing `n` where `seen` records it.
async fn heard(seen: &Mutex<Vec<String>>, n: &str, since: Instant, what: &str) -> Duration {
    while !seen.lock().unwrap().iter().any(|s| s == n) {
        assert!(
            since.elapsed() < HEARD_WITHIN,
            "{what} not reconciled {HEARD_WITHIN:?} after it was made (seen: {:?})",
            seen.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    since.elapsed()
}

#[tokio::test(flavor = "multi_thread")]
async fn changes_are_heard_as_soon_as_a_restarted_api_server_is_back() {
    let mut cluster = LocalCluster::start(Options {
        name: "watch-recovery".into(),
        ..Options::default()
    })
    .await
    .expect("the local cluster needs its tools: run `cargo xtask tools`");
    let client = cluster.client().await.unwrap();
    create_namespace(&client, NS).await;
    let own: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    create_map(&own, "probe").await;
    let mut controller = triggers::controller(own.clone(), watcher::Config::default());
    let mut others = Vec::new();
    for i in 0..OTHERS {
        let ns = format!("other-{i}");
        create_namespace(&client, &ns).await;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
        create_map(&api, "nudge").await;
        // Any nudge in another namespace wakes the probe.
        controller = controller.watches_stream(
            triggers::touched(api.clone(), watcher::Config::default()),
            |_: ConfigMap| Some(ObjectRef::<ConfigMap>::new("probe").within(NS)),
        );
        others.push(api);
    }
    // What each pass saw: the probe's `n`, or the nudge it was woken for.
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let nudges = others.clone();
    let record = seen.clone();
    let passes = controller
        .run(
            move |probe: Arc<ConfigMap>, _: Arc<()>| {
                let record = record.clone();
                let nudges = nudges.clone();
                async move {
                    let n = probe.data.as_ref().and_then(|d| d.get("n").cloned());
                    record.lock().unwrap().extend(n);
                    // A woken pass reads its neighbours, as the reconciler's passes do.
                    if let Ok(nudge) = nudges[OTHERS - 1].get("nudge").await {
                        let n = nudge.data.and_then(|d| d.get("n").cloned());
                        record
                            .lock()
                            .unwrap()
                            .extend(n.map(|n| format!("nudge {n}")));
                    }
                    Ok::<_, kube::Error>(Action::await_change())
                }
            },
            |_, _, _| Action::await_change(),
            Arc::new(()),
        )
        .for_each(|_| futures::future::ready(()));
    let passes = tokio::spawn(passes);
    heard(&seen, "0", Instant::now(), "the first pass").await;

    let away = cluster.restart_apiserver().await.unwrap();
    println!("the API server was away for {:.1}s", away.as_secs_f64());
    let since = Instant::now();
    set(&own, "probe", "1").await;
    let own_change = heard(&seen, "1", since, "a change to the object itself").await;
    println!(
        "a change to the object itself: heard in {:.1}s",
        own_change.as_secs_f64()
    );
    let since = Instant::now();
    set(&others[OTHERS - 1], "nudge", "1").await;
    let nudge = heard(&seen, "nudge 1", since, "a change in a watched namespace").await;
    println!(
        "a change in a watched namespace: heard in {:.1}s",
        nudge.as_secs_f64()
    );
    passes.abort();
}
