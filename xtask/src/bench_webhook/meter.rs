//! What a step cost: CPU time per answer of each process, and the webhook's memory.

use std::path::Path;

use anyhow::{Context as _, Result};

use crate::bench_reconciler::process::{TICKS_PER_SECOND, cpu_ticks, processes_naming};

/// CPU time (user + system, from /proc) of the processes a validation passes through, so that
/// "what dominates the cost" is measured rather than guessed.
pub(super) struct CpuMeter {
    parts: Vec<(&'static str, Vec<u32>)>,
}

impl CpuMeter {
    /// The webhook, this process, and the control plane processes whose command line names
    /// `cluster_dir`.
    pub(super) fn new(webhook: u32, cluster_dir: &Path) -> Self {
        let marker = cluster_dir.to_string_lossy().into_owned();
        let mut parts: Vec<(&'static str, Vec<u32>)> = vec![
            ("garage-webhook", vec![webhook]),
            ("kube-apiserver", Vec::new()),
            ("etcd", Vec::new()),
            ("other control plane", Vec::new()),
            ("load generator", vec![std::process::id()]),
        ];
        for (pid, program) in processes_naming(&marker) {
            let index = match program.as_str() {
                "kube-apiserver" => 1,
                "etcd" => 2,
                _ => 3,
            };
            parts[index].1.push(pid);
        }
        CpuMeter { parts }
    }

    pub(super) fn snapshot(&self) -> Vec<u64> {
        self.parts
            .iter()
            .map(|(_, pids)| pids.iter().map(|&pid| cpu_ticks(pid)).sum())
            .collect()
    }

    /// Prints CPU milliseconds per answered request since `before`.
    pub(super) fn report(&self, before: &[u64], answered: u64) {
        let after = self.snapshot();
        let per_request = |i: usize| {
            let ticks = after[i].saturating_sub(before[i]) as f64;
            ticks / TICKS_PER_SECOND * 1000.0 / answered.max(1) as f64
        };
        let parts: Vec<String> = self
            .parts
            .iter()
            .enumerate()
            .map(|(i, (name, _))| format!("{name} {:.2}", per_request(i)))
            .collect();
        let rss = self.parts[0]
            .1
            .first()
            .and_then(|&pid| memory(pid).ok())
            .map(|(hwm, rss)| {
                format!(
                    "; webhook RSS {rss:.1} MiB ({}), peak {hwm:.1} MiB",
                    memory_detail(self.parts[0].1[0])
                )
            })
            .unwrap_or_default();
        println!(
            "  {:<18} CPU ms per answer: {} (over {answered} answers, warm-up included){rss}",
            "",
            parts.join(", ")
        );
    }
}

pub(super) fn memory(pid: u32) -> Result<(f64, f64)> {
    Ok((status_mib(pid, "VmHWM:")?, status_mib(pid, "VmRSS:")?))
}

/// A size field of /proc/<pid>/status, in MiB.
fn status_mib(pid: u32, name: &str) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> Result<f64> {
        let line = status
            .lines()
            .find(|l| l.starts_with(name))
            .with_context(|| format!("{name} missing from /proc/{pid}/status"))?;
        let kib: f64 = line
            .split_whitespace()
            .nth(1)
            .context("malformed status line")?
            .parse()?;
        Ok(kib / 1024.0)
    };
    field(name)
}

/// Where the binary's memory is: RSS split into heap and other anonymous memory (RssAnon) and
/// mapped files such as its own code (RssFile), and its open descriptors, which are nearly all
/// client connections (each holds TLS and HTTP buffers).
pub(super) fn memory_detail(pid: u32) -> String {
    let anon = status_mib(pid, "RssAnon:").unwrap_or(0.0);
    let file = status_mib(pid, "RssFile:").unwrap_or(0.0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    format!("anon {anon:.1} MiB + files {file:.1} MiB, {fds} fds")
}
