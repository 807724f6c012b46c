//! Leader election against a real kube-apiserver: contenders with different identities run
//! the election loop (`reconciler::leader::Elector`) in this one process against one Lease.
//! Their work records the moments it acts; the test asserts that no two acting intervals
//! ever overlap and that at most one contender leads at every sampled moment, through:
//!
//! 1. a leader whose API requests are held at a gate (a partition): it stops acting at the
//!    end of its tenure on its own, and the standby takes over only a lease duration after the
//!    leader's last renewal;
//! 2. a leader frozen whole (its task is not polled, as in a paused process) past the lease
//!    duration: the standby takes over, and the frozen one, when thawed, sees its tenure over
//!    before its work runs again;
//! 3. a requested stop: the leader stops its work, hands the Lease back, and the standby takes
//!    over at once, not after the lease duration.
//!
//! `cargo test -p reconciler --test leader_election` (about 45 s; needs `cargo xtask tools`).

// A failed expectation in a test is the test failing; panics are the point.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use kube::client::ClientBuilder;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use localcluster::{LocalCluster, Options};
use reconciler::leader::{Elector, LeaseConfig, Loss, Outcome, Status, Stop, Tenure, Timing};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

// The control plane is this test's own.
const NS: &str = "default";
const LEASE: &str = "reconciler-leader";

/// Short enough for a test, long enough that a loaded two-core machine renews in time.
const TIMING: Timing = Timing {
    lease_duration: Duration::from_secs(6),
    renew_deadline: Duration::from_secs(4),
    retry_period: Duration::from_millis(500),
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

// ---------------------------------------------------------------------------------------
// Holding a contender's API requests: a tower layer in front of its client's transport.

/// Open lets requests through; closed holds every request until it opens again.
#[derive(Clone)]
struct Gate(Arc<watch::Sender<bool>>);

impl Gate {
    fn new() -> Self {
        Gate(Arc::new(watch::Sender::new(true)))
    }
    fn close(&self) {
        self.0.send_replace(false);
    }
    fn open(&self) {
        self.0.send_replace(true);
    }
}

struct Gated<S> {
    inner: S,
    open: watch::Receiver<bool>,
}

impl<S, Req> tower::Service<Req> for Gated<S>
where
    S: tower::Service<Req>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        // The transport's future does nothing until polled, so a held request is not sent.
        let call = self.inner.call(req);
        let mut open = self.open.clone();
        Box::pin(async move {
            let _ = open.wait_for(|open| *open).await;
            call.await
        })
    }
}

async fn gated_client(cluster: &LocalCluster, gate: &Gate) -> Client {
    let kubeconfig = Kubeconfig::read_from(cluster.kubeconfig()).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    let open = gate.0.subscribe();
    ClientBuilder::try_from(config)
        .unwrap()
        .with_layer(&tower::layer::layer_fn(move |inner| Gated {
            inner,
            open: open.clone(),
        }))
        .build()
}

// ---------------------------------------------------------------------------------------
// Freezing a contender whole: its task is not polled while frozen, timers and all.

#[derive(Clone, Default)]
struct Freeze(Arc<(AtomicBool, Mutex<Option<Waker>>)>);

impl Freeze {
    fn freeze(&self) {
        self.0.0.store(true, Ordering::SeqCst);
    }
    fn thaw(&self) {
        self.0.0.store(false, Ordering::SeqCst);
        if let Some(waker) = self.0.1.lock().unwrap().take() {
            waker.wake();
        }
    }
    fn frozen(&self, cx: &Context<'_>) -> bool {
        if !self.0.0.load(Ordering::SeqCst) {
            return false;
        }
        *self.0.1.lock().unwrap() = Some(cx.waker().clone());
        // A thaw between the first look and storing the waker must not be missed.
        self.0.0.load(Ordering::SeqCst)
    }
}

async fn freezable<F: Future>(freeze: Freeze, future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|cx| {
        if freeze.frozen(cx) {
            return Poll::Pending;
        }
        future.as_mut().poll(cx)
    })
    .await
}

// ---------------------------------------------------------------------------------------
// What the contenders' work did, and when.

#[derive(Debug, Clone)]
struct Interval {
    who: &'static str,
    start: Instant,
    end: Instant,
}

#[derive(Clone, Default)]
struct Acts(Arc<Mutex<Vec<Interval>>>);

impl Acts {
    fn begin(&self, who: &'static str) -> usize {
        let now = Instant::now();
        let mut acts = self.0.lock().unwrap();
        acts.push(Interval {
            who,
            start: now,
            end: now,
        });
        acts.len() - 1
    }
    fn tick(&self, i: usize) {
        self.0.lock().unwrap()[i].end = Instant::now();
    }
    fn of(&self, who: &str) -> Vec<Interval> {
        let acts = self.0.lock().unwrap();
        acts.iter().filter(|a| a.who == who).cloned().collect()
    }
    fn all(&self) -> Vec<Interval> {
        self.0.lock().unwrap().clone()
    }
}

/// The work of a leader: act (record the moment) every 10 ms until asked to stop.
async fn acting(acts: Acts, who: &'static str, mut stop: Stop) {
    let i = acts.begin(who);
    loop {
        tokio::select! {
            () = &mut stop => return,
            () = tokio::time::sleep(ms(10)) => acts.tick(i),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Contenders and the sampler.

struct Contender {
    name: &'static str,
    status: Arc<Status>,
    gate: Gate,
    freeze: Freeze,
    stop: Option<oneshot::Sender<()>>,
    run: JoinHandle<(Outcome, Instant)>,
}

impl Contender {
    async fn start(
        cluster: &LocalCluster,
        name: &'static str,
        acts: &Acts,
        sampler: &Sampler,
    ) -> Self {
        let gate = Gate::new();
        let elector = Elector::new(
            gated_client(cluster, &gate).await,
            LeaseConfig {
                namespace: NS.into(),
                name: LEASE.into(),
                identity: name.into(),
                timing: TIMING,
            },
        )
        .unwrap()
        .with_drain_limit(Duration::from_secs(2));
        let status = elector.status();
        sampler.watch(name, status.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        let freeze = Freeze::default();
        let acts = acts.clone();
        let run = tokio::spawn(freezable(freeze.clone(), async move {
            let outcome = elector
                .lead(
                    async move {
                        let _ = stopped.await;
                    },
                    move |stop| acting(acts, name, stop),
                )
                .await;
            (outcome, Instant::now())
        }));
        Contender {
            name,
            status,
            gate,
            freeze,
            stop: Some(stop),
            run,
        }
    }

    fn leading(&self) -> bool {
        self.status.leading(Instant::now())
    }

    /// How its election ended, and when.
    async fn outcome(self, within: Duration) -> (Outcome, Instant) {
        let Contender {
            name, run, stop, ..
        } = self;
        let ended = tokio::time::timeout(within, run)
            .await
            .unwrap_or_else(|_| panic!("{name}'s election did not end within {within:?}"))
            .unwrap();
        drop(stop);
        ended
    }
}

/// A contender's name and status.
type Watched = (&'static str, Arc<Status>);

#[derive(Default)]
struct Report {
    samples: usize,
    steady_samples: usize,
    two_leaders: Vec<String>,
    steady_without_one: Vec<String>,
}

/// Reads every contender's status every 20 ms: never two leaders; exactly one while the test
/// says the election is steady (not in a hand-over).
#[derive(Clone, Default)]
struct Sampler {
    statuses: Arc<Mutex<Vec<Watched>>>,
    steady: Arc<AtomicBool>,
    report: Arc<Mutex<Report>>,
}

impl Sampler {
    fn watch(&self, name: &'static str, status: Arc<Status>) {
        self.statuses.lock().unwrap().push((name, status));
    }
    fn spawn(&self, t0: Instant) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                this.sample(t0);
                tokio::time::sleep(ms(20)).await;
            }
        })
    }
    fn sample(&self, t0: Instant) {
        let now = Instant::now();
        let leaders: Vec<_> = self
            .statuses
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, s)| s.leading(now))
            .map(|(n, _)| *n)
            .collect();
        let steady = self.steady.load(Ordering::SeqCst);
        let mut report = self.report.lock().unwrap();
        report.samples += 1;
        let at = (now - t0).as_millis();
        if leaders.len() > 1 {
            report.two_leaders.push(format!("{at} ms: {leaders:?}"));
        }
        if steady {
            report.steady_samples += 1;
            if leaders.len() != 1 {
                report
                    .steady_without_one
                    .push(format!("{at} ms: {leaders:?}"));
            }
        }
    }
    /// One steady window of `len`: the current leader keeps its lead throughout.
    async fn steady_for(&self, len: Duration) {
        self.steady.store(true, Ordering::SeqCst);
        tokio::time::sleep(len).await;
        self.steady.store(false, Ordering::SeqCst);
    }
}

async fn wait_until(what: &str, within: Duration, check: impl Fn() -> bool) -> Instant {
    let deadline = Instant::now() + within;
    loop {
        if check() {
            return Instant::now();
        }
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        tokio::time::sleep(ms(10)).await;
    }
}

/// Starts contender `name` while `leader` leads, and checks over a steady window that it
/// stays a standby.
async fn standby(
    cluster: &LocalCluster,
    name: &'static str,
    acts: &Acts,
    sampler: &Sampler,
    leader: &Contender,
) -> Contender {
    let standby = Contender::start(cluster, name, acts, sampler).await;
    sampler.steady_for(Duration::from_secs(2)).await;
    assert!(
        leader.leading() && !standby.leading(),
        "{} should lead and {name} wait",
        leader.name
    );
    standby
}

/// Prints what happened when, in milliseconds since `t0`.
fn timeline(t0: Instant, events: &[(&str, Instant)]) {
    let events: Vec<_> = events
        .iter()
        .map(|(what, t)| format!("{what} at {} ms", (*t - t0).as_millis()))
        .collect();
    println!("{}", events.join(", "));
}

fn last_tick(acts: &Acts, who: &str) -> Instant {
    acts.of(who).iter().map(|a| a.end).max().unwrap()
}

/// The loser acted only within its tenure, and the winner's tenure began no sooner than the
/// lease duration after the loser's last renewal was sent.
fn assert_handover(acts: &Acts, loser: &str, last: Tenure, winner: &str, since: Instant) {
    assert!(
        last_tick(acts, loser) < last.renewed + TIMING.renew_deadline,
        "{loser} acted after its tenure ended"
    );
    assert!(
        since >= last.renewed + TIMING.lease_duration,
        "{winner} took over {} ms after {loser}'s last renewal, before the lease duration",
        (since - last.renewed).as_millis()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_contenders_never_act_at_once() {
    let cluster = LocalCluster::start(Options {
        name: "leader-election".into(),
        ..Options::default()
    })
    .await
    .unwrap_or_else(|e| panic!("this test needs the local control plane: {e}"));
    let t0 = Instant::now();
    let at = |t: Instant| (t - t0).as_millis();
    let acts = Acts::default();
    let sampler = Sampler::default();
    let sampling = sampler.spawn(t0);
    let d = TIMING.lease_duration;
    let rd = TIMING.renew_deadline;

    // A creates the Lease and leads; B waits as a standby.
    let a = Contender::start(&cluster, "a", &acts, &sampler).await;
    wait_until("a leads", Duration::from_secs(20), || a.leading()).await;
    let b = standby(&cluster, "b", &acts, &sampler, &a).await;

    // 1. A's requests are held: it stops at the end of its tenure, B waits a lease duration.
    let held = Instant::now();
    a.gate.close();
    let gate = a.gate.clone();
    let a_status = a.status.clone();
    let (outcome, a_ended) = a.outcome(rd + Duration::from_secs(3)).await;
    assert_eq!(outcome, Outcome::Lost(Loss::Expired));
    let a_tenure = a_status.last_tenure().unwrap();
    let a_end = a_tenure.renewed + rd;
    assert!(
        a_ended >= a_end,
        "a gave up {:?} before its tenure ended",
        a_end - a_ended
    );
    let b_leads = wait_until("b takes over", d + Duration::from_secs(5), || b.leading()).await;
    let b_since = b.status.tenure().unwrap().since;
    assert_handover(&acts, "a", a_tenure, "b", b_since);
    assert!(last_tick(&acts, "a") < acts.of("b")[0].start);
    gate.open();
    timeline(
        t0,
        &[
            ("a's requests held", held),
            ("a's last renewal sent", a_tenure.renewed),
            ("a's tenure over", a_end),
            ("a stopped", a_ended),
            ("b took over", b_since),
            ("b seen leading", b_leads),
        ],
    );

    // 2. B is frozen whole past the lease duration; A (started again) takes over; B, thawed,
    //    stops without acting.
    let a = standby(&cluster, "a", &acts, &sampler, &b).await;
    let frozen = Instant::now();
    b.freeze.freeze();
    let b_status = b.status.clone();
    let a_leads = wait_until("a takes over", d + Duration::from_secs(5), || a.leading()).await;
    let a_since = a.status.tenure().unwrap().since;
    sampler.steady_for(Duration::from_secs(1)).await;
    let thawed = Instant::now();
    b.freeze.thaw();
    let (outcome, b_ended) = b.outcome(Duration::from_secs(5)).await;
    assert_eq!(outcome, Outcome::Lost(Loss::Expired));
    let b_tenure = b_status.last_tenure().unwrap();
    assert_handover(&acts, "b", b_tenure, "a", a_since);
    // The freeze takes hold at b's next poll; from then on b does nothing, and after the
    // thaw its first act is to see its tenure over.
    let b_last = last_tick(&acts, "b");
    assert!(
        b_last < thawed,
        "b acted {} ms after it was thawed",
        (b_last - thawed).as_millis()
    );
    timeline(
        t0,
        &[
            ("b's last renewal sent", b_tenure.renewed),
            ("b's last act", b_last),
            ("b frozen", frozen),
            ("a took over", a_since),
            ("a seen leading", a_leads),
            ("b thawed", thawed),
            ("b stopped", b_ended),
        ],
    );

    // 3. A requested stop hands the Lease over at once.
    let b = standby(&cluster, "b", &acts, &sampler, &a).await;
    let mut a = a;
    let asked = Instant::now();
    a.stop.take().unwrap().send(()).unwrap();
    let (outcome, a_ended) = a.outcome(Duration::from_secs(10)).await;
    assert_eq!(outcome, Outcome::SteppedDown { released: true });
    let b_leads = wait_until("b takes over a released lease", d, || b.leading()).await;
    let b_since = b.status.tenure().unwrap().since;
    assert!(
        b_since - a_ended < TIMING.retry_period + Duration::from_secs(2),
        "b took {} ms to take a released lease",
        (b_since - a_ended).as_millis()
    );
    sampler.steady_for(Duration::from_secs(1)).await;
    timeline(
        t0,
        &[
            ("a asked to stop", asked),
            ("a handed the lease back", a_ended),
            ("b took over", b_since),
            ("b seen leading", b_leads),
        ],
    );
    let mut b = b;
    b.stop.take().unwrap().send(()).unwrap();
    assert_eq!(
        b.outcome(Duration::from_secs(10)).await.0,
        Outcome::SteppedDown { released: true }
    );
    sampling.abort();

    // No two acting intervals overlap, and the sampler never saw two leaders.
    let mut all = acts.all();
    all.sort_by_key(|a| a.start);
    for i in &all {
        println!(
            "{} acted from {} ms to {} ms",
            i.who,
            at(i.start),
            at(i.end)
        );
    }
    assert_eq!(
        all.len(),
        4,
        "a, b, a, b: each acted once per tenure: {all:?}"
    );
    for pair in all.windows(2) {
        assert!(
            pair[0].end < pair[1].start,
            "{} acted until {} ms, {} from {} ms",
            pair[0].who,
            at(pair[0].end),
            pair[1].who,
            at(pair[1].start)
        );
    }
    let report = sampler.report.lock().unwrap();
    println!(
        "{} samples, {} in steady windows",
        report.samples, report.steady_samples
    );
    assert!(
        report.two_leaders.is_empty(),
        "two leaders: {:?}",
        report.two_leaders
    );
    assert!(
        report.steady_without_one.is_empty(),
        "no single leader in a steady window: {:?}",
        report.steady_without_one
    );
    assert!(report.steady_samples > 100);
}
