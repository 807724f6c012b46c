//! The floor: the drain done by hand on four plain garage processes (tests/garage-fixture),
//! with no Kubernetes and no operator in the way. The role of node 3 is removed in one layout
//! version, a Blocks repair is launched on every node at once, and the Admin API is polled
//! until the operator's proof conditions hold ([`barrier`]), then until they have held for
//! the operator's quiet window and Garage's block hand-over point has passed ([`Waits`]).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use garage_admin::{AdminClient, AdminToken, NodeId, NodeTarget, RepairType, RoleChange};
use garage_fixture::{ClusterOptions, GarageCluster as Fixture};

use super::{MEMBERS, barrier, objects};
use crate::bench_reconciler::{DATA_BYTES, DEFAULT_ZONE};

/// Tight polling until the conditions first hold: the floor should not be inflated by its
/// own waits.
const POLL: Duration = Duration::from_millis(20);
/// Polling while the windows run out: a second is far below the operator's 5 s requeue, and
/// 150 Admin API calls a second for twenty minutes would load the garage processes measured.
const WINDOW_POLL: Duration = Duration::from_secs(1);
/// How long the Admin API may fail before the floor gives up: the processes are gone.
const SILENCE: Duration = Duration::from_secs(30);
/// Generous: the waits alone take over twenty minutes when Garage's delayed work restarts
/// the quiet window.
const DEADLINE: Duration = Duration::from_secs(2700);
/// Garage's RPC timeout: neither the fixture nor the bench's GarageCluster sets one.
const GARAGE_RPC_TIMEOUT: Duration = Duration::from_secs(300);
/// When Garage deletes a block no longer referenced on a node, and with it when a removed
/// source pushes a block only it holds to the nodes that need it (`BLOCK_GC_DELAY` plus 10 s).
const GARAGE_BLOCK_GC_DELAY: Duration = Duration::from_secs(610);
/// The operator's slack on Garage's delays (reconciler `machine::drain::QUIET_MARGIN`).
const MARGIN: Duration = Duration::from_secs(30);

/// The waits of the operator's proof with a live source (reconciler `machine::drain`): what
/// a drain done by hand must wait too, or it proves less than the operator's proof.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Waits {
    /// The quiet window: the configured one, never below twice the RPC timeout plus the
    /// margin, since a node checks a block it learned it needs only after twice the timeout.
    pub quiet: Duration,
    /// From the role removal to the moment the source has handed over every block only it
    /// held.
    pub gate: Duration,
}

impl Waits {
    /// The operator's waits for a configured quiet window of `configured`.
    pub(crate) fn new(configured: Duration) -> Self {
        Self {
            quiet: configured.max(2 * GARAGE_RPC_TIMEOUT + MARGIN),
            gate: GARAGE_BLOCK_GC_DELAY + MARGIN,
        }
    }
}

/// Elapsed times of one floor run, each from the staging of the removal.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FloorRun {
    /// The removal was applied as the next layout version.
    pub applied: Duration,
    /// A Blocks repair was launched on every node.
    pub launched: Duration,
    /// First reading with the layout history settled.
    pub settled: Option<Duration>,
    /// Every launched repair had been seen done without errors.
    pub repaired: Option<Duration>,
    /// Every condition held (the last time it began to, see `restarts`).
    pub held: Duration,
    /// The conditions had held for the configured quiet window alone: a floor without
    /// Garage's delays, which proves less than the operator's proof.
    pub bare: Option<Duration>,
    /// The conditions had held for [`Waits::quiet`] and [`Waits::gate`] had passed: the
    /// floor of the operator's proof.
    pub done: Duration,
    /// How often a condition broke after holding, and the windows began again.
    pub restarts: usize,
}

/// Starts four garage processes (replication factor 3), gives them a layout and writes
/// `objects`, then drains node 3 by hand and times it; every object is read back afterwards.
pub(crate) async fn run_once(objects: &[(String, Vec<u8>)], quiet: Duration) -> Result<FloorRun> {
    let fixture = tokio::task::spawn_blocking(|| {
        Fixture::start(ClusterOptions::new(MEMBERS).replication_factor(3))
    })
    .await?
    .context("starting four garage processes (tests/garage-fixture)")?;
    let result = drive(&fixture, objects, quiet).await;
    // Dropping the fixture SIGKILLs and reaps its processes, which blocks.
    tokio::task::spawn_blocking(move || drop(fixture)).await?;
    result
}

async fn drive(
    fixture: &Fixture,
    objects: &[(String, Vec<u8>)],
    quiet: Duration,
) -> Result<FloorRun> {
    crate::bench_reconciler::floor::drive(fixture, DEFAULT_ZONE, DATA_BYTES, Instant::now())
        .await?;
    let token = AdminToken::new(fixture.admin_token());
    let admin = AdminClient::new(&fixture.admin_endpoint(0), &token)
        .context("building the Admin API client of node 0")?;
    let store = objects::bucket(&admin).await?;
    let endpoint = fixture.s3_endpoint(0);
    objects::write(&store, &endpoint, objects).await?;
    let leaving: NodeId = fixture
        .node_id(MEMBERS - 1)
        .parse()
        .context("node 3 reported an unparsable node ID")?;
    // Read before the clock starts: the floor should not pay for its own bookkeeping.
    let baselines = barrier::baselines(&admin).await?;
    if baselines.len() != MEMBERS {
        bail!(
            "{} of {MEMBERS} nodes listed their workers",
            baselines.len()
        );
    }

    let began = Instant::now();
    admin
        .stage_layout(&[RoleChange::remove(leaving)], None)
        .await
        .context("staging the removal of node 3's role")?;
    let version = admin.layout().await?.version + 1;
    admin
        .apply_layout(version)
        .await
        .with_context(|| format!("applying layout version {version}"))?;
    let applied = began.elapsed();
    for node in baselines.keys() {
        admin
            .launch_repair(&NodeTarget::Node(node.clone()), RepairType::Blocks)
            .await?
            .into_complete()
            .with_context(|| format!("launching a Blocks repair on {}", node.short()))?;
    }
    let launched = began.elapsed();

    let waits = Waits::new(quiet);
    let (mut settled, mut repaired_at, mut bare) = (None, None, None);
    let mut repaired: BTreeSet<NodeId> = BTreeSet::new();
    let mut held_since: Option<Instant> = None;
    let mut restarts = 0;
    let mut last = None;
    let mut answered = Instant::now();
    let done = loop {
        // A node that fails to answer proves nothing this time, as in the operator's proof.
        let reading = match barrier::read(&admin, &baselines).await {
            Ok(reading) => {
                answered = Instant::now();
                reading
            }
            Err(e) if answered.elapsed() > SILENCE => {
                bail!("the garage processes stopped answering: {e:#}")
            }
            Err(e) => {
                last = Some(format!("{e:#}"));
                barrier::Reading::default()
            }
        };
        if reading.settled {
            settled.get_or_insert(began.elapsed());
        }
        repaired.extend(reading.repaired.iter().cloned());
        if repaired.len() == baselines.len() {
            repaired_at.get_or_insert(began.elapsed());
        }
        if reading.holds(repaired.len(), baselines.len()) {
            let since = *held_since.get_or_insert_with(Instant::now);
            // The windows run out between two polls: the figures are when, not when seen.
            if since.elapsed() >= quiet {
                bare.get_or_insert((since + quiet).duration_since(began));
            }
            if since.elapsed() >= waits.quiet && began.elapsed() >= waits.gate {
                break (since + waits.quiet).duration_since(began).max(waits.gate);
            }
        } else if held_since.take().is_some() {
            restarts += 1;
        }
        if began.elapsed() > DEADLINE {
            bail!(
                "the floor's drain had not completed after {} s; last reading {reading:?}, \
                 last error {last:?}",
                DEADLINE.as_secs()
            );
        }
        tokio::time::sleep(if held_since.is_some() {
            WINDOW_POLL
        } else {
            POLL
        })
        .await;
    };
    let held = held_since.map_or(done, |since| since.duration_since(began));
    objects::verify(&store, &endpoint, objects)
        .await
        .context("the floor lost data")?;
    Ok(FloorRun {
        applied,
        launched,
        settled,
        repaired: repaired_at,
        held,
        bare,
        done,
        restarts,
    })
}
