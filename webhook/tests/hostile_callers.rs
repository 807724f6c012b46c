//! Callers that try to exhaust the webhook over real sockets, with the limits a deployment
//! runs with: bodies trickled a byte at a time or stalled just before their end, and floods of
//! connections from one source. A review from another caller must still be answered within
//! the API server's webhook timeout (10 s), since the webhooks fail closed.
//!
//! Every caller here is on the loopback interface. The flood tests give the server distinct
//! source addresses by binding the client end to 127.0.0.2 or 127.0.0.3 (all of 127/8 is
//! local on Linux); they show that one source is capped and another is not, not how a real
//! network spreads sources.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod https;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use https::{Answer, Connection, Pki, review, serve, validate_path};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use webhook::server::limits::{Limits, MAX_BODY_BYTES};

/// The API server's default webhook timeout.
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// The tests of this file load both cores; run at once, their TLS handshakes starve.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Sends a small review as the API server's webhook client does: on a fresh connection, and
/// again after the Retry-After of a 429. Returns the first answer that is not a 429.
async fn as_the_api_server(addr: SocketAddr, pki: &Pki, uid: &str) -> Answer {
    let body = review(uid, 0);
    loop {
        let mut connection = Connection::open(addr, pki).await.unwrap();
        let answer = connection.post(validate_path(), &body).await.unwrap();
        if answer.status != 429 {
            return answer;
        }
        let after = answer
            .header("retry-after")
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        tokio::time::sleep(Duration::from_secs(after)).await;
    }
}

/// Asserts that a review sent as the API server sends it is admitted within the webhook
/// timeout; returns how long it took.
async fn admitted_in_time(addr: SocketAddr, pki: &Pki, uid: &str) -> Duration {
    let started = Instant::now();
    let answer = tokio::time::timeout(WEBHOOK_TIMEOUT, as_the_api_server(addr, pki, uid))
        .await
        .unwrap_or_else(|_| panic!("{uid} got no verdict within the webhook timeout"));
    let verdict = answer.review_for(uid);
    assert_eq!(verdict["response"]["allowed"], true, "{verdict}");
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trickled_bodies_do_not_keep_another_review_out() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let pki = Arc::new(Pki::new());
    let running = serve(&pki, Limits::default()).await;
    let addr = running.local_addr();

    // More callers than the budget holds declared 3 MiB bodies (16), each trickling a space
    // every 100 ms. Each reports when the server cut it off.
    let callers = 24;
    let sent = Arc::new(AtomicUsize::new(0));
    let mut trickling = Vec::new();
    for _ in 0..callers {
        let (pki, sent) = (pki.clone(), sent.clone());
        trickling.push(tokio::spawn(async move {
            let started = Instant::now();
            let mut caller = Connection::open(addr, &pki).await.unwrap();
            caller
                .head("POST", validate_path(), MAX_BODY_BYTES)
                .await
                .unwrap();
            while started.elapsed() < Duration::from_secs(40) {
                if caller.send(b" ").await.is_err() {
                    return started.elapsed();
                }
                sent.fetch_add(1, Ordering::AcqRel);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            started.elapsed()
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while sent.load(Ordering::Acquire) < callers * 5 {
        assert!(Instant::now() < deadline, "the callers never got going");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let charged_while_trickling = running.budget().in_use();

    let took = admitted_in_time(addr, &pki, "beside-trickles").await;
    println!(
        "{callers} trickling callers charged {charged_while_trickling} bytes; a review beside \
         them was admitted in {took:?}"
    );
    assert!(
        charged_while_trickling <= callers * 64 * 1024,
        "{charged_while_trickling} bytes charged for bodies of a few bytes each"
    );
    // A body that does not arrive at the minimum rate is cut off, well before the 30 s
    // request timeout.
    for caller in trickling {
        let cut_after = caller.await.unwrap();
        assert!(
            cut_after < WEBHOOK_TIMEOUT,
            "a trickled body was read for {cut_after:?}"
        );
    }
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_stalled_before_their_end_hold_the_budget_only_until_their_deadline() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let pki = Arc::new(Pki::new());
    let limits = Limits::default();
    let running = serve(&pki, limits).await;
    let addr = running.local_addr();

    // 16 callers send all but the last byte of a 3 MiB body, then wait: together they are
    // charged the whole budget, for bytes that did arrive.
    let callers = limits.review_budget_bytes / MAX_BODY_BYTES;
    let mut stalled = Vec::new();
    for _ in 0..callers {
        let pki = pki.clone();
        stalled.push(tokio::spawn(async move {
            let started = Instant::now();
            let mut caller = Connection::open(addr, &pki).await.unwrap();
            caller
                .head("POST", validate_path(), MAX_BODY_BYTES)
                .await
                .unwrap();
            caller.send(&vec![b' '; MAX_BODY_BYTES - 1]).await.unwrap();
            let answer = caller.answer().await;
            (answer.map(|a| (a.status, a.text())), started.elapsed())
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    // Every byte sent is in (the review below would otherwise take room a staller's last
    // block needs, and that staller would be refused instead).
    while running.budget().in_use() < callers * MAX_BODY_BYTES {
        assert!(
            Instant::now() < deadline,
            "the stalled bodies were never charged ({} bytes)",
            running.budget().in_use()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let took = admitted_in_time(addr, &pki, "beside-stalls").await;
    println!("{callers} stalled 3 MiB bodies; a review beside them was admitted in {took:?}");
    for caller in stalled {
        let (answer, after) = caller.await.unwrap();
        let (status, text) = answer.expect("the stalled caller got no answer");
        assert_eq!(status, 408, "{text}");
        assert!(
            after < WEBHOOK_TIMEOUT,
            "a stalled body was waited for {after:?}"
        );
    }
    assert!(running.budget().peak() <= limits.review_budget_bytes);
    running.stop().await;
}

/// A TCP connection to `addr` from `source`.
async fn tcp_from(source: Ipv4Addr, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(IpAddr::V4(source), 0))?;
    socket.connect(addr).await
}

/// A TLS connection to `addr` from `source`.
async fn tls_from(
    source: Ipv4Addr,
    addr: SocketAddr,
    pki: &Pki,
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = tcp_from(source, addr).await?;
    let name = ServerName::IpAddress(addr.ip().into());
    TlsConnector::from(pki.client.clone())
        .connect(name, tcp)
        .await
}

/// Sends one request on `stream` and reads its answer: the status and the body.
async fn exchange(
    stream: &mut TlsStream<TcpStream>,
    method: &str,
    path: &str,
    body: &[u8],
) -> std::io::Result<(u16, String)> {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: webhook\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.flush().await?;
    let mut received = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        received.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&received).into_owned();
        let Some((head, rest)) = text.split_once("\r\n\r\n") else {
            continue;
        };
        let length: usize = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
            .map_or(0, |(_, v)| v.trim().parse().unwrap());
        if rest.len() >= length {
            let status = head.split(' ').nth(1).unwrap().parse().unwrap();
            return Ok((status, rest[..length].to_owned()));
        }
    }
}

/// A review from `source` on a fresh connection, which must be admitted.
async fn admitted_from(source: Ipv4Addr, addr: SocketAddr, pki: &Pki, uid: &str) {
    let mut stream = tls_from(source, addr, pki)
        .await
        .unwrap_or_else(|e| panic!("{uid}: the connection from {source} was refused: {e}"));
    let (status, text) = exchange(&mut stream, "POST", validate_path(), &review(uid, 0))
        .await
        .unwrap_or_else(|e| panic!("{uid}: no answer: {e}"));
    assert_eq!(status, 200, "{uid}: {text}");
    assert!(text.contains("\"allowed\":true"), "{uid}: {text}");
}

/// Whether the server closed `tcp` (end of file or reset) within `within`.
async fn closed_within(tcp: &mut TcpStream, within: Duration) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(within, tcp.read(&mut byte)).await,
        Ok(Ok(0) | Err(_))
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_flood_from_one_source_leaves_room_for_another() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let pki = Pki::new();
    let limits = Limits::default();
    let running = serve(&pki, limits).await;
    let addr = running.local_addr();

    // More connections than the server takes in all, from one source, none of them ever
    // starting its TLS handshake.
    let flood = limits.max_connections + 64;
    let mut held = Vec::with_capacity(flood);
    for _ in 0..flood {
        let connecting = tcp_from(Ipv4Addr::LOCALHOST, addr);
        if let Ok(Ok(tcp)) = tokio::time::timeout(Duration::from_secs(2), connecting).await {
            held.push(tcp);
        }
    }
    // The server has seen the whole flood once it closed the last connection of it.
    let last = held
        .last_mut()
        .expect("no connection of the flood was made");
    assert!(
        closed_within(last, Duration::from_secs(5)).await,
        "the server kept the {flood}th connection of one source"
    );

    let started = Instant::now();
    tokio::time::timeout(
        WEBHOOK_TIMEOUT,
        admitted_from(Ipv4Addr::new(127, 0, 0, 2), addr, &pki, "beside-flood"),
    )
    .await
    .expect("no verdict within the webhook timeout");
    println!(
        "{} of {flood} flood connections made; a review from another source was admitted in \
         {:?}",
        held.len(),
        started.elapsed()
    );
    drop(held);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_source_gets_at_most_its_cap_of_connections() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let pki = Pki::new();
    let cap = 4;
    let limits = Limits {
        max_connections_per_source: cap,
        ..Limits::default()
    };
    let running = serve(&pki, limits).await;
    let addr = running.local_addr();
    let capped = Ipv4Addr::new(127, 0, 0, 3);

    // The first `cap` connections of a source work ...
    let mut open = Vec::new();
    for _ in 0..cap {
        let mut stream = tls_from(capped, addr, &pki).await.unwrap();
        let (status, _) = exchange(&mut stream, "GET", "/healthz", b"").await.unwrap();
        assert_eq!(status, 200);
        open.push(stream);
    }
    // ... the next one is closed at accept, before its handshake ...
    let refused = match tls_from(capped, addr, &pki).await {
        Err(_) => true,
        Ok(mut stream) => exchange(&mut stream, "GET", "/healthz", b"").await.is_err(),
    };
    assert!(refused, "connection {} of one source was served", cap + 1);
    // ... while another source is served, and the open ones keep working.
    admitted_from(Ipv4Addr::new(127, 0, 0, 2), addr, &pki, "other-source").await;
    for stream in &mut open {
        let (status, _) = exchange(stream, "GET", "/healthz", b"").await.unwrap();
        assert_eq!(status, 200);
    }

    // Once one of them closes, the source may connect again.
    drop(open.pop());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(mut stream) = tls_from(capped, addr, &pki).await
            && let Ok((status, text)) =
                exchange(&mut stream, "POST", validate_path(), &review("again", 0)).await
        {
            assert_eq!(status, 200, "{text}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the source stayed refused after one of its connections closed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    running.stop().await;
}
