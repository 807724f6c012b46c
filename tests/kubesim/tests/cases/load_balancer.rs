//! A `LoadBalancer` Service gets an address of its own in its status, and a connection to it
//! reaches a pod the Service selects; once the Service is deleted the address no longer
//! answers.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::Api;
use kube::api::DeleteParams;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

pub async fn load_balancer(ctx: &Ctx) -> anyhow::Result<()> {
    let ns = namespace(ctx, "kubesim-lb").await?;
    let mut container = target("web", "/ctl/report.json", Some(8080), &[]);
    container["volumeMounts"] = json!([{ "name": "ctl", "mountPath": "/ctl" }]);
    container["readinessProbe"] = json!({ "tcpSocket": { "port": 8080 }, "periodSeconds": 1 });
    create::<Pod>(ctx, &ns, json!({
        "metadata": { "name": "backend", "labels": { "app": "lb" } },
        "spec": {
            "nodeSelector": { "kubernetes.io/hostname": "node-c" },
            "terminationGracePeriodSeconds": 1,
            "containers": [container],
            "volumes": [{ "name": "ctl", "hostPath": { "path": "/data/lb", "type": "DirectoryOrCreate" } }],
        },
    }))
    .await?;
    wait_pod(ctx, &ns, "backend", "Ready", Duration::from_secs(30), ready).await?;
    create::<Service>(
        ctx,
        &ns,
        json!({
            "metadata": { "name": "public" },
            "spec": {
                "type": "LoadBalancer",
                "selector": { "app": "lb" },
                "ports": [{ "name": "http", "port": 80, "targetPort": 8080 }],
            },
        }),
    )
    .await?;
    let services: Api<Service> = Api::namespaced(ctx.client.clone(), &ns);
    let found = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    wait("an ingress address", Duration::from_secs(30), || {
        let (services, found) = (services.clone(), found.clone());
        async move {
            let ip = services
                .get("public")
                .await?
                .status
                .and_then(|s| s.load_balancer)
                .and_then(|lb| lb.ingress)
                .and_then(|i| i.into_iter().next())
                .and_then(|i| i.ip);
            let seen = ip.is_some();
            *found.lock().unwrap() = ip;
            Ok(seen)
        }
    })
    .await?;
    let ip = found.lock().unwrap().clone();
    let ip = ip.context("no ingress address")?;
    let answer = get(&ip, 80).await.context("through the load balancer")?;
    ensure!(answer.starts_with("HTTP/1.1 200"), "answer: {answer:?}");

    services.delete("public", &DeleteParams::default()).await?;
    wait(
        "the address to stop answering",
        Duration::from_secs(30),
        || {
            let ip = ip.clone();
            async move { Ok(get(&ip, 80).await.is_err()) }
        },
    )
    .await?;
    Ok(())
}

/// One HTTP GET over a fresh connection; the status line and what follows.
async fn get(ip: &str, port: u16) -> anyhow::Result<String> {
    let mut s = tokio::time::timeout(
        Duration::from_secs(2),
        tokio::net::TcpStream::connect((ip, port)),
    )
    .await??;
    s.write_all(b"GET /x HTTP/1.1\r\nHost: lb\r\nConnection: close\r\n\r\n")
        .await?;
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(2), s.read_to_string(&mut out)).await??;
    ensure!(!out.is_empty(), "the connection closed without an answer");
    Ok(out)
}
