//! The floor: three garage processes started and given a layout by hand, with no Kubernetes
//! in the way. It reaches the readiness the operator's `Ready` stands for (every member holds
//! its role in an applied layout and `GetClusterHealth` answers `healthy`), so the operator's
//! apply -> Ready time can be read against it.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use garage_admin::{AdminClient, AdminToken, HealthStatus, NodeId, RoleChange};
use garage_fixture::{ClusterOptions, GarageCluster as Fixture};

/// Tight polling: the floor should not be inflated by its own waits.
const POLL: Duration = Duration::from_millis(20);
const DEADLINE: Duration = Duration::from_secs(120);

/// Elapsed times of one floor run, each from the moment the processes were spawned.
#[derive(Debug, Clone, Copy)]
pub struct FloorRun {
    /// Every process answers `GetNodeInfo` (the fixture polls each every 100 ms).
    pub answering: Duration,
    /// Node 0 reports both peers connected.
    pub connected: Duration,
    /// The staged roles were applied as layout version 1.
    pub applied: Duration,
    /// `GetClusterHealth` on node 0 says `healthy`.
    pub healthy: Duration,
}

/// Starts three garage processes (replication factor 3), connects them, stages one storage
/// role each in `zone` with `capacity` bytes, applies the layout and waits until healthy.
pub async fn run_once(zone: &str, capacity: u64) -> Result<FloorRun> {
    let began = Instant::now();
    let fixture = tokio::task::spawn_blocking(|| {
        Fixture::start(ClusterOptions::new(3).replication_factor(3))
    })
    .await?
    .context("starting three garage processes (tests/garage-fixture)")?;
    let answering = began.elapsed();
    let result = drive(&fixture, zone, capacity, began).await;
    // Dropping the fixture SIGKILLs and reaps its processes, which blocks.
    tokio::task::spawn_blocking(move || drop(fixture)).await?;
    let (connected, applied, healthy) = result?;
    Ok(FloorRun {
        answering,
        connected,
        applied,
        healthy,
    })
}

pub(crate) async fn drive(
    fixture: &Fixture,
    zone: &str,
    capacity: u64,
    began: Instant,
) -> Result<(Duration, Duration, Duration)> {
    let token = AdminToken::new(fixture.admin_token());
    let admin = AdminClient::new(&fixture.admin_endpoint(0), &token)
        .context("building the Admin API client of node 0")?;
    let peers: Vec<String> = (1..fixture.len()).map(|i| fixture.peer(i)).collect();
    let ids: Vec<NodeId> = (0..fixture.len())
        .map(|i| {
            fixture
                .node_id(i)
                .parse()
                .with_context(|| format!("node {i} reported an unparsable node ID"))
        })
        .collect::<Result<_>>()?;

    // The RPC listeners come up a little after the Admin API: retry until both peers connect.
    poll("both peers to connect", began, || async {
        let results = admin.connect_nodes(&peers).await?;
        Ok(results.iter().all(|r| r.success))
    })
    .await?;
    poll("node 0 to see both peers up", began, || async {
        let status = admin.cluster_status().await?;
        Ok(ids
            .iter()
            .all(|id| status.nodes.iter().any(|n| &n.id == id && n.is_up)))
    })
    .await?;
    let connected = began.elapsed();

    let roles: Vec<RoleChange> = ids
        .iter()
        .map(|id| RoleChange::storage(id.clone(), zone, capacity, Vec::new()))
        .collect();
    admin
        .stage_layout(&roles, None)
        .await
        .context("staging three storage roles")?;
    let version = admin.layout().await.context("reading the layout")?.version + 1;
    admin
        .apply_layout(version)
        .await
        .with_context(|| format!("applying layout version {version}"))?;
    let applied = began.elapsed();

    poll("GetClusterHealth to say healthy", began, || async {
        Ok(admin.cluster_health().await?.status == HealthStatus::Healthy)
    })
    .await?;
    Ok((connected, applied, began.elapsed()))
}

async fn poll<F, Fut>(what: &str, began: Instant, mut check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool>>,
{
    let mut last = None;
    loop {
        match check().await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last = Some(e),
        }
        if began.elapsed() > DEADLINE {
            bail!(
                "the floor run waited {} s for {what} (last error: {last:?})",
                DEADLINE.as_secs()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}
