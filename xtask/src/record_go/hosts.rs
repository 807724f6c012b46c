//! The Service names the Go operator dials, in `/etc/hosts` while a recording runs.

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, ListParams};

const HOSTS: &str = "/etc/hosts";
/// Ends every line this module writes, so that only those are ever removed.
const MARK: &str = "# cargo xtask record-go";

/// Points `<cluster>.<ns>.svc.cluster.local` and the headless Service's name at the first
/// Ready Garage pod of `ns`, if there is one; the file is rewritten only when that changes.
pub async fn point(client: &Client, ns: &str, cluster: &str) -> Result<()> {
    let pods = Api::<Pod>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await?;
    let ip = pods
        .items
        .iter()
        .filter(|p| ready(p))
        .find_map(|p| p.status.as_ref()?.pod_ip.clone());
    let Some(ip) = ip else { return Ok(()) };
    let names = [cluster.to_owned(), format!("{cluster}-headless")]
        .map(|svc| format!("{svc}.{ns}.svc.cluster.local"))
        .join(" ");
    let line = format!("{ip} {names} {MARK}");
    let text = std::fs::read_to_string(HOSTS).context("reading /etc/hosts")?;
    if text.lines().any(|l| l == line) {
        return Ok(());
    }
    let mut kept = without_marked(&text);
    kept.push_str(&line);
    kept.push('\n');
    std::fs::write(HOSTS, kept).context("writing /etc/hosts (the recorder runs as root)")
}

/// Removes every line [`point`] wrote.
pub fn clear() -> Result<()> {
    let text = std::fs::read_to_string(HOSTS).context("reading /etc/hosts")?;
    let kept = without_marked(&text);
    if kept != text {
        std::fs::write(HOSTS, kept).context("writing /etc/hosts")?;
    }
    Ok(())
}

fn without_marked(text: &str) -> String {
    text.lines()
        .filter(|l| !l.ends_with(MARK))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}
