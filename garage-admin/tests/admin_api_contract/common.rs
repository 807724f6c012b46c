//! Shared helpers: clients, waiting, and S3 access for putting test data.

use std::future::Future;
use std::time::{Duration, Instant};

use garage_admin::{
    AdminClient, AdminToken, BucketPermissions, ClientConfig, CreateBucket, KeySpec, NodeId,
};
use garage_fixture::s3::Objects;
use garage_fixture::{ClusterOptions, GarageCluster};

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

/// An S3 key with read/write on a new bucket named `bucket`, used through node 0.
pub struct S3Access {
    /// Bucket id.
    pub bucket_id: String,
    endpoint: String,
    objects: Objects,
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
        let secret = key
            .secret_access_key
            .as_deref()
            .expect("CreateKey returns the secret");
        Self {
            bucket_id: info.id,
            endpoint: cluster.s3_endpoint(0),
            objects: Objects::new(bucket, &key.access_key_id, secret)
                .unwrap_or_else(|e| panic!("{e}")),
        }
    }

    /// PUTs an object; panics unless S3 answers with success.
    pub async fn put(&self, key: &str, data: Vec<u8>) {
        if let Err(e) = self.objects.put(&self.endpoint, key, data).await {
            panic!("{e}");
        }
    }

    /// GETs an object: its body, or `None` when the status is not a success or the body could
    /// not be read to the end.
    pub async fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.objects.get(&self.endpoint, key).await.ok()
    }

    /// DELETEs an object; panics unless S3 answers with success.
    pub async fn delete(&self, key: &str) {
        if let Err(e) = self.objects.delete(&self.endpoint, key).await {
            panic!("{e}");
        }
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
