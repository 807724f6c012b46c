//! Volumes and environment as a container sees them.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod, Secret};
use kube::Api;
use kube::api::ListParams;
use serde_json::{Value, json};

use super::{Ctx, TARGET_IMAGE, create, namespace, node_of, read_json, ready, wait, wait_pod};

/// ConfigMap, Secret, projected, downward-API, emptyDir and hostPath
/// volumes with items and modes; env from fieldRef, secretKeyRef,
/// configMapKeyRef, resourceFieldRef and envFrom, with `$(VAR)` expansion.
pub async fn volumes_and_env(ctx: &Ctx) -> anyhow::Result<()> {
    let ns = namespace(ctx, "kubesim-volumes").await?;
    create::<ConfigMap>(
        ctx,
        &ns,
        json!({
            "metadata": { "name": "settings" },
            "data": { "greeting": "hello", "nested": "deep", "MODE": "fast" },
        }),
    )
    .await?;
    create::<Secret>(
        ctx,
        &ns,
        json!({
            "metadata": { "name": "creds" },
            "stringData": { "rpc_secret": "s3cr3t", "token": "t0k3n" },
        }),
    )
    .await?;
    create::<Pod>(ctx, &ns, json!({
        "metadata": { "name": "volcase", "labels": { "app": "volcase" }, "annotations": { "note": "n1" } },
        "spec": {
            "nodeSelector": { "kubernetes.io/hostname": "node-a" },
            "containers": [{
                "name": "main",
                "image": TARGET_IMAGE,
                "args": ["/out/report.json", "8080", "/cm", "/secret", "/proj", "/down", "/scratch", "/sub"],
                "command": ["/bin/ignored"],
                "resources": { "limits": { "cpu": "500m", "memory": "64Mi" } },
                "envFrom": [{ "configMapRef": { "name": "settings" }, "prefix": "CM_" }],
                "env": [
                    { "name": "POD_NAME", "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } },
                    { "name": "POD_NS", "valueFrom": { "fieldRef": { "fieldPath": "metadata.namespace" } } },
                    { "name": "POD_UID", "valueFrom": { "fieldRef": { "fieldPath": "metadata.uid" } } },
                    { "name": "POD_IP", "valueFrom": { "fieldRef": { "fieldPath": "status.podIP" } } },
                    { "name": "HOST_IP", "valueFrom": { "fieldRef": { "fieldPath": "status.hostIP" } } },
                    { "name": "NODE", "valueFrom": { "fieldRef": { "fieldPath": "spec.nodeName" } } },
                    { "name": "SA", "valueFrom": { "fieldRef": { "fieldPath": "spec.serviceAccountName" } } },
                    { "name": "APP", "valueFrom": { "fieldRef": { "fieldPath": "metadata.labels['app']" } } },
                    { "name": "NOTE", "valueFrom": { "fieldRef": { "fieldPath": "metadata.annotations['note']" } } },
                    { "name": "SECRET", "valueFrom": { "secretKeyRef": { "name": "creds", "key": "rpc_secret" } } },
                    { "name": "GREETING", "valueFrom": { "configMapKeyRef": { "name": "settings", "key": "greeting" } } },
                    { "name": "MISSING", "valueFrom": { "configMapKeyRef": { "name": "settings", "key": "nope", "optional": true } } },
                    { "name": "CPU_MILLI", "valueFrom": { "resourceFieldRef": { "resource": "limits.cpu", "divisor": "1m" } } },
                    { "name": "MEM_MI", "valueFrom": { "resourceFieldRef": { "resource": "limits.memory", "divisor": "1Mi" } } },
                    { "name": "EXPANDED", "value": "$(POD_NAME)-$(GREETING)-$$(POD_NAME)-$(UNKNOWN)" },
                    { "name": "DATA_PATH", "value": "/scratch/data" },
                ],
                "volumeMounts": [
                    { "name": "out", "mountPath": "/out" },
                    { "name": "cm", "mountPath": "/cm" },
                    { "name": "secret", "mountPath": "/secret", "readOnly": true },
                    { "name": "proj", "mountPath": "/proj" },
                    { "name": "down", "mountPath": "/down" },
                    { "name": "scratch", "mountPath": "/scratch" },
                    { "name": "out", "mountPath": "/sub", "subPath": "nested/dir" },
                ],
            }],
            "volumes": [
                { "name": "out", "hostPath": { "path": "/data/volcase", "type": "DirectoryOrCreate" } },
                { "name": "cm", "configMap": { "name": "settings", "items": [
                    { "key": "greeting", "path": "greeting.txt" },
                    { "key": "nested", "path": "a/b/nested.txt", "mode": 0o600 },
                ] } },
                { "name": "secret", "secret": { "secretName": "creds", "defaultMode": 0o400 } },
                { "name": "proj", "projected": { "defaultMode": 0o440, "sources": [
                    { "secret": { "name": "creds", "items": [{ "key": "token", "path": "creds/token" }] } },
                    { "configMap": { "name": "settings", "items": [{ "key": "MODE", "path": "mode" }] } },
                    { "downwardAPI": { "items": [{ "path": "labels", "fieldRef": { "fieldPath": "metadata.labels" } }] } },
                    { "serviceAccountToken": { "path": "sa-token", "audience": "kubesim-test", "expirationSeconds": 600 } },
                ] } },
                { "name": "down", "downwardAPI": { "items": [
                    { "path": "name", "fieldRef": { "fieldPath": "metadata.name" } },
                    { "path": "cpu", "resourceFieldRef": { "containerName": "main", "resource": "limits.cpu", "divisor": "1m" } },
                ] } },
                { "name": "scratch", "emptyDir": {} },
            ],
        },
    }))
    .await?;
    let pod = wait_pod(ctx, &ns, "volcase", "Ready", Duration::from_secs(60), ready).await?;
    ensure!(
        node_of(&pod) == "node-a",
        "scheduled to {} instead of node-a",
        node_of(&pod)
    );
    let ip = ctx
        .sim
        .pod_ip(&ns, "volcase")
        .context("kubesim knows no address for the pod")?;
    let status = pod.status.clone().unwrap_or_default();
    ensure!(
        status.pod_ip.as_deref() == Some(ip.to_string().as_str()),
        "status.podIP {:?} != {ip}",
        status.pod_ip
    );
    ensure!(
        ip.to_string().starts_with("198.1"),
        "pod address {ip} is not in 198.18.0.0/15"
    );
    ensure!(
        status.phase.as_deref() == Some("Running"),
        "phase {:?}",
        status.phase
    );

    let mut report = Value::Null;
    wait("the report file", Duration::from_secs(10), || {
        let r = read_json(ctx, "node-a", "/data/volcase/report.json");
        let ok = r.is_ok();
        if let Ok(v) = r {
            report = v;
        }
        async move { Ok(ok) }
    })
    .await?;
    let env = &report["env"];
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let host_ip = ctx
        .sim
        .node_ip("node-a")
        .context("node-a address")?
        .to_string();
    let expect = [
        ("POD_NAME", "volcase"),
        ("POD_NS", ns.as_str()),
        ("POD_UID", uid.as_str()),
        ("HOST_IP", host_ip.as_str()),
        ("NODE", "node-a"),
        ("SA", "default"),
        ("APP", "volcase"),
        ("NOTE", "n1"),
        ("SECRET", "s3cr3t"),
        ("GREETING", "hello"),
        ("CM_MODE", "fast"),
        ("CM_greeting", "hello"),
        ("CPU_MILLI", "500"),
        ("MEM_MI", "64"),
        ("EXPANDED", "volcase-hello-$(POD_NAME)-$(UNKNOWN)"),
        ("HOSTNAME", "volcase"),
    ];
    for (key, value) in expect {
        ensure!(
            env[key] == json!(value),
            "env {key} = {} (want {value:?})",
            env[key]
        );
    }
    ensure!(
        env["POD_IP"] == json!(ip.to_string()),
        "env POD_IP = {}",
        env["POD_IP"]
    );
    ensure!(
        env.get("MISSING").is_none(),
        "optional missing key produced MISSING={}",
        env["MISSING"]
    );
    let scratch = ctx
        .sim
        .pod_dir(&ns, "volcase")
        .context("pod dir")?
        .join("volumes/scratch/data");
    ensure!(
        env["DATA_PATH"] == json!(scratch.display().to_string()),
        "env DATA_PATH = {} (want the host path {})",
        env["DATA_PATH"],
        scratch.display()
    );
    ensure!(
        report["argv"].as_array().is_some_and(|a| a.len() == 9),
        "argv {} (command[0] should be replaced by the binary)",
        report["argv"]
    );

    let entries = |i: usize| report["paths"][i]["entries"].clone();
    let file = |i: usize, name: &str| entries(i)[name].clone();
    ensure!(
        file(0, "greeting.txt") == json!({"mode": "644", "content": "hello"}),
        "/cm/greeting.txt: {}",
        file(0, "greeting.txt")
    );
    ensure!(
        file(0, "a/b/nested.txt") == json!({"mode": "600", "content": "deep"}),
        "/cm/a/b/nested.txt: {}",
        file(0, "a/b/nested.txt")
    );
    ensure!(
        entries(0).as_object().is_some_and(|m| m.len() == 2),
        "/cm has only the listed items: {}",
        entries(0)
    );
    ensure!(
        file(1, "rpc_secret") == json!({"mode": "400", "content": "s3cr3t"}),
        "/secret/rpc_secret: {}",
        file(1, "rpc_secret")
    );
    ensure!(
        file(2, "creds/token") == json!({"mode": "440", "content": "t0k3n"}),
        "/proj/creds/token: {}",
        file(2, "creds/token")
    );
    ensure!(
        file(2, "mode")["content"] == json!("fast"),
        "/proj/mode: {}",
        file(2, "mode")
    );
    // The API server adds the node's topology labels at binding time
    // (PodTopologyLabelsAdmission), so look for ours among them.
    let labels = file(2, "labels")["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    ensure!(
        labels.lines().any(|l| l == "app=\"volcase\""),
        "/proj/labels: {labels:?}"
    );
    let token = file(2, "sa-token")["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    ensure!(
        token.split('.').count() == 3,
        "/proj/sa-token is not a JWT: {token:?}"
    );
    ensure!(
        file(3, "name")["content"] == json!("volcase"),
        "/down/name: {}",
        file(3, "name")
    );
    ensure!(
        file(3, "cpu")["content"] == json!("500"),
        "/down/cpu: {}",
        file(3, "cpu")
    );
    ensure!(
        entries(4).as_object().is_some_and(|m| m.is_empty()),
        "/scratch should be empty: {}",
        entries(4)
    );
    ensure!(
        ctx.sim
            .host_path("node-a", "/data/volcase/nested/dir")
            .is_dir(),
        "subPath directory was not created"
    );
    Ok(())
}

/// A hostPath of type Directory that does not exist keeps the pod Pending
/// (ContainerCreating) with a FailedMount event naming the path; creating
/// the directory lets it start on the next retry.
pub async fn missing_host_path_directory(ctx: &Ctx) -> anyhow::Result<()> {
    let ns = namespace(ctx, "kubesim-hostpath").await?;
    let mut container = super::target("main", "/data/report.json", None, &[]);
    container["args"] = json!(["/data/report.json", "8080"]);
    container["volumeMounts"] = json!([{ "name": "data", "mountPath": "/data" }]);
    create::<Pod>(ctx, &ns, json!({
        "metadata": { "name": "nodir" },
        "spec": {
            "nodeSelector": { "kubernetes.io/hostname": "node-b" },
            "containers": [container],
            "volumes": [{ "name": "data", "hostPath": { "path": "/srv/kubesim-missing", "type": "Directory" } }],
        },
    }))
    .await?;
    let events: Api<Event> = Api::namespaced(ctx.client.clone(), &ns);
    let found = std::sync::Mutex::new(String::new());
    wait("a FailedMount event", Duration::from_secs(30), || {
        let events = events.clone();
        let found = &found;
        async move {
            let list = events.list(&ListParams::default()).await?;
            if let Some(e) = list
                .items
                .iter()
                .find(|e| e.reason.as_deref() == Some("FailedMount"))
            {
                *found.lock().unwrap() = e.message.clone().unwrap_or_default();
                return Ok(true);
            }
            Ok(false)
        }
    })
    .await?;
    let message = found.into_inner().unwrap();
    ensure!(
        message.contains("/srv/kubesim-missing"),
        "FailedMount event does not name the path: {message}"
    );
    let pod = wait_pod(
        ctx,
        &ns,
        "nodir",
        "status written",
        Duration::from_secs(10),
        |p| {
            p.status
                .as_ref()
                .is_some_and(|s| s.container_statuses.is_some())
        },
    )
    .await?;
    let status = pod.status.unwrap_or_default();
    ensure!(
        status.phase.as_deref() == Some("Pending"),
        "phase {:?}",
        status.phase
    );
    let waiting = status
        .container_statuses
        .unwrap_or_default()
        .first()
        .and_then(|c| c.state.clone())
        .and_then(|s| s.waiting)
        .and_then(|w| w.reason);
    ensure!(
        waiting.as_deref() == Some("ContainerCreating"),
        "container waiting reason {waiting:?}"
    );
    std::fs::create_dir_all(ctx.sim.host_path("node-b", "/srv/kubesim-missing"))?;
    wait_pod(
        ctx,
        &ns,
        "nodir",
        "Running after the directory appeared",
        Duration::from_secs(30),
        |p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"),
    )
    .await?;
    Ok(())
}

/// A claim of the `local-sim` StorageClass (WaitForFirstConsumer) is
/// provisioned on the pod's node once the pod is scheduled; the pod waits
/// for the binding and then writes into the PV's directory.
pub async fn claim_volume(ctx: &Ctx) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    let ns = namespace(ctx, "kubesim-claims").await?;
    create::<PersistentVolumeClaim>(
        ctx,
        &ns,
        json!({
            "metadata": { "name": "data" },
            "spec": {
                "storageClassName": kubesim::STORAGE_CLASS,
                "accessModes": ["ReadWriteOnce"],
                "resources": { "requests": { "storage": "1Gi" } },
            },
        }),
    )
    .await?;
    let mut container = super::target("main", "/data/report.json", Some(8084), &[]);
    container["volumeMounts"] = json!([{ "name": "data", "mountPath": "/data" }]);
    create::<Pod>(
        ctx,
        &ns,
        json!({
            "metadata": { "name": "claimer" },
            "spec": {
                "nodeSelector": { "kubernetes.io/hostname": "node-b" },
                "containers": [container],
                "volumes": [{ "name": "data", "persistentVolumeClaim": { "claimName": "data" } }],
            },
        }),
    )
    .await?;
    wait_pod(ctx, &ns, "claimer", "Ready", Duration::from_secs(60), ready).await?;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &ns);
    let pv = claims
        .get("data")
        .await?
        .spec
        .and_then(|s| s.volume_name)
        .context("the claim is not bound")?;
    let report = ctx
        .sim
        .node_root("node-b")
        .join("volumes")
        .join(&pv)
        .join("report.json");
    ensure!(report.is_file(), "{} was not written", report.display());

    // After a restart the new process appends to the file its predecessor
    // created: the claim's data outlives the container.
    ctx.sim.kill_container(&ns, "claimer", "main").await?;
    let starts = report.with_extension("json.starts");
    wait(
        "the restarted container to see its claim's files",
        Duration::from_secs(60),
        || {
            let starts = starts.clone();
            async move {
                let text = std::fs::read_to_string(&starts).unwrap_or_default();
                Ok(text.lines().filter(|l| l.starts_with("start ")).count() >= 2)
            }
        },
    )
    .await?;
    Ok(())
}
