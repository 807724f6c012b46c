//! Polling until a condition on the cluster holds, for tests, the demo and benches.

use std::future::Future;
use std::time::{Duration, Instant};

/// Polls `check` every 500 ms until it returns `Ok(true)`; after `timeout` fails with `what`
/// and the last error `check` returned (errors count as "not yet", since objects appear late).
pub async fn wait_until<F, Fut>(what: &str, timeout: Duration, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<bool>>,
{
    let deadline = Instant::now() + timeout;
    let mut last = None;
    loop {
        match check().await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last = Some(format!("{e:#}")),
        }
        if Instant::now() > deadline {
            anyhow::bail!(
                "timed out after {}s waiting for {what} (last error: {last:?})",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
