//! Killed nodes: per-node failures surface, quorum loss is a typed, retryable 503 and never
//! reads as "absent".

use std::time::Duration;

use garage_admin::{
    AdminClient, AdminToken, BucketLookup, ClientConfig, CreateBucket, GarageError, HealthStatus,
    NodeHealth, NodeTarget, WorkerFilter,
};
use garage_fixture::Signal;

use crate::common::{client, cluster, eventually, impatient_client, node_id, single_node};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_nodes_give_partial_results_and_typed_503() {
    let mut cluster = cluster(3, 3);
    cluster.bootstrap_layout(1 << 30, 3).unwrap();
    let admin = client(&cluster, 0);
    let bucket = admin
        .create_bucket(&CreateBucket {
            global_alias: Some("survivor".into()),
            ..CreateBucket::default()
        })
        .await
        .unwrap();
    let all = admin
        .node_info(&NodeTarget::All)
        .await
        .unwrap()
        .into_complete()
        .unwrap();
    assert_eq!(all.len(), 3);

    // One node down: node-local calls on every node report it, and keep the others' answers.
    let dead = node_id(&cluster, 2);
    cluster.kill(2).unwrap();
    let workers = admin
        .list_workers(&NodeTarget::All, WorkerFilter::default())
        .await
        .unwrap();
    assert!(!workers.is_complete());
    assert!(
        workers.failures().contains_key(&dead),
        "{:?}",
        workers.failures()
    );
    assert_eq!(workers.successes().len(), 2);
    match workers.into_complete() {
        Err(e @ GarageError::PartialFailure { succeeded: 2, .. }) => {
            assert!(e.to_string().contains(dead.short()), "{e}");
            assert!(e.is_retryable() && !e.is_not_found());
        }
        other => panic!("expected a partial failure, got {other:?}"),
    }
    let single = admin
        .node_info(&NodeTarget::Node(dead.clone()))
        .await
        .unwrap();
    assert!(single.failures().contains_key(&dead));
    assert!(single.into_single().is_err());
    // Two of three replicas still make a quorum.
    admin
        .bucket_info(BucketLookup::Id(&bucket.id))
        .await
        .unwrap();

    // Two nodes down: no quorum. Reads and writes are 503s, typed and retryable; an existing
    // bucket is never reported absent.
    cluster.kill(1).unwrap();
    let impatient = impatient_client(&cluster, 0);
    eventually(
        "node 0 to see the quorum lost",
        Duration::from_secs(30),
        || async {
            let h = impatient.cluster_health().await.ok()?;
            (h.status == HealthStatus::Unavailable).then_some(())
        },
    )
    .await;
    let read = impatient
        .bucket_info(BucketLookup::GlobalAlias("survivor"))
        .await
        .unwrap_err();
    assert!(matches!(read, GarageError::Unavailable { .. }), "{read:?}");
    assert!(read.is_retryable() && !read.is_not_found());
    let write = impatient
        .create_bucket(&CreateBucket {
            global_alias: Some("during-outage".into()),
            ..CreateBucket::default()
        })
        .await
        .unwrap_err();
    assert!(
        matches!(write, GarageError::Unavailable { .. }),
        "{write:?}"
    );
    assert!(matches!(
        impatient.health().await.unwrap(),
        NodeHealth::NotReady(_)
    ));

    // The API of a killed node does not answer at all: a transport error, retryable.
    let gone = impatient_client(&cluster, 2)
        .cluster_status()
        .await
        .unwrap_err();
    assert!(matches!(gone, GarageError::Transport { .. }), "{gone:?}");
    assert!(gone.is_retryable() && !gone.is_not_found());

    // Back to quorum: the bucket is there again.
    cluster.restart(1).unwrap();
    eventually("quorum to return", Duration::from_secs(60), || async {
        admin.bucket_info(BucketLookup::Id(&bucket.id)).await.ok()
    })
    .await;
    assert_eq!(admin.health().await.unwrap(), NodeHealth::Ready);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_garage_times_out() {
    let cluster = single_node();
    let config = ClientConfig {
        timeout: Duration::from_secs(1),
        read_retries: 1,
        backoff: Duration::from_millis(50),
        ..ClientConfig::default()
    };
    let admin = AdminClient::with_config(
        &cluster.admin_endpoint(0),
        &AdminToken::new(cluster.admin_token()),
        config,
    )
    .unwrap();
    admin.cluster_status().await.unwrap();

    // SIGSTOP: the socket still accepts, nothing answers.
    cluster.signal(0, Signal::SIGSTOP).unwrap();
    let started = std::time::Instant::now();
    let err = admin.cluster_status().await.unwrap_err();
    assert!(matches!(err, GarageError::Timeout { .. }), "{err:?}");
    assert!(err.is_retryable() && !err.is_not_found());
    assert!(!err.to_string().contains(cluster.admin_token()));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let err = admin.delete_bucket("0000").await.unwrap_err();
    assert!(matches!(err, GarageError::Timeout { .. }), "{err:?}");

    cluster.signal(0, Signal::SIGCONT).unwrap();
    admin.cluster_status().await.unwrap();
}

/// A key entry Garage cannot decode (written by another version, or damaged) makes reading a
/// bucket granted to that key a 500 the client types as a metadata decode failure, never as an
/// absent bucket; the entry restored, the bucket reads again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_key_entry_is_a_metadata_decode_failure() {
    use garage_admin::{BucketPermissions, KeySpec};
    let cluster = single_node();
    let admin = client(&cluster, 0);
    let key = admin.create_key(&KeySpec::default()).await.unwrap();
    let bucket = admin
        .create_bucket(&CreateBucket {
            global_alias: Some("damaged".into()),
            ..CreateBucket::default()
        })
        .await
        .unwrap();
    let read = BucketPermissions {
        read: true,
        write: false,
        owner: false,
    };
    admin
        .allow_bucket_key(&bucket.id, &key.access_key_id, read)
        .await
        .unwrap();
    let damaged = garage_fixture::metadata::damage(
        &cluster.metadata_dir(0),
        "key",
        key.access_key_id.as_bytes(),
    )
    .unwrap();
    let failed = admin
        .bucket_info(BucketLookup::Id(&bucket.id))
        .await
        .unwrap_err();
    assert!(failed.is_metadata_decode(), "{failed:?}");
    assert!(!failed.is_not_found() && !failed.is_timeout(), "{failed:?}");
    garage_fixture::metadata::restore(&cluster.metadata_dir(0), &damaged).unwrap();
    let info = admin
        .bucket_info(BucketLookup::Id(&bucket.id))
        .await
        .unwrap();
    assert_eq!(info.keys.len(), 1);
}
