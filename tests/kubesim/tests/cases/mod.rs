//! The cases and the helpers they share.

mod garage;
mod lifecycle;
mod load_balancer;
mod nodes;
mod probes;
mod volumes;
mod workloads;

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use kubesim::KubeSim;
use serde_json::{Value, json};

/// What every case gets.
pub struct Ctx {
    pub client: Client,
    pub sim: KubeSim,
}

type CaseFuture<'a> = Pin<Box<dyn Future<Output = anyhow::Result<()>> + 'a>>;
type Case = for<'a> fn(&'a Ctx) -> CaseFuture<'a>;

/// Every case, in the order they run (node loss last: it takes a node away).
pub const ALL: &[(&str, Case)] = &[
    ("volumes_and_env", |c| Box::pin(volumes::volumes_and_env(c))),
    ("missing_host_path_directory", |c| {
        Box::pin(volumes::missing_host_path_directory(c))
    }),
    ("claim_volume", |c| Box::pin(volumes::claim_volume(c))),
    ("probes_and_restarts", |c| {
        Box::pin(probes::probes_and_restarts(c))
    }),
    ("graceful_deletion", |c| {
        Box::pin(lifecycle::graceful_deletion(c))
    }),
    ("refused_final_delete", |c| {
        Box::pin(lifecycle::refused_final_delete(c))
    }),
    ("init_containers_and_completion", |c| {
        Box::pin(lifecycle::init_containers_and_completion(c))
    }),
    ("scheduling_gate", |c| {
        Box::pin(workloads::scheduling_gate(c))
    }),
    ("daemonset_node_selector", |c| {
        Box::pin(workloads::daemonset_node_selector(c))
    }),
    ("load_balancer", |c| {
        Box::pin(load_balancer::load_balancer(c))
    }),
    ("garage_statefulset", |c| {
        Box::pin(garage::garage_statefulset(c))
    }),
    ("lose_node", |c| Box::pin(nodes::lose_node(c))),
];

/// The image substring mapped to the probe-target test binary.
pub const TARGET_IMAGE: &str = "example.invalid/kubesim-probe-target:test";

/// Creates a namespace and waits for its default ServiceAccount (pods are
/// refused without it).
pub async fn namespace(ctx: &Ctx, name: &str) -> anyhow::Result<String> {
    let namespaces: Api<Namespace> = Api::all(ctx.client.clone());
    let ns: Namespace = serde_json::from_value(json!({ "metadata": { "name": name } }))?;
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    let accounts: Api<ServiceAccount> = Api::namespaced(ctx.client.clone(), name);
    wait(
        "the default ServiceAccount",
        Duration::from_secs(30),
        || {
            let accounts = accounts.clone();
            async move { Ok(accounts.get_opt("default").await?.is_some()) }
        },
    )
    .await?;
    Ok(name.to_owned())
}

/// Creates any namespaced object from JSON.
pub async fn create<K>(ctx: &Ctx, ns: &str, object: Value) -> anyhow::Result<K>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + serde::Serialize,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(ctx.client.clone(), ns);
    let object: K = serde_json::from_value(object)?;
    Ok(api.create(&PostParams::default(), &object).await?)
}

/// Polls `check` every 250ms until it is true or `limit` passes.
pub async fn wait<F, Fut>(what: &str, limit: Duration, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<bool>>,
{
    let deadline = Instant::now() + limit;
    let mut last_error = None;
    loop {
        match check().await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last_error = Some(e),
        }
        if Instant::now() > deadline {
            return Err(match last_error {
                Some(e) => anyhow!(
                    "{what} not reached within {}s (last error: {e:#})",
                    limit.as_secs()
                ),
                None => anyhow!("{what} not reached within {}s", limit.as_secs()),
            });
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until the pod satisfies `check`; the error shows its last status.
pub async fn wait_pod(
    ctx: &Ctx,
    ns: &str,
    name: &str,
    what: &str,
    limit: Duration,
    check: impl Fn(&Pod) -> bool,
) -> anyhow::Result<Pod> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), ns);
    let deadline = Instant::now() + limit;
    loop {
        let pod = pods.get_opt(name).await?;
        if let Some(pod) = &pod
            && check(pod)
        {
            return Ok(pod.clone());
        }
        if Instant::now() > deadline {
            let status = pod
                .and_then(|p| p.status)
                .map(|s| serde_json::to_string_pretty(&s).unwrap_or_default());
            bail!(
                "pod {ns}/{name}: {what} not reached within {}s; last status: {}",
                limit.as_secs(),
                status.unwrap_or_else(|| "<gone>".into())
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A condition's status ("True", "False", ...).
pub fn condition(pod: &Pod, kind: &str) -> Option<String> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| c.status.clone())
}

/// Whether the pod's Ready condition is True.
pub fn ready(pod: &Pod) -> bool {
    condition(pod, "Ready").as_deref() == Some("True")
}

/// The restart count of a container.
pub fn restarts(pod: &Pod, container: &str) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|l| l.iter().find(|c| c.name == container))
        .map_or(0, |c| c.restart_count)
}

/// The pids behind a pod's containers (`kubesim://<pid>` container IDs).
pub fn pids(pod: &Pod) -> Vec<i32> {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|c| {
            c.container_id
                .as_deref()?
                .strip_prefix("kubesim://")?
                .parse()
                .ok()
        })
        .collect()
}

/// Whether a process is alive (and not a zombie).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            != Some("Z")
    })
}

/// A container running the probe-target binary.
pub fn target(name: &str, report: &str, port: Option<u16>, paths: &[&str]) -> Value {
    let mut args = vec![
        report.to_owned(),
        port.map_or("-".to_owned(), |p| p.to_string()),
    ];
    args.extend(paths.iter().map(|p| (*p).to_owned()));
    json!({
        "name": name,
        "image": TARGET_IMAGE,
        "args": args,
        "env": [{ "name": "POD_IP", "valueFrom": { "fieldRef": { "fieldPath": "status.podIP" } } }],
    })
}

/// Reads a JSON file a pod wrote to a hostPath on `node`.
pub fn read_json(ctx: &Ctx, node: &str, path: &str) -> anyhow::Result<Value> {
    let file = ctx.sim.host_path(node, path);
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    Ok(serde_json::from_str(&text)?)
}

/// The node a pod runs on.
pub fn node_of(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

/// Pods in `ns` matching a label selector.
pub async fn list_pods(ctx: &Ctx, ns: &str, selector: &str) -> anyhow::Result<Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), ns);
    Ok(pods
        .list(&ListParams::default().labels(selector))
        .await?
        .items)
}
