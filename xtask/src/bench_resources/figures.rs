//! The figures `bench resources` reads while it runs: the reconciler's memory, counters and
//! passes per controller, CPU by process, the Admin API requests Garage served, the writes the
//! API server served, and which objects were rewritten; each with the difference of two
//! readings as printed.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::core::v1::Secret;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};
use localcluster::tools::Tool;
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_key::GarageKey;
use shared_types::keys::label;

use super::ADMIN_PORT;
use crate::bench_reconciler::NS;
use crate::bench_reconciler::process::{self, Counters, Passes, Reconciler};

/// The controllers' names on `/metrics`.
const CONTROLLERS: [&str; 2] = ["garagebucket", "garagekey"];
/// The resources whose mutating requests the settle window counts on the API server: what the
/// reconciler writes (leases left out: kubesim renews its Node's too).
const WRITTEN: [&str; 12] = [
    "garagebuckets",
    "garagekeys",
    "secrets",
    "garageclusters",
    "garagenodes",
    "events",
    "configmaps",
    "services",
    "statefulsets",
    "poddisruptionbudgets",
    "persistentvolumeclaims",
    "pods",
];

/// The resourceVersion of every bucket, key and key credentials Secret, by `kind/name`.
pub(super) async fn versions(client: &Client) -> Result<BTreeMap<String, String>> {
    let lp = ListParams::default();
    let mut out = BTreeMap::new();
    let mut add = |kind: &str, name: String, version: Option<String>| {
        out.insert(format!("{kind}/{name}"), version.unwrap_or_default());
    };
    for b in Api::<GarageBucket>::namespaced(client.clone(), NS)
        .list(&lp)
        .await?
        .items
    {
        add("bucket", b.name_any(), b.resource_version());
    }
    for k in Api::<GarageKey>::namespaced(client.clone(), NS)
        .list(&lp)
        .await?
        .items
    {
        add("key", k.name_any(), k.resource_version());
    }
    for s in Api::<Secret>::namespaced(client.clone(), NS)
        .list(&lp.clone().labels(label::LABEL_KEY))
        .await?
        .items
    {
        add("Secret", s.name_any(), s.resource_version());
    }
    Ok(out)
}

/// How many objects of each kind have another resourceVersion in `after` (or are gone).
pub(super) fn rewritten(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> String {
    let mut changed: BTreeMap<&str, usize> = BTreeMap::new();
    let mut total: BTreeMap<&str, usize> = BTreeMap::new();
    for (name, version) in before {
        let kind = name.split('/').next().unwrap_or_default();
        *total.entry(kind).or_default() += 1;
        if after.get(name) != Some(version) {
            *changed.entry(kind).or_default() += 1;
        }
    }
    total
        .iter()
        .map(|(kind, n)| format!("{} of {n} {kind}s", changed.get(kind).copied().unwrap_or(0)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Who spent the machine's CPU.
const CPU_PARTS: [&str; 6] = [
    "garage-reconciler",
    "garage",
    "kube-apiserver",
    "etcd",
    "rest of the control plane",
    "this process (kubesim and the bench's listing)",
];

/// CPU ticks so far of the reconciler, and of the processes whose command line names
/// `cluster_dir` (kubesim's garage, the control plane), and of this process, as [`CPU_PARTS`].
pub(super) fn cpu(cluster_dir: &Path, reconciler: u32) -> [u64; 6] {
    let marker = cluster_dir.to_string_lossy().into_owned();
    let mut ticks = [0u64; 6];
    ticks[0] = process::cpu_ticks(reconciler);
    ticks[5] = process::cpu_ticks(std::process::id());
    for (pid, program) in process::processes_naming(&marker) {
        let part = match program.as_str() {
            "garage" => 1,
            "kube-apiserver" => 2,
            "etcd" => 3,
            _ => 4,
        };
        ticks[part] += process::cpu_ticks(pid);
    }
    ticks
}

/// CPU seconds each part spent between two [`cpu`] readings.
pub(super) fn cpu_since(before: &[u64; 6], after: &[u64; 6]) -> String {
    CPU_PARTS
        .iter()
        .zip(before.iter().zip(after))
        .map(|(name, (b, a))| {
            format!(
                "{name} {:.0} s",
                a.saturating_sub(*b) as f64 / process::TICKS_PER_SECOND
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Garage's own count of Admin API requests and their summed duration in seconds, by
/// endpoint, from its `/metrics` (public: the operator sets no metrics token by default).
pub(super) async fn garage_admin(ip: IpAddr) -> Result<BTreeMap<String, (u64, f64)>> {
    let text = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()?
        .get(format!("http://{ip}:{ADMIN_PORT}/metrics"))
        .send()
        .await
        .context("reading garage's /metrics")?
        .error_for_status()?
        .text()
        .await?;
    let mut out: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    for line in text.lines() {
        let (is_count, rest) =
            if let Some(r) = line.strip_prefix("api_admin_request_duration_count{") {
                (true, r)
            } else if let Some(r) = line.strip_prefix("api_admin_request_duration_sum{") {
                (false, r)
            } else {
                continue;
            };
        let Some((labels, value)) = rest.split_once("} ") else {
            continue;
        };
        let Some(endpoint) = labels
            .split(',')
            .find_map(|kv| kv.strip_prefix("api_endpoint=\""))
            .map(|v| v.trim_end_matches('"').to_owned())
        else {
            continue;
        };
        let value: f64 = value.trim().parse().unwrap_or(0.0);
        let entry = out.entry(endpoint).or_default();
        if is_count {
            entry.0 += value as u64;
        } else {
            entry.1 += value;
        }
    }
    Ok(out)
}

/// The Admin API requests Garage served between two [`garage_admin`] readings, most frequent
/// first, with their mean duration as Garage measured it.
pub(super) fn garage_since(
    before: &Option<BTreeMap<String, (u64, f64)>>,
    after: &Option<BTreeMap<String, (u64, f64)>>,
) -> String {
    let (Some(before), Some(after)) = (before, after) else {
        return "not readable".into();
    };
    let mut rows: Vec<(u64, f64, &str)> = after
        .iter()
        .filter(|(endpoint, _)| !endpoint.to_ascii_lowercase().contains("metrics"))
        .filter_map(|(endpoint, (n, sum))| {
            let (n0, sum0) = before.get(endpoint).copied().unwrap_or_default();
            let d = n.saturating_sub(n0);
            let name = endpoint.trim_start_matches("/v2/");
            (d > 0).then(|| (d, (sum - sum0).max(0.0) / d as f64, name))
        })
        .collect();
    if rows.is_empty() {
        return "none".into();
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    let total: u64 = rows.iter().map(|r| r.0).sum();
    let listed: Vec<String> = rows
        .iter()
        .map(|(n, mean, endpoint)| format!("{endpoint} {n} (mean {mean:.3} s)"))
        .collect();
    format!("{total} in all: {}", listed.join(", "))
}

/// The API server's count of mutating requests on the kinds the reconciler writes, by
/// `VERB resource[/subresource]`, from its `/metrics` (read with kubectl).
pub(super) async fn apiserver_writes(kubeconfig: &Path) -> Result<BTreeMap<String, u64>> {
    let kubectl = Tool::Kubectl.require()?;
    let out = tokio::process::Command::new(&kubectl)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["get", "--raw", "/metrics"])
        .output()
        .await
        .context("running kubectl get --raw /metrics")?;
    if !out.status.success() {
        bail!(
            "kubectl get --raw /metrics failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut counts = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.split_once("} ") else {
            continue;
        };
        let label = |name: &str| {
            labels
                .split(',')
                .find_map(|kv| kv.strip_prefix(&format!("{name}=\"")))
                .map(|v| v.trim_end_matches('"').to_owned())
                .unwrap_or_default()
        };
        let (verb, resource, sub) = (label("verb"), label("resource"), label("subresource"));
        if !matches!(verb.as_str(), "POST" | "PUT" | "PATCH" | "DELETE" | "APPLY")
            || !WRITTEN.contains(&resource.as_str())
        {
            continue;
        }
        let what = if sub.is_empty() {
            format!("{verb} {resource}")
        } else {
            format!("{verb} {resource}/{sub}")
        };
        *counts.entry(what).or_default() += value.trim().parse::<f64>().unwrap_or(0.0) as u64;
    }
    Ok(counts)
}

/// What `after` counts beyond `before`, the entries that grew, as `N VERB resource`.
pub(super) fn since(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> Vec<String> {
    after
        .iter()
        .filter_map(|(what, n)| {
            let d = n.saturating_sub(before.get(what).copied().unwrap_or(0));
            (d > 0).then(|| format!("{d} {what}"))
        })
        .collect()
}

/// Fails when the reconciler has exited, after printing what it logged as errors besides
/// failed passes (why it stopped).
pub(super) fn alive(reconciler: &mut Reconciler) -> Result<()> {
    let Err(e) = reconciler.check_alive() else {
        return Ok(());
    };
    if let Ok(text) = std::fs::read_to_string(reconciler.log()) {
        let last: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.starts_with("Error:")
                    || (l.contains("\"level\":\"ERROR\"") && !l.contains("reconcile failed"))
            })
            .collect();
        for line in &last[last.len().saturating_sub(3)..] {
            println!("    reconciler log: {line}");
        }
    }
    Err(e)
}

/// `VmHWM` and `VmRSS` of the reconciler in MiB; when they cannot be read, why (it exited).
pub(super) fn memory(reconciler: &mut Reconciler) -> Result<(f64, f64)> {
    process::memory(reconciler.pid()).or_else(|e| {
        alive(reconciler)?;
        Err(e)
    })
}

/// The reconciler's counters, asked up to three times: under load its `/metrics` can miss the
/// client's 5 s timeout.
pub(super) async fn counters(reconciler: &Reconciler) -> Result<Counters> {
    let mut tries = 0;
    loop {
        match reconciler.counters().await {
            Ok(c) => return Ok(c),
            Err(e) if tries >= 2 => return Err(e),
            Err(_) => tries += 1,
        }
    }
}

pub(super) async fn passes(reconciler: &Reconciler) -> Result<Vec<Passes>> {
    let mut out = Vec::new();
    for controller in CONTROLLERS {
        out.push(reconciler.passes(controller).await?);
    }
    Ok(out)
}

pub(super) fn print_passes(before: &[Passes], after: &[Passes]) {
    for ((controller, b), a) in CONTROLLERS.iter().zip(before).zip(after) {
        println!("    {controller} controller: {}", b.since(a));
    }
}
