//! Every controller that acts for a GarageCluster passes the gate before its first write:
//! each one, given a deleting object (the case where a finalizer would be removed) of a
//! cluster another install manages, reads the cluster, warns, and writes nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use axum::http::Method;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::controller::Action;
use serde_json::json;
use shared_types::garage_admin_token::GarageAdminToken;
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_key::GarageKey;
use shared_types::keys::finalizer;

use super::gate::{Answers, Seen, answers, cluster, fake, methods, ok_cluster};
use crate::controller::garage_objects::{Stores, admin_token, bucket, key};
use crate::controller::{Context, cluster as cluster_controller, node};

/// Answers for a cluster that names another install.
fn foreign() -> Answers {
    Answers {
        get: ok_cluster(Some("other/leader")),
        ..answers()
    }
}

/// `kind` in namespace `ns` named `x`, being deleted and holding `finalizer`.
fn deleting<K: serde::de::DeserializeOwned>(kind: &str, finalizer: &str) -> Arc<K> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "garage.rajsingh.info/v1beta1", "kind": kind,
            "metadata": {"name": "x", "namespace": "ns", "uid": "x-1",
                         "deletionTimestamp": "2030-01-01T00:00:00Z",
                         "finalizers": [finalizer]},
            "spec": {"clusterRef": {"name": "garage"}},
        }))
        .unwrap(),
    )
}

/// A deletion timestamp.
fn gone() -> Time {
    Time("2030-01-01T00:00:00Z".parse().unwrap())
}

fn no_stores() -> Arc<Stores> {
    Arc::new(Stores {
        keys: Vec::new(),
        buckets: Vec::new(),
        namespaces: Vec::new(),
    })
}

/// The pass ended with the foreign requeue, after no request but reads and the Event.
fn left_alone(ctx: &Context, seen: &Mutex<Vec<Seen>>, action: Action, who: &str) {
    assert_eq!(action, Action::requeue(ctx.config.resync), "{who}");
    let seen = methods(seen);
    assert!(
        seen.iter()
            .all(|(m, p)| *m == Method::GET || (*m == Method::POST && p.ends_with("/events"))),
        "{who}: {seen:?}"
    );
    assert!(
        seen.iter().any(|(_, p)| p.ends_with("/events")),
        "{who} did not warn: {seen:?}"
    );
    assert_eq!(ctx.metrics.api_writes(), 0, "{who}");
}

#[tokio::test]
async fn the_cluster_controller_neither_tears_down_nor_releases_a_foreign_cluster() {
    let (ctx, seen) = fake(foreign()).await;
    let mut c = cluster(Some("other/leader"));
    c.metadata.deletion_timestamp = Some(gone());
    c.metadata.finalizers = Some(vec![finalizer::FINALIZER_CLUSTER.into()]);
    let action = cluster_controller::reconcile(Arc::new(c), ctx.clone())
        .await
        .unwrap();
    left_alone(&ctx, &seen, action, "GarageCluster");
}

#[tokio::test]
async fn the_node_controller_keeps_its_hands_off_a_foreign_clusters_node() {
    let (ctx, seen) = fake(foreign()).await;
    let c = cluster(None);
    let mut gn = decide::fixtures::generated(&c, 0, None);
    gn.metadata.deletion_timestamp = Some(gone());
    let action = node::reconcile(Arc::new(gn), ctx.clone()).await.unwrap();
    left_alone(&ctx, &seen, action, "GarageNode");
}

#[tokio::test]
async fn keys_buckets_and_tokens_of_a_foreign_cluster_keep_their_finalizers() {
    let (ctx, seen) = fake(foreign()).await;
    let k: Arc<GarageKey> = deleting("GarageKey", finalizer::FINALIZER_KEY);
    let action = key::reconcile(k, ctx.clone(), no_stores()).await.unwrap();
    left_alone(&ctx, &seen, action, "GarageKey");

    let (ctx, seen) = fake(foreign()).await;
    let b: Arc<GarageBucket> = deleting("GarageBucket", finalizer::FINALIZER_BUCKET);
    let action = bucket::reconcile(b, ctx.clone(), no_stores())
        .await
        .unwrap();
    left_alone(&ctx, &seen, action, "GarageBucket");

    let (ctx, seen) = fake(foreign()).await;
    let t: Arc<GarageAdminToken> = deleting("GarageAdminToken", finalizer::FINALIZER_ADMIN_TOKEN);
    let action = admin_token::reconcile(t, ctx.clone()).await.unwrap();
    left_alone(&ctx, &seen, action, "GarageAdminToken");
}

#[tokio::test]
async fn a_live_key_of_a_foreign_cluster_gets_no_finalizer_and_no_status() {
    let (ctx, seen) = fake(foreign()).await;
    let k: GarageKey = serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageKey",
        "metadata": {"name": "k", "namespace": "ns", "uid": "k-1"},
        "spec": {"clusterRef": {"name": "garage"}},
    }))
    .unwrap();
    let action = key::reconcile(Arc::new(k), ctx.clone(), no_stores())
        .await
        .unwrap();
    left_alone(&ctx, &seen, action, "live GarageKey");
}
