//! Init containers, completion, graceful deletion and a refused final delete.

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use serde_json::json;

use super::{Ctx, alive, create, namespace, pids, ready, target, wait, wait_pod};

/// Deleting a pod runs preStop, SIGTERMs the process, and the pod object
/// disappears once it exited (kubesim's final delete), well before the
/// grace period ends; the pod's address is released.
pub async fn graceful_deletion(ctx: &Ctx) -> anyhow::Result<()> {
    let ns = namespace(ctx, "kubesim-deletion").await?;
    let mut container = target("main", "/data/report.json", Some(8080), &[]);
    container["volumeMounts"] = json!([{ "name": "data", "mountPath": "/data" }]);
    container["lifecycle"] =
        json!({ "preStop": { "exec": { "command": ["touch", "/data/prestop-ran"] } } });
    create::<Pod>(ctx, &ns, json!({
        "metadata": { "name": "doomed" },
        "spec": {
            "nodeSelector": { "kubernetes.io/hostname": "node-b" },
            "terminationGracePeriodSeconds": 60,
            "containers": [container],
            "volumes": [{ "name": "data", "hostPath": { "path": "/data/deletion", "type": "DirectoryOrCreate" } }],
        },
    }))
    .await?;
    let pod = wait_pod(ctx, &ns, "doomed", "Ready", Duration::from_secs(30), ready).await?;
    let pid = *pids(&pod).first().context("no container id")?;
    let ip = ctx.sim.pod_ip(&ns, "doomed").context("no pod address")?;
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    let begin = Instant::now();
    pods.delete("doomed", &DeleteParams::default()).await?;
    wait(
        "the pod object to disappear",
        Duration::from_secs(30),
        || {
            let pods = pods.clone();
            async move { Ok(pods.get_opt("doomed").await?.is_none()) }
        },
    )
    .await?;
    ensure!(
        begin.elapsed() < Duration::from_secs(30),
        "deletion waited for the grace period instead of the process exit"
    );
    let signals = std::fs::read_to_string(
        ctx.sim
            .host_path("node-b", "/data/deletion/report.json.signals"),
    )
    .unwrap_or_default();
    ensure!(
        signals.contains("SIGTERM"),
        "the process did not see SIGTERM"
    );
    ensure!(
        ctx.sim
            .host_path("node-b", "/data/deletion/prestop-ran")
            .exists(),
        "the preStop hook did not run"
    );
    ensure!(!alive(pid), "process {pid} is still alive");
    let lo = std::process::Command::new("ip")
        .args(["-4", "-o", "addr", "show", "dev", "lo"])
        .output()?;
    let lo = String::from_utf8_lossy(&lo.stdout);
    ensure!(
        !lo.contains(&format!(" {ip}/32")),
        "address {ip} is still on lo"
    );
    Ok(())
}

/// A pod whose final delete the API server refuses (here a ValidatingAdmissionPolicy that
/// turns down deleting a pod already terminating; in life an outage, an overloaded API server
/// or a connection that died under the request): kubesim tries again, as the kubelet does,
/// and the pod object disappears once the refusal is lifted. A single attempt would leave the
/// pod Terminating for good, and a StatefulSet waiting on it.
pub async fn refused_final_delete(ctx: &Ctx) -> anyhow::Result<()> {
    let ns = namespace(ctx, "kubesim-refused-delete").await?;
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(ctx.client.clone());
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(ctx.client.clone());
    let name = "kubesim-refuse-final-delete";
    policies
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": { "name": name },
                "spec": {
                    "failurePolicy": "Fail",
                    "matchConstraints": { "resourceRules": [{
                        "apiGroups": [""], "apiVersions": ["v1"],
                        "operations": ["DELETE"], "resources": ["pods"],
                    }]},
                    "validations": [{
                        "expression": "!has(oldObject.metadata.deletionTimestamp)",
                        "message": "kubesim test: the final delete is refused",
                    }],
                },
            }))?,
        )
        .await?;
    let binding = json!({
        "metadata": { "name": name },
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": { "namespaceSelector": { "matchLabels": {
                "kubernetes.io/metadata.name": ns,
            }}},
        },
    });
    bindings
        .create(&PostParams::default(), &serde_json::from_value(binding)?)
        .await?;
    let mut container = target("main", "/data/report.json", Some(8080), &[]);
    container["volumeMounts"] = json!([{ "name": "data", "mountPath": "/data" }]);
    // Time for the test to see the refusal in force before kubesim sends its final delete.
    container["lifecycle"] = json!({ "preStop": { "exec": { "command": ["sleep", "5"] } } });
    create::<Pod>(ctx, &ns, json!({
        "metadata": { "name": "refused" },
        "spec": {
            "nodeSelector": { "kubernetes.io/hostname": "node-b" },
            "terminationGracePeriodSeconds": 60,
            "containers": [container],
            "volumes": [{ "name": "data", "hostPath": { "path": "/data/refused", "type": "DirectoryOrCreate" } }],
        },
    }))
    .await?;
    let pod = wait_pod(ctx, &ns, "refused", "Ready", Duration::from_secs(30), ready).await?;
    let pid = *pids(&pod).first().context("no container id")?;
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    pods.delete("refused", &DeleteParams::default()).await?;
    // The policy is in force once a dry-run delete of the terminating pod is refused; the
    // pod still exists then, so kubesim's own delete is yet to come.
    let dry_run = DeleteParams {
        dry_run: true,
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    wait("the refusal in force", Duration::from_secs(4), || {
        let (pods, dry_run) = (pods.clone(), dry_run.clone());
        async move {
            match pods.delete("refused", &dry_run).await {
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    anyhow::bail!("the pod was deleted before the refusal took effect")
                }
                Err(kube::Error::Api(s)) => Ok(s.message.contains("final delete is refused")),
                _ => Ok(false),
            }
        }
    })
    .await?;
    wait("the process to exit", Duration::from_secs(30), || async {
        Ok(!alive(pid))
    })
    .await?;
    // Its final delete follows the exit at once and is refused; the pod stays.
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(
        pods.get_opt("refused").await?.is_some(),
        "the pod was deleted although its final delete was refused"
    );
    bindings.delete(name, &DeleteParams::default()).await?;
    policies.delete(name, &DeleteParams::default()).await?;
    wait(
        "the pod object to disappear once the refusal is lifted",
        Duration::from_secs(30),
        || {
            let pods = pods.clone();
            async move { Ok(pods.get_opt("refused").await?.is_none()) }
        },
    )
    .await
}

/// Init containers run in order before the app container; a pod with
/// restartPolicy Never whose container exits 0 ends Succeeded, one that
/// exits non-zero ends Failed.
pub async fn init_containers_and_completion(ctx: &Ctx) -> anyhow::Result<()> {
    let ns = namespace(ctx, "kubesim-init").await?;
    let mount = json!([{ "name": "data", "mountPath": "/data" }]);
    let mut first = target("first", "/data/first.json", None, &[]);
    first["volumeMounts"] = mount.clone();
    let mut second = target("second", "/data/second.json", None, &["/data/first.json"]);
    second["volumeMounts"] = mount.clone();
    let mut main = target("main", "/data/main.json", None, &["/data/second.json"]);
    main["volumeMounts"] = mount.clone();
    create::<Pod>(ctx, &ns, json!({
        "metadata": { "name": "ordered" },
        "spec": {
            "nodeSelector": { "kubernetes.io/hostname": "node-c" },
            "restartPolicy": "Never",
            "initContainers": [first, second, { "name": "placeholder", "image": "busybox:1.36", "command": ["sh", "-c", "exit 0"] }],
            "containers": [main],
            "volumes": [{ "name": "data", "emptyDir": {} }],
        },
    }))
    .await?;
    let pod = wait_pod(
        ctx,
        &ns,
        "ordered",
        "Succeeded",
        Duration::from_secs(30),
        |p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"),
    )
    .await?;
    let status = pod.status.unwrap_or_default();
    let inits = status.init_container_statuses.unwrap_or_default();
    ensure!(inits.len() == 3, "{} init container statuses", inits.len());
    for c in &inits {
        let code = c
            .state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .map(|t| t.exit_code);
        ensure!(
            code == Some(0),
            "init container {} ended with {code:?}",
            c.name
        );
    }
    let dir = ctx
        .sim
        .pod_dir(&ns, "ordered")
        .context("pod dir")?
        .join("volumes/data");
    let main: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("main.json"))?)?;
    ensure!(
        main["paths"][0]["entries"][""].is_object(),
        "main did not see second's report: {}",
        main["paths"]
    );
    let second: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("second.json"))?)?;
    ensure!(
        second["paths"][0]["entries"][""].is_object(),
        "second ran before first finished: {}",
        second["paths"]
    );

    create::<Pod>(
        ctx,
        &ns,
        json!({
            "metadata": { "name": "failing" },
            "spec": {
                "nodeSelector": { "kubernetes.io/hostname": "node-c" },
                "restartPolicy": "Never",
                "containers": [{ "name": "main", "image": TARGET, "args": [] }],
            },
        }),
    )
    .await?;
    let pod = wait_pod(
        ctx,
        &ns,
        "failing",
        "Failed",
        Duration::from_secs(30),
        |p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed"),
    )
    .await?;
    let code = pod
        .status
        .and_then(|s| s.container_statuses)
        .and_then(|l| l.first().and_then(|c| c.state.clone()))
        .and_then(|s| s.terminated)
        .map(|t| t.exit_code);
    ensure!(code == Some(1), "exit code {code:?}, want 1");
    Ok(())
}

const TARGET: &str = super::TARGET_IMAGE;
