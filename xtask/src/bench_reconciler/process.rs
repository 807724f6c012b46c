//! The `garage-reconciler` child process and what the bench reads about it: memory from
//! `/proc/<pid>/status`, counters from its `/metrics`, events from its JSON log; and the
//! machine around it (load, free memory, the garage processes kubesim runs).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

/// The child process, killed on drop.
pub struct Reconciler {
    child: Child,
    log: PathBuf,
    base: String,
    http: reqwest::Client,
}

impl Drop for Reconciler {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The reconciler's own counters (see `reconciler::controller::Metrics`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Counters {
    /// Reconcile passes.
    pub reconciles: u64,
    /// Passes that failed.
    pub errors: u64,
    /// Kubernetes API writes.
    pub writes: u64,
    /// Garage layout versions applied.
    pub layout_applies: u64,
}

impl Counters {
    /// What happened between `self` (earlier) and `later`.
    pub fn since(&self, later: &Counters) -> Counters {
        Counters {
            reconciles: later.reconciles.saturating_sub(self.reconciles),
            errors: later.errors.saturating_sub(self.errors),
            writes: later.writes.saturating_sub(self.writes),
            layout_applies: later.layout_applies.saturating_sub(self.layout_applies),
        }
    }
}

impl std::fmt::Display for Counters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} reconciles, {} failed, {} API writes, {} layout applies",
            self.reconciles, self.errors, self.writes, self.layout_applies
        )
    }
}

/// Pass durations of one controller, from its `reconcile_duration_seconds` histogram.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Passes {
    /// Passes.
    pub count: u64,
    /// Their summed duration, in seconds.
    pub seconds: f64,
    /// `(upper bound in seconds, passes at most that long)`, cumulative, in exposition order
    /// (ascending).
    pub buckets: Vec<(f64, u64)>,
}

impl Passes {
    const NAME: &str = "garage_reconciler_reconcile_duration_seconds";

    /// The histogram of `controller` in the exposition `text`.
    fn parse(text: &str, controller: &str) -> Passes {
        let label = format!("controller=\"{controller}\"");
        let mut passes = Passes::default();
        for line in text.lines().filter(|l| l.contains(&label)) {
            let Some(rest) = line.strip_prefix(Self::NAME) else {
                continue;
            };
            let Some(value) = line.rsplit(' ').next() else {
                continue;
            };
            if rest.starts_with("_sum{") {
                passes.seconds = value.parse().unwrap_or_default();
            } else if rest.starts_with("_count{") {
                passes.count = value.parse().unwrap_or_default();
            } else if rest.starts_with("_bucket{")
                && let Some(le) = rest.split("le=\"").nth(1).and_then(|r| r.split('"').next())
                && let (Ok(bound), Ok(n)) = (le.parse::<f64>(), value.parse::<u64>())
            {
                passes.buckets.push((bound, n));
            }
        }
        passes
    }

    /// What happened between `self` (earlier) and `later`.
    pub fn since(&self, later: &Passes) -> Passes {
        Passes {
            count: later.count.saturating_sub(self.count),
            seconds: (later.seconds - self.seconds).max(0.0),
            buckets: later
                .buckets
                .iter()
                .map(|&(bound, n)| {
                    let before = self
                        .buckets
                        .iter()
                        .find(|(b, _)| *b == bound)
                        .map_or(0, |(_, m)| *m);
                    (bound, n.saturating_sub(before))
                })
                .collect(),
        }
    }

    /// The smallest bucket bound every pass fits under: the longest pass took at most this.
    pub fn longest_at_most(&self) -> Option<f64> {
        self.buckets
            .iter()
            .find(|(_, n)| *n >= self.count)
            .map(|(bound, _)| *bound)
    }
}

impl std::fmt::Display for Passes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.count == 0 {
            return write!(f, "no passes");
        }
        write!(
            f,
            "{} passes, {:.1} s in all, mean {:.2} s",
            self.count,
            self.seconds,
            self.seconds / self.count as f64
        )?;
        match self.longest_at_most() {
            Some(bound) if bound.is_finite() => write!(f, ", longest at most {bound:.3} s"),
            _ => Ok(()),
        }
    }
}

impl Reconciler {
    /// Starts `binary` with `env` added to its environment against the cluster of
    /// `kubeconfig`, its Lease in `namespace`, logging JSON at info level to `log`.
    pub fn start(
        binary: &Path,
        env: &[(String, String)],
        kubeconfig: &Path,
        namespace: &str,
        log: &Path,
    ) -> Result<Self> {
        // The port is free now; a race with another process is possible but would show as
        // the child exiting on its bind error.
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let listen = format!("127.0.0.1:{port}");
        let out =
            std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let child = Command::new(binary)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("KUBECONFIG", kubeconfig)
            .env("POD_NAMESPACE", namespace)
            .env("POD_NAME", "garage-reconciler-bench")
            .env("GARAGE_RECONCILER_LISTEN", &listen)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        Ok(Self {
            child,
            log: log.to_path_buf(),
            base: format!("http://{listen}"),
            http: reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(5))
                .build()?,
        })
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The child's log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Fails when the child has exited.
    pub fn check_alive(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!(
                "garage-reconciler exited ({status}); see {}",
                self.log.display()
            );
        }
        Ok(())
    }

    /// Waits until `/readyz` says the child leads; returns how long that took.
    pub async fn wait_leading(&mut self, timeout: Duration) -> Result<Duration> {
        let began = Instant::now();
        loop {
            self.check_alive()?;
            // A standby may answer 200 too; only the body tells a leader.
            if let Ok(answer) = self.http.get(format!("{}/readyz", self.base)).send().await
                && answer.status().is_success()
                && answer.text().await.is_ok_and(|b| b.trim() == "leading")
            {
                return Ok(began.elapsed());
            }
            if began.elapsed() > timeout {
                bail!(
                    "garage-reconciler did not lead within {} s; see {}",
                    timeout.as_secs(),
                    self.log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The text of `/metrics` now.
    async fn metrics(&self) -> Result<String> {
        Ok(self
            .http
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .context("reading the reconciler's /metrics")?
            .text()
            .await?)
    }

    /// The pass durations of `controller` on `/metrics` now.
    pub async fn passes(&self, controller: &str) -> Result<Passes> {
        Ok(Passes::parse(&self.metrics().await?, controller))
    }

    /// The counters on `/metrics` now.
    pub async fn counters(&self) -> Result<Counters> {
        let text = self.metrics().await?;
        // A counter with labels has one line per label set; the figure is their sum.
        let value = |name: &str| -> u64 {
            text.lines()
                .filter(|l| {
                    l.strip_prefix(name)
                        .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
                })
                .filter_map(|l| l.rsplit(' ').next()?.trim().parse::<u64>().ok())
                .sum()
        };
        Ok(Counters {
            reconciles: value("garage_reconciler_reconciles_total"),
            errors: value("garage_reconciler_failures_total"),
            writes: value("garage_reconciler_api_writes_total"),
            layout_applies: value("garage_reconciler_layout_applies_total"),
        })
    }

    /// Kills the child (SIGKILL) and reaps it. The bench deletes the Lease afterwards, so the
    /// next process does not wait out the old holder's lease.
    pub fn stop(mut self) -> Result<()> {
        self.child.kill().context("killing garage-reconciler")?;
        self.child.wait()?;
        Ok(())
    }
}

/// `VmHWM` (peak resident set) and `VmRSS` (resident set now) of `pid`, in MiB.
pub fn memory(pid: u32) -> Result<(f64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    Ok((
        status_kib(&status, "VmHWM:")? / 1024.0,
        status_kib(&status, "VmRSS:")? / 1024.0,
    ))
}

fn status_kib(text: &str, field: &str) -> Result<f64> {
    text.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .with_context(|| format!("{field} missing"))?
        .parse()
        .with_context(|| format!("{field} is not a number"))
}

/// How many processes run `binary` with an argument under `within`, and their summed `VmRSS`
/// in MiB. The argument filter leaves out other users' garage processes on a shared machine.
pub fn processes_of(binary: &Path, within: &Path) -> (usize, f64) {
    let Ok(binary) = binary.canonicalize() else {
        return (0, 0.0);
    };
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return (0, 0.0);
    };
    let within = within.to_string_lossy().into_owned();
    let mut count = 0;
    let mut kib = 0.0;
    for entry in entries.flatten() {
        let proc_dir = entry.path();
        if std::fs::read_link(proc_dir.join("exe")).ok().as_deref() != Some(binary.as_path()) {
            continue;
        }
        let ours = std::fs::read(proc_dir.join("cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&within));
        // A process may exit between the reads; it is then not counted.
        if ours
            && let Ok(status) = std::fs::read_to_string(proc_dir.join("status"))
            && let Ok(rss) = status_kib(&status, "VmRSS:")
        {
            count += 1;
            kib += rss;
        }
    }
    (count, kib / 1024.0)
}

/// Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux).
pub const TICKS_PER_SECOND: f64 = 100.0;

/// CPU time (user + system) of `pid` so far, in clock ticks; 0 when it is gone.
pub fn cpu_ticks(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // The command name may hold spaces and parentheses; the fields after its last `)` are
    // fixed: utime and stime are the 12th and 13th of them.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    field(11).unwrap_or(0) + field(12).unwrap_or(0)
}

/// The processes whose command line contains `marker`, with the file name of their program
/// (`kube-apiserver`, `etcd`, `garage`, ...).
pub fn processes_naming(marker: &str) -> Vec<(u32, String)> {
    let pids = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok());
    let mut out = Vec::new();
    for pid in pids {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        if !cmdline.contains(marker) {
            continue;
        }
        let program = cmdline.split('\0').next().unwrap_or_default();
        let name = Path::new(program)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        out.push((pid, name.to_owned()));
    }
    out
}

/// `MemAvailable` of the machine, in MiB.
pub fn mem_available_mib() -> Result<f64> {
    Ok(status_kib(&std::fs::read_to_string("/proc/meminfo")?, "MemAvailable:")? / 1024.0)
}

/// The three load averages, as `/proc/loadavg` prints them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// What the reconciler logged about one cluster from `since` on.
#[derive(Debug, Default)]
pub struct LogEvents {
    /// Layout applies and holds, unreachable peers and failed reconciles, with the time
    /// logged, in log order.
    pub lines: Vec<(SystemTime, String)>,
}

/// Reads the JSON log for lines about cluster `name` in `namespace` (the controller's span
/// names the object as `<Kind>.<version>.<group>/<name>.<namespace>`, and the cluster's
/// generated nodes are `<name>-storage-<n>`).
pub fn log_events(log: &Path, name: &str, namespace: &str, since: SystemTime) -> Result<LogEvents> {
    let text =
        std::fs::read_to_string(log).with_context(|| format!("reading {}", log.display()))?;
    let own = format!("/{name}.{namespace}");
    let node = format!("/{name}-storage-");
    let mut events = LogEvents::default();
    for line in text.lines() {
        if !line.contains(&own) && !line.contains(&node) {
            continue;
        }
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(at) = entry["timestamp"]
            .as_str()
            .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok())
            .map(SystemTime::from)
        else {
            continue;
        };
        if at < since {
            continue;
        }
        let fields = &entry["fields"];
        let text = |key: &str| fields[key].as_str().unwrap_or_default().to_owned();
        let what = match fields["message"].as_str() {
            Some("layout applied") => format!("layout applied (version {})", fields["version"]),
            Some("layout change held") => format!("layout change held: {}", text("message")),
            Some("peer not reachable yet") => format!("peer not reachable yet: {}", text("error")),
            Some("reconcile failed; retrying") => {
                format!("reconcile of {} failed: {}", text("object"), text("error"))
            }
            _ => continue,
        };
        events.lines.push((at, what));
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_are_read_from_the_histogram_of_one_controller() {
        let text = "\
# TYPE garage_reconciler_reconcile_duration_seconds histogram
garage_reconciler_reconcile_duration_seconds_sum{controller=\"garagecluster\"} 21.5
garage_reconciler_reconcile_duration_seconds_count{controller=\"garagecluster\"} 4
garage_reconciler_reconcile_duration_seconds_bucket{le=\"0.001\",controller=\"garagecluster\"} 1
garage_reconciler_reconcile_duration_seconds_bucket{le=\"8.192\",controller=\"garagecluster\"} 3
garage_reconciler_reconcile_duration_seconds_bucket{le=\"16.384\",controller=\"garagecluster\"} 4
garage_reconciler_reconcile_duration_seconds_bucket{le=\"+Inf\",controller=\"garagecluster\"} 4
garage_reconciler_reconcile_duration_seconds_count{controller=\"garagenode\"} 9
";
        let p = Passes::parse(text, "garagecluster");
        assert_eq!(p.count, 4);
        assert_eq!(p.buckets.len(), 4);
        assert_eq!(p.longest_at_most(), Some(16.384));
        let earlier = Passes {
            count: 1,
            seconds: 0.5,
            buckets: vec![(0.001, 1), (8.192, 1)],
        };
        let d = earlier.since(&p);
        assert_eq!((d.count, d.seconds), (3, 21.0));
        assert_eq!(d.buckets[0], (0.001, 0));
        assert_eq!(d.longest_at_most(), Some(16.384));
        assert_eq!(Passes::parse(text, "garagenode").count, 9);
    }
}
