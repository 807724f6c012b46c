//! Load generation and latency statistics: closed and open loops over keep-alive TLS.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::Value;

use super::meter::CpuMeter;
use super::reviews::conversion_review;
use super::{CONVERSION_OBJECTS, CONVERSION_REPEATS, OFFERED_RATE, WARM_UP};

pub(super) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub(super) fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "MISS" }
}

#[derive(Default)]
pub(super) struct Counts {
    pub(super) allowed: AtomicU64,
    other: AtomicU64,
    errors: AtomicU64,
    /// The first transport error with its causes, so that a failed step says why.
    first_error: std::sync::Mutex<Option<String>>,
}

impl Counts {
    pub(super) fn summary(&self) -> String {
        let errors = self.errors.load(Ordering::Relaxed);
        let first = match self.first_error.lock() {
            Ok(first) if errors > 0 => first
                .as_deref()
                .map(|e| format!(", first: {e}"))
                .unwrap_or_default(),
            _ => String::new(),
        };
        format!(
            "allowed {} / not allowed {} / transport errors {errors}{first}",
            self.allowed.load(Ordering::Relaxed),
            self.other.load(Ordering::Relaxed),
        )
    }

    /// Answers received, whatever the verdict.
    pub(super) fn answered(&self) -> u64 {
        self.allowed.load(Ordering::Relaxed) + self.other.load(Ordering::Relaxed)
    }

    pub(super) fn add(&self, other: &Counts) {
        self.allowed
            .fetch_add(other.allowed.load(Ordering::Relaxed), Ordering::Relaxed);
        self.other
            .fetch_add(other.other.load(Ordering::Relaxed), Ordering::Relaxed);
        self.errors
            .fetch_add(other.errors.load(Ordering::Relaxed), Ordering::Relaxed);
        if let (Ok(mut mine), Ok(theirs)) = (self.first_error.lock(), other.first_error.lock())
            && mine.is_none()
        {
            mine.clone_from(&theirs);
        }
    }
}

/// One validation; the latency is recorded only when the call succeeded.
pub(super) async fn validate(
    client: &reqwest::Client,
    url: &str,
    body: &[u8],
    counts: &Counts,
) -> Option<Duration> {
    let began = Instant::now();
    let answer = async {
        let response = client
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_vec())
            .send()
            .await?;
        let ok = response.status().is_success();
        let bytes = response.bytes().await?;
        Ok::<bool, reqwest::Error>(
            ok && bytes
                .windows(14)
                .any(|w| w == b"\"allowed\":true".as_slice()),
        )
    }
    .await;
    let elapsed = began.elapsed();
    match answer {
        Ok(true) => {
            counts.allowed.fetch_add(1, Ordering::Relaxed);
            Some(elapsed)
        }
        Ok(false) => {
            counts.other.fetch_add(1, Ordering::Relaxed);
            Some(elapsed)
        }
        Err(e) => {
            if counts.errors.fetch_add(1, Ordering::Relaxed) == 0 {
                let mut chain = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(cause) = source {
                    chain.push_str(&format!(": {cause}"));
                    source = cause.source();
                }
                if let Ok(mut first) = counts.first_error.lock() {
                    *first = Some(chain);
                }
            }
            None
        }
    }
}

pub(super) fn report(
    label: &str,
    samples: &mut [Duration],
    seconds: f64,
    counts: &Counts,
) -> Duration {
    samples.sort_unstable();
    let p99 = percentile(samples, 99.0);
    println!(
        "  {label:<18} {:>8.0} req/s  p50 {:>7.2} ms  p90 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms  ({} samples; {})",
        samples.len() as f64 / seconds,
        ms(percentile(samples, 50.0)),
        ms(percentile(samples, 90.0)),
        ms(p99),
        ms(samples.last().copied().unwrap_or_default()),
        samples.len(),
        counts.summary(),
    );
    p99
}

/// `connections` workers, each with its own keep-alive connection, back to back.
pub(super) async fn closed_loop(
    make_client: &dyn Fn() -> Result<reqwest::Client>,
    (url, label): (&str, &str),
    body: &Arc<Vec<u8>>,
    connections: usize,
    measured: Duration,
    meter: &CpuMeter,
) -> Result<()> {
    let cpu = meter.snapshot();
    let began = Instant::now();
    let from = began + WARM_UP;
    let until = from + measured;
    let counts = Arc::new(Counts::default());
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let client = make_client()?;
        let url = url.to_owned();
        let body = body.clone();
        let counts = counts.clone();
        workers.spawn(async move {
            let mut samples = Vec::new();
            loop {
                let sent = Instant::now();
                if sent >= until {
                    break;
                }
                // Verdicts are counted over warm-up and measured requests alike.
                if let Some(latency) = validate(&client, &url, &body, &counts).await
                    && sent >= from
                    && sent + latency <= until
                {
                    samples.push(latency);
                }
            }
            samples
        });
    }
    let mut samples = Vec::new();
    while let Some(worker) = workers.join_next().await {
        samples.extend(worker?);
    }
    report(label, &mut samples, measured.as_secs_f64(), &counts);
    meter.report(&cpu, counts.answered());
    Ok(())
}

/// Open loop: requests are started on a fixed schedule whatever the answers do. Its own client
/// opens as many connections as requests are outstanding (as the API server's would); they
/// close when it returns, so an overload does not leave the server's connection slots taken.
pub(super) async fn open_loop(
    make_client: &dyn Fn() -> Result<reqwest::Client>,
    url: &str,
    body: &Arc<Vec<u8>>,
    measured: Duration,
    meter: &CpuMeter,
) -> Result<Duration> {
    let client = make_client()?;
    let cpu = meter.snapshot();
    let all = Arc::new(Counts::default());
    let total = WARM_UP + measured;
    let count = OFFERED_RATE * total.as_millis() as u64 / 1000;
    let interval = Duration::from_nanos(1_000_000_000 / OFFERED_RATE);
    let began = Instant::now();
    let from = began + WARM_UP;
    let counts = Arc::new(Counts::default());
    let mut tasks = tokio::task::JoinSet::new();
    let mut max_lag = Duration::ZERO;
    for i in 0..count {
        let due = began + interval * u32::try_from(i)?;
        tokio::time::sleep_until(due.into()).await;
        // The timer ticks in milliseconds: start everything that is due.
        max_lag = max_lag.max(Instant::now().saturating_duration_since(due));
        let client = client.clone();
        let url = url.to_owned();
        let body = body.clone();
        let counts = counts.clone();
        let all = all.clone();
        tasks.spawn(async move {
            let measured = due >= from;
            let local = Counts::default();
            let latency = validate(&client, &url, &body, &local).await;
            if measured {
                counts.add(&local);
            }
            all.add(&local);
            latency.filter(|_| measured)
        });
    }
    let offered_for = began.elapsed();
    let mut samples = Vec::new();
    while let Some(task) = tasks.join_next().await {
        if let Some(latency) = task? {
            samples.push(latency);
        }
    }
    let p99 = report(
        &format!("open loop {OFFERED_RATE}/s"),
        &mut samples,
        measured.as_secs_f64(),
        &counts,
    );
    meter.report(&cpu, all.answered());
    println!(
        "  {:<18} offered {count} requests in {:.2} s (scheduler lag max {:.2} ms; latency is \
         measured from the actual send)",
        "",
        offered_for.as_secs_f64(),
        ms(max_lag)
    );
    drop(client);
    // Let the server see the overload's connections close before the next step connects.
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(p99)
}

/// `CONVERSION_REPEATS` reviews of `CONVERSION_OBJECTS` objects each way, one connection.
pub(super) async fn conversions(
    client: &reqwest::Client,
    url: &str,
    v1beta1: &[Value],
) -> Result<(Duration, Duration)> {
    let call = |body: Vec<u8>| async move {
        let began = Instant::now();
        let response = client
            .post(url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await?
            .error_for_status()?;
        let bytes = response.bytes().await?;
        let elapsed = began.elapsed();
        let answer: Value = serde_json::from_slice(&bytes)?;
        let response = &answer["response"];
        if response["result"]["status"] != "Success" {
            bail!("conversion refused: {}", response["result"]);
        }
        let converted = response["convertedObjects"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if converted.len() != CONVERSION_OBJECTS {
            bail!(
                "{} objects came back, not {CONVERSION_OBJECTS}",
                converted.len()
            );
        }
        Ok::<_, anyhow::Error>((elapsed, converted))
    };
    let up_body = conversion_review(v1beta1, "garage.rajsingh.info/v1beta2")?;
    let (_, v1beta2) = call(up_body.clone()).await?;
    let down_body = conversion_review(&v1beta2, "garage.rajsingh.info/v1beta1")?;
    for _ in 0..3 {
        call(up_body.clone()).await?;
        call(down_body.clone()).await?;
    }
    let mut worst = Duration::ZERO;
    let mut p50s = Duration::ZERO;
    for (label, body) in [
        ("v1beta1 -> v1beta2", &up_body),
        ("v1beta2 -> v1beta1", &down_body),
    ] {
        let mut samples = Vec::with_capacity(CONVERSION_REPEATS);
        for _ in 0..CONVERSION_REPEATS {
            samples.push(call(body.clone()).await?.0);
        }
        samples.sort_unstable();
        let p99 = percentile(&samples, 99.0);
        println!(
            "  {label:<18} p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms per review of {CONVERSION_OBJECTS} ({} KiB request)",
            ms(percentile(&samples, 50.0)),
            ms(p99),
            ms(samples.last().copied().unwrap_or_default()),
            body.len() / 1024,
        );
        worst = worst.max(p99);
        p50s = p50s.max(percentile(&samples, 50.0));
    }
    Ok((p50s, worst))
}
