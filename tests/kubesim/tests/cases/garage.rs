//! Real Garage in a StatefulSet.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Context as _, anyhow, ensure};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use kube::api::ListParams;
use localcluster::tools::Tool;
use serde_json::{Value, json};

use super::{Ctx, create, namespace, wait};

const ADMIN_TOKEN: &str = "kubesim-admin-token";

const CONFIG: &str = r#"metadata_dir = "/var/lib/garage/meta"
data_dir = "/var/lib/garage/data"
db_engine = "lmdb"
replication_factor = 3
rpc_bind_addr = "[::]:3901"
rpc_secret_file = "/etc/garage-secret/rpc_secret"

[s3_api]
s3_region = "garage"
api_bind_addr = "[::]:3900"
root_domain = ".s3.garage.localhost"

[admin]
api_bind_addr = "0.0.0.0:3903"
admin_token = "kubesim-admin-token"
"#;

/// Three garage processes from a StatefulSet (config from a ConfigMap, RPC
/// secret from a Secret with mode 0400, data on emptyDir) become Ready, are
/// listed in the headless Service's EndpointSlice, connect to each other
/// and take a layout through the Admin API, after which the cluster is
/// healthy and an object written through one pod is read back through
/// another.
pub async fn garage_statefulset(ctx: &Ctx) -> anyhow::Result<()> {
    Tool::Garage.require()?;
    let ns = namespace(ctx, "kubesim-garage").await?;
    create::<ConfigMap>(
        ctx,
        &ns,
        json!({ "metadata": { "name": "garage-config" }, "data": { "garage.toml": CONFIG } }),
    )
    .await?;
    create::<Secret>(ctx, &ns, json!({
        "metadata": { "name": "garage-rpc" },
        "stringData": { "rpc_secret": "4425f5c26c5e11581d3223904324dcb5b5d5dfb14e5e7f35e38c595424f5f1e6" },
    }))
    .await?;
    create::<Service>(ctx, &ns, json!({
        "metadata": { "name": "garage" },
        "spec": { "clusterIP": "None", "selector": { "app": "garage" }, "ports": [{ "name": "rpc", "port": 3901 }] },
    }))
    .await?;
    create::<StatefulSet>(ctx, &ns, json!({
        "metadata": { "name": "garage" },
        "spec": {
            "serviceName": "garage",
            "replicas": 3,
            "podManagementPolicy": "Parallel",
            "selector": { "matchLabels": { "app": "garage" } },
            "template": {
                "metadata": { "labels": { "app": "garage" } },
                "spec": {
                    "containers": [{
                        "name": "garage",
                        "image": "dxflrs/garage:v2.5.0",
                        "command": ["/garage", "server"],
                        "env": [{ "name": "GARAGE_CONFIG_FILE", "value": "/etc/garage/garage.toml" }],
                        "ports": [
                            { "name": "s3", "containerPort": 3900 },
                            { "name": "rpc", "containerPort": 3901 },
                            { "name": "admin", "containerPort": 3903 },
                        ],
                        "volumeMounts": [
                            { "name": "config", "mountPath": "/etc/garage" },
                            { "name": "secret", "mountPath": "/etc/garage-secret", "readOnly": true },
                            { "name": "data", "mountPath": "/var/lib/garage" },
                        ],
                        "startupProbe": {
                            "exec": { "command": ["/garage", "node", "id", "-q"] },
                            "periodSeconds": 2, "timeoutSeconds": 10, "failureThreshold": 30,
                        },
                        "readinessProbe": { "tcpSocket": { "port": "admin" }, "periodSeconds": 1 },
                    }],
                    "volumes": [
                        { "name": "config", "configMap": { "name": "garage-config" } },
                        { "name": "secret", "secret": { "secretName": "garage-rpc", "defaultMode": 0o400 } },
                        { "name": "data", "emptyDir": {} },
                    ],
                },
            },
        },
    }))
    .await?;
    let sets: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), &ns);
    wait(
        "StatefulSet readyReplicas == 3",
        Duration::from_secs(120),
        || {
            let sets = sets.clone();
            async move {
                Ok(sets
                    .get("garage")
                    .await?
                    .status
                    .and_then(|s| s.ready_replicas)
                    == Some(3))
            }
        },
    )
    .await
    .map_err(|e| {
        anyhow!(
            "{e:#}; garage logs are in {}",
            ctx.sim.node_root("node-a").display()
        )
    })?;

    let names = ["garage-0", "garage-1", "garage-2"];
    let mut ips = Vec::new();
    for name in names {
        ips.push(
            ctx.sim
                .pod_ip(&ns, name)
                .with_context(|| format!("no address for {name}"))?,
        );
    }
    let rewritten = ctx
        .sim
        .pod_dir(&ns, "garage-0")
        .context("pod dir")?
        .join("garage/garage.toml");
    let text = std::fs::read_to_string(&rewritten)?;
    ensure!(
        text.contains(&format!("\"{}:3901\"", ips[0])),
        "rewritten config binds elsewhere:\n{text}"
    );

    let slices: Api<EndpointSlice> = Api::namespaced(ctx.client.clone(), &ns);
    let want: BTreeSet<String> = ips.iter().map(ToString::to_string).collect();
    wait(
        "the EndpointSlice to list the three pods",
        Duration::from_secs(30),
        || {
            let slices = slices.clone();
            let want = want.clone();
            async move {
                let list = slices
                    .list(&ListParams::default().labels("kubernetes.io/service-name=garage"))
                    .await?;
                let got: BTreeSet<String> = list
                    .items
                    .iter()
                    .flat_map(|s| {
                        s.endpoints
                            .iter()
                            .flatten()
                            .flat_map(|e| e.addresses.clone())
                    })
                    .collect();
                Ok(got == want)
            }
        },
    )
    .await?;

    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()?;
    let admin = |i: usize, method: reqwest::Method, path: &str, body: Option<Value>| {
        let mut request = http
            .request(method, format!("http://{}:3903{path}", ips[i]))
            .bearer_auth(ADMIN_TOKEN);
        if let Some(body) = body {
            request = request.json(&body);
        }
        async move {
            let response = request.send().await?;
            let status = response.status();
            let text = response.text().await?;
            ensure!(status.is_success(), "{status}: {text}");
            Ok::<Value, anyhow::Error>(serde_json::from_str(&text).unwrap_or(Value::Null))
        }
    };
    let mut ids = Vec::new();
    for i in 0..3 {
        let info = admin(i, reqwest::Method::GET, "/v2/GetNodeInfo?node=self", None).await?;
        let id = info["success"]
            .as_object()
            .and_then(|m| m.keys().next().cloned())
            .with_context(|| format!("no node id in {info}"))?;
        ids.push(id);
    }
    let peers: Vec<String> = (1..3)
        .map(|i| format!("{}@{}:3901", ids[i], ips[i]))
        .collect();
    wait(
        "the three garage nodes to see each other",
        Duration::from_secs(60),
        || {
            let admin = &admin;
            let peers = peers.clone();
            async move {
                let answer = admin(
                    0,
                    reqwest::Method::POST,
                    "/v2/ConnectClusterNodes",
                    Some(json!(peers)),
                )
                .await?;
                if !answer
                    .as_array()
                    .is_some_and(|a| a.iter().all(|r| r["success"] == json!(true)))
                {
                    return Ok(false);
                }
                for i in 0..3 {
                    let status =
                        admin(i, reqwest::Method::GET, "/v2/GetClusterStatus", None).await?;
                    let up = status["nodes"]
                        .as_array()
                        .map_or(0, |n| n.iter().filter(|n| n["isUp"] == json!(true)).count());
                    if up < 3 {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        },
    )
    .await?;
    let roles: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| json!({ "id": id, "zone": format!("zone-{i}"), "capacity": 1_000_000_000u64, "tags": [] }))
        .collect();
    admin(
        0,
        reqwest::Method::POST,
        "/v2/UpdateClusterLayout",
        Some(json!({ "roles": roles })),
    )
    .await?;
    let layout = admin(0, reqwest::Method::GET, "/v2/GetClusterLayout", None).await?;
    let version = layout["version"].as_u64().unwrap_or(0) + 1;
    admin(
        0,
        reqwest::Method::POST,
        "/v2/ApplyClusterLayout",
        Some(json!({ "version": version })),
    )
    .await?;
    wait(
        "GetClusterHealth status healthy on every node",
        Duration::from_secs(60),
        || {
            let admin = &admin;
            async move {
                for i in 0..3 {
                    let health =
                        admin(i, reqwest::Method::GET, "/v2/GetClusterHealth", None).await?;
                    if health["status"] != json!("healthy") {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        },
    )
    .await?;
    s3_round_trip(&admin, &ips).await
}

/// Writes an object through the first pod's S3 endpoint and reads it back
/// through the second one, with SigV4-signed requests.
async fn s3_round_trip<F, Fut>(admin: &F, ips: &[std::net::IpAddr]) -> anyhow::Result<()>
where
    F: Fn(usize, reqwest::Method, &str, Option<Value>) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Value>>,
{
    use garage_fixture::s3::Objects;

    let key = admin(
        0,
        reqwest::Method::POST,
        "/v2/CreateKey",
        Some(json!({ "name": "kubesim" })),
    )
    .await?;
    let (access, secret) = (
        key["accessKeyId"]
            .as_str()
            .context("no accessKeyId")?
            .to_owned(),
        key["secretAccessKey"]
            .as_str()
            .context("no secretAccessKey")?
            .to_owned(),
    );
    let bucket = admin(
        0,
        reqwest::Method::POST,
        "/v2/CreateBucket",
        Some(json!({ "globalAlias": "kubesim" })),
    )
    .await?;
    let bucket_id = bucket["id"].as_str().context("no bucket id")?.to_owned();
    admin(
        0,
        reqwest::Method::POST,
        "/v2/AllowBucketKey",
        Some(json!({
            "bucketId": bucket_id,
            "accessKeyId": access,
            "permissions": { "read": true, "write": true, "owner": false },
        })),
    )
    .await?;
    let endpoint = |i: usize| format!("http://{}:3900", ips[i]);
    let body = format!(
        "written through {} at {:?}",
        ips[0],
        std::time::SystemTime::now()
    );
    Objects::new("kubesim", &access, &secret)?
        .round_trip(
            &endpoint(0),
            &endpoint(1),
            &[("hello.txt".to_owned(), body.into_bytes())],
        )
        .await?;
    Ok(())
}
