//! Shared helpers: clients, waiting, and a tiny S3 client for putting test data.

use std::future::Future;
use std::time::{Duration, Instant};

use garage_fixture::{ClusterOptions, GarageCluster};
use reconciler::garage::{
    AdminClient, AdminToken, BucketPermissions, ClientConfig, CreateBucket, KeySpec, NodeId,
};
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};

/// Starts `nodes` garage processes with replication factor `rf`, connected to each other.
pub fn cluster(nodes: usize, rf: usize) -> GarageCluster {
    let cluster = GarageCluster::start(ClusterOptions::new(nodes).replication_factor(rf))
        .unwrap_or_else(|e| panic!("{e}"));
    cluster.connect_all().unwrap_or_else(|e| panic!("{e}"));
    cluster
}

/// A single-node cluster (replication factor 1) with a 1 GiB layout applied.
pub fn single_node() -> GarageCluster {
    let cluster = cluster(1, 1);
    cluster
        .bootstrap_layout(1 << 30, 1)
        .unwrap_or_else(|e| panic!("{e}"));
    cluster
}

/// A client of `node` with the default configuration.
pub fn client(cluster: &GarageCluster, node: usize) -> AdminClient {
    AdminClient::new(
        &cluster.admin_endpoint(node),
        &AdminToken::new(cluster.admin_token()),
    )
    .unwrap()
}

/// A client of `node` that gives up quickly (fault tests).
pub fn impatient_client(cluster: &GarageCluster, node: usize) -> AdminClient {
    let config = ClientConfig {
        timeout: Duration::from_secs(5),
        read_retries: 1,
        backoff: Duration::from_millis(100),
        ..ClientConfig::default()
    };
    AdminClient::with_config(
        &cluster.admin_endpoint(node),
        &AdminToken::new(cluster.admin_token()),
        config,
    )
    .unwrap()
}

/// The node's id, typed.
pub fn node_id(cluster: &GarageCluster, node: usize) -> NodeId {
    cluster.node_id(node).parse().unwrap()
}

/// Polls `probe` every 200 ms until it returns `Some`, or panics after `timeout`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// An S3 key with read/write on a new bucket named `bucket`.
pub struct S3Access {
    /// Bucket id.
    pub bucket_id: String,
    bucket: Bucket,
    credentials: Credentials,
    http: reqwest::Client,
}

impl S3Access {
    /// Creates a key and a bucket through the Admin API and grants the key read and write.
    pub async fn create(cluster: &GarageCluster, admin: &AdminClient, bucket: &str) -> Self {
        let key = admin
            .create_key(&KeySpec {
                name: Some(format!("{bucket}-key")),
                ..KeySpec::default()
            })
            .await
            .unwrap();
        let info = admin
            .create_bucket(&CreateBucket {
                global_alias: Some(bucket.to_string()),
                ..CreateBucket::default()
            })
            .await
            .unwrap();
        let rw = BucketPermissions {
            read: true,
            write: true,
            owner: false,
        };
        admin
            .allow_bucket_key(&info.id, &key.access_key_id, rw)
            .await
            .unwrap();
        let endpoint = url::Url::parse(&cluster.s3_endpoint(0)).unwrap();
        let bucket = Bucket::new(
            endpoint,
            UrlStyle::Path,
            bucket.to_string(),
            garage_fixture::config::S3_REGION,
        )
        .unwrap();
        let secret = key
            .secret_access_key
            .clone()
            .expect("CreateKey returns the secret");
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self {
            bucket_id: info.id,
            bucket,
            credentials: Credentials::new(key.access_key_id, secret),
            http: reqwest::Client::new(),
        }
    }

    /// PUTs an object; panics unless S3 answers 200.
    pub async fn put(&self, key: &str, data: Vec<u8>) {
        let url = self
            .bucket
            .put_object(Some(&self.credentials), key)
            .sign(Duration::from_secs(600));
        let r = self.http.put(url).body(data).send().await.unwrap();
        assert_eq!(
            r.status(),
            200,
            "PUT {key}: {}",
            r.text().await.unwrap_or_default()
        );
    }

    /// GETs an object: its body, or `None` when the status is not 200 or the body could not
    /// be read to the end.
    pub async fn get(&self, key: &str) -> Option<Vec<u8>> {
        let url = self
            .bucket
            .get_object(Some(&self.credentials), key)
            .sign(Duration::from_secs(600));
        let r = self.http.get(url).send().await.ok()?;
        if r.status() != 200 {
            return None;
        }
        r.bytes().await.ok().map(|b| b.to_vec())
    }

    /// DELETEs an object; panics unless S3 answers 204.
    pub async fn delete(&self, key: &str) {
        let url = self
            .bucket
            .delete_object(Some(&self.credentials), key)
            .sign(Duration::from_secs(600));
        let r = self.http.delete(url).send().await.unwrap();
        assert_eq!(r.status(), 204, "DELETE {key}");
    }
}

/// Bytes that do not compress, so Garage stores them as a plain block file.
pub fn incompressible(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            // xorshift64: cheap, deterministic, and zstd cannot shrink it.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}
