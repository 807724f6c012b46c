//! Graceful shutdown over real sockets: readiness turns false at once, requests keep being
//! answered through the grace period (each answer closing its connection), a request in flight
//! when the drain begins completes, and connections made after it are refused. Then the same
//! through the binary and SIGTERM, which must exit 0.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod https;

use std::time::{Duration, Instant};

use https::{Binary, Connection, Pki, review, serve, validate_path, wait_ready};
use webhook::server::Shutdown;
use webhook::server::limits::Limits;

const GRACE: Duration = Duration::from_millis(1500);
const DRAIN: Duration = Duration::from_secs(5);

/// `/readyz` on a new connection.
async fn readiness(addr: std::net::SocketAddr, pki: &Pki) -> https::Answer {
    let mut probe = Connection::open(addr, pki).await.unwrap();
    probe.get("/readyz").await.unwrap()
}

/// A review on a new connection, which must be admitted; the connection is returned too.
async fn admitted(addr: std::net::SocketAddr, pki: &Pki, uid: &str) -> (https::Answer, Connection) {
    let mut connection = Connection::open(addr, pki).await.unwrap();
    let answer = connection
        .post(validate_path(), &review(uid, 0))
        .await
        .unwrap();
    let verdict = answer.review_for(uid);
    assert_eq!(verdict["response"]["allowed"], true, "{verdict}");
    (answer, connection)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_turns_unready_serves_the_grace_period_then_drains() {
    let pki = Pki::new();
    let running = serve(&pki, Limits::default()).await;
    let addr = running.local_addr();

    // A request half-sent before shutdown, still in flight when the drain begins.
    let slow_body = review("in-flight", 64 * 1024);
    let mut slow = Connection::open(addr, &pki).await.unwrap();
    slow.head("POST", validate_path(), slow_body.len())
        .await
        .unwrap();
    slow.send(&slow_body[..slow_body.len() / 2]).await.unwrap();
    // A keep-alive connection left idle.
    let mut idle = Connection::open(addr, &pki).await.unwrap();
    assert_eq!(idle.get("/healthz").await.unwrap().status, 200);

    let stopping = running.shutdown(Shutdown {
        grace: GRACE,
        drain: DRAIN,
    });
    let began = Instant::now();
    let stopping = tokio::spawn(stopping);

    // Not ready at once.
    let ready = readiness(addr, &pki).await;
    assert_eq!(ready.status, 503, "{}", ready.text());
    assert!(ready.text().contains("shutting down"), "{}", ready.text());
    println!("not ready {:?} after shutdown began", began.elapsed());

    // A review sent during the grace period is answered, and its connection closed after it.
    let (answer, mut during) = admitted(addr, &pki, "during-grace").await;
    assert_eq!(answer.header("connection"), Some("close"));
    assert!(during.closed_within(Duration::from_secs(1)).await);
    assert!(
        began.elapsed() < GRACE,
        "the grace period was over too soon"
    );

    // The drain: the listening socket closes once the grace period is over.
    let refused_at = loop {
        match tokio::net::TcpStream::connect(addr).await {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                break began.elapsed();
            }
            _ => {}
        }
        assert!(
            began.elapsed() < GRACE + Duration::from_secs(2),
            "still accepting"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    println!("new connections refused {refused_at:?} after shutdown began");
    assert!(refused_at >= GRACE, "refused during the grace period");
    // The idle connection is closed by the drain...
    assert!(idle.closed_within(Duration::from_secs(1)).await);
    // ...while the request in flight completes with its answer.
    slow.send(&slow_body[slow_body.len() / 2..]).await.unwrap();
    let answer = slow.answer().await.unwrap();
    let verdict = answer.review_for("in-flight");
    assert_eq!(verdict["response"]["allowed"], true, "{verdict}");

    let drained = stopping.await.unwrap();
    let took = began.elapsed();
    println!("stopped {took:?} after shutdown began: {drained:?}");
    assert_eq!(drained.cut, 0, "{drained:?}");
    assert!(drained.open >= 2, "{drained:?}");
    assert!(took < GRACE + DRAIN, "{took:?}");
    let after = tokio::net::TcpStream::connect(addr).await;
    assert!(after.is_err(), "a connection was accepted after the drain");
}

/// The binary on SIGTERM: not ready within moments, still answering, exit status 0.
#[test]
fn the_binary_drains_on_sigterm_and_exits_0() {
    let pki = Pki::new();
    let mut binary = Binary::spawn(&pki, &["--shutdown-grace", "2s", "--shutdown-drain", "5s"]);
    let addr = binary.addr;

    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        wait_ready(&pki, addr).await;
        let signalled = Instant::now();
        binary.signal("TERM");
        // Not ready within moments (the signal is delivered asynchronously).
        loop {
            let ready = readiness(addr, &pki).await;
            if ready.status == 503 {
                assert!(ready.text().contains("shutting down"));
                break;
            }
            assert!(
                signalled.elapsed() < Duration::from_millis(500),
                "still ready"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        println!("binary not ready {:?} after SIGTERM", signalled.elapsed());
        admitted(addr, &pki, "binary-grace").await;
        assert!(signalled.elapsed() < Duration::from_secs(2));
    });
    let signalled = Instant::now();
    let exit = loop {
        if let Some(exit) = binary.child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(10),
            "garage-webhook still running after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    println!(
        "binary exited {:?} after the answer: {exit}",
        signalled.elapsed()
    );
    assert!(exit.success(), "garage-webhook exited with {exit}");
    assert!(
        binary.lines.try_iter().any(|l| l.contains("\"stopped\"")),
        "no 'stopped' line in the log"
    );
}
