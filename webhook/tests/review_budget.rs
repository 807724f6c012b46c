//! The review memory budget over real sockets: many large reviews at once never hold more than
//! the budget, a review that finds no room is answered 429 with a Retry-After (what it held of
//! its body given back, the rest read and dropped), one that could never fit 413, and every
//! review is answered; a client that retries after the Retry-After, as the API server's does,
//! gets every verdict.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod https;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use https::{Binary, Connection, Pki, review, serve, validate_path, wait_ready};
use webhook::server::budget::decode_cost;
use webhook::server::limits::{CHART_MEMORY_LIMIT_BYTES, Limits, MAX_BODY_BYTES};

const MIB: usize = 1024 * 1024;

/// `clients` clients each send a review of nearly the largest size (2.9 MiB) to `addr`, all at
/// once, and retry on 429 after the Retry-After. The padding is one long annotation, which
/// GC-C13 refuses: every verdict is that denial. Returns how many 429s they got.
async fn large_reviews(pki: &Arc<Pki>, addr: std::net::SocketAddr, clients: usize) -> usize {
    let throttled = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..clients {
        let (pki, throttled) = (pki.clone(), throttled.clone());
        tasks.push(tokio::spawn(async move {
            let uid = format!("large-{i}");
            let body = review(&uid, PADDING);
            assert!(body.len() <= MAX_BODY_BYTES);
            let mut connection = Connection::open(addr, &pki).await.unwrap();
            for _attempt in 0..60 {
                let answer = connection.post(validate_path(), &body).await.unwrap();
                if answer.status == 408 {
                    // The body did not arrive by its deadline (two cores shared by 48 uploads
                    // and whatever else runs): the server closed the connection, as it does
                    // for a slow caller. A real client retries on a new one.
                    connection = Connection::open(addr, &pki).await.unwrap();
                    continue;
                }
                if answer.status == 429 {
                    assert_eq!(answer.header("retry-after"), Some("1"), "{}", answer.text());
                    assert!(answer.text().contains("memory budget"), "{}", answer.text());
                    throttled.fetch_add(1, Ordering::AcqRel);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                let verdict = answer.review_for(&uid);
                assert_eq!(verdict["response"]["allowed"], false, "{verdict}");
                let message = verdict["response"]["status"]["message"].as_str().unwrap();
                assert!(message.contains("[GC-C13]"), "{message}");
                return;
            }
            panic!("{uid} got no verdict in 60 attempts");
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    throttled.load(Ordering::Acquire)
}

const PADDING: usize = MAX_BODY_BYTES - 100 * 1024;

/// The tests of this file saturate two cores each; run at once, TLS handshakes starve past
/// their timeout. They take turns.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_large_reviews_stay_within_the_budget_and_all_get_answers() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let pki = Arc::new(Pki::new());
    let limits = Limits::default();
    let running = serve(&pki, limits).await;
    let budget = running.budget().clone();
    assert_eq!(budget.total(), limits.review_budget_bytes);

    // Sample what is charged while the reviews run.
    let done = Arc::new(AtomicBool::new(false));
    let sampled_peak = Arc::new(AtomicUsize::new(0));
    let sampler = tokio::spawn({
        let (budget, done, sampled_peak) = (budget.clone(), done.clone(), sampled_peak.clone());
        async move {
            while !done.load(Ordering::Acquire) {
                sampled_peak.fetch_max(budget.in_use(), Ordering::AcqRel);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    });
    let clients = 48;
    let started = Instant::now();
    let throttled = large_reviews(&pki, running.local_addr(), clients).await;
    done.store(true, Ordering::Release);
    sampler.await.unwrap();

    let peak = budget.peak();
    let sampled = sampled_peak.load(Ordering::Acquire);
    let body = review("x", PADDING);
    let charge = body.len() + decode_cost(&body);
    println!(
        "{clients} reviews of {:.2} MiB (charged {:.1} MiB each) in {:?}: {throttled} answered \
         429 on the way; budget {} MiB, peak charged {:.1} MiB (sampled {:.1} MiB)",
        body.len() as f64 / MIB as f64,
        charge as f64 / MIB as f64,
        started.elapsed(),
        budget.total() / MIB,
        peak as f64 / MIB as f64,
        sampled as f64 / MIB as f64,
    );
    assert!(
        peak <= budget.total(),
        "peak {peak} over {}",
        budget.total()
    );
    assert!(sampled <= peak);
    assert!(
        peak >= 2 * charge,
        "never two large reviews at once: the test did not load the budget"
    );
    assert_eq!(budget.in_use(), 0, "a charge outlived its review");
    running.stop().await;
}

/// The same load on the binary, which must stay under the chart's memory limit.
#[test]
fn the_binary_stays_under_its_memory_limit() {
    let _turn = ONE_AT_A_TIME.blocking_lock();
    let pki = Arc::new(Pki::new());
    let binary = Binary::spawn(&pki, &[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let idle = runtime.block_on(async {
        wait_ready(&pki, binary.addr).await;
        let idle = binary.peak_rss_kib();
        let throttled = large_reviews(&pki, binary.addr, 48).await;
        println!("binary: {throttled} reviews answered 429 on the way");
        idle
    });
    let peak = binary.peak_rss_kib();
    println!(
        "binary peak RSS {:.1} MiB (at idle {:.1} MiB), limit {} MiB",
        peak as f64 / 1024.0,
        idle as f64 / 1024.0,
        CHART_MEMORY_LIMIT_BYTES / MIB
    );
    assert!(peak > 0, "no VmHWM for the binary");
    assert!(
        (peak as usize) * 1024 < CHART_MEMORY_LIMIT_BYTES,
        "peak RSS {peak} KiB over the chart's limit"
    );
}

/// With little room left: a review whose body does not fit is answered 429 with a Retry-After
/// as soon as a piece of its body finds no room, the part it held given back and the rest
/// read and dropped, and its connection stays usable; a review that could never fit is
/// answered 413.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_without_room_is_answered_429_and_one_too_large_413() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let pki = Pki::new();
    let limits = Limits {
        review_budget_bytes: 8 * MIB,
        budget_wait: Duration::from_millis(200),
        // The holders below stall for as long as the test needs them.
        body_timeout_base: Duration::from_secs(30),
        ..Limits::default()
    };
    let running = serve(&pki, limits).await;
    let addr = running.local_addr();

    // Two holders send all but the last byte of the largest body: bodies are charged as they
    // arrive, 6 MiB, 2 MiB left.
    let mut holders = Vec::new();
    for _ in 0..2 {
        let mut holder = Connection::open(addr, &pki).await.unwrap();
        holder
            .head("POST", validate_path(), MAX_BODY_BYTES)
            .await
            .unwrap();
        holder.send(&vec![b' '; MAX_BODY_BYTES - 1]).await.unwrap();
        holders.push(holder);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while running.budget().in_use() < 2 * MAX_BODY_BYTES {
        assert!(Instant::now() < deadline, "the holders were never charged");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let large = review("large", 5 * MIB / 2);
    let mut client = Connection::open(addr, &pki).await.unwrap();
    let answer = client.post(validate_path(), &large).await.unwrap();
    assert_eq!(answer.status, 429, "{}", answer.text());
    assert_eq!(answer.header("retry-after"), Some("1"));
    assert!(answer.text().contains("retry"), "{}", answer.text());
    assert!(running.budget().peak() <= limits.review_budget_bytes);
    assert_eq!(
        running.budget().in_use(),
        2 * MAX_BODY_BYTES,
        "the refused body kept its charge"
    );

    // The same connection still works, for a review that fits.
    let small = review("small", 0);
    let answer = client.post(validate_path(), &small).await.unwrap();
    answer.review_for("small");
    assert!(running.budget().peak() <= limits.review_budget_bytes);

    // The holders go away: their charges come back.
    drop(holders);
    let deadline = Instant::now() + Duration::from_secs(5);
    while running.budget().in_use() > 0 {
        assert!(
            Instant::now() < deadline,
            "a charge outlived its connection"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // A review whose decoding alone would need more than the whole budget: 413, at once.
    let asked = Instant::now();
    let answer = client.post(validate_path(), &large).await.unwrap();
    assert_eq!(answer.status, 413, "{}", answer.text());
    assert!(
        answer.text().contains("make the object smaller"),
        "{}",
        answer.text()
    );
    assert!(asked.elapsed() < limits.budget_wait);
    assert!(running.budget().peak() <= limits.review_budget_bytes);

    let metrics = client.get("/metrics").await.unwrap().text();
    for verdict in ["throttled", "too_large"] {
        let line = format!(
            "garage_webhook_requests_total{{path=\"{}\",verdict=\"{verdict}\"}} 1",
            validate_path()
        );
        assert!(metrics.contains(&line), "{line} missing from {metrics}");
    }
    assert!(
        metrics.contains("garage_webhook_review_budget_bytes 8388608"),
        "{metrics}"
    );
    running.stop().await;
}
