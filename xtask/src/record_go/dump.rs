//! Reading back what the Go operator made, and writing it down.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::Value;

use crate::local_env::LocalEnv;

/// Every kind the Go operator creates in a cluster's namespace, as (group, version, kind).
const KINDS: [(&str, &str, &str); 13] = [
    ("garage.rajsingh.info", "v1beta2", "GarageCluster"),
    ("garage.rajsingh.info", "v1beta1", "GarageNode"),
    ("garage.rajsingh.info", "v1beta1", "GarageBucket"),
    ("garage.rajsingh.info", "v1beta1", "GarageKey"),
    ("apps", "v1", "StatefulSet"),
    ("apps", "v1", "Deployment"),
    ("apps", "v1", "DaemonSet"),
    ("", "v1", "Service"),
    ("", "v1", "ConfigMap"),
    ("", "v1", "Secret"),
    ("", "v1", "PersistentVolumeClaim"),
    ("", "v1", "Pod"),
    ("policy", "v1", "PodDisruptionBudget"),
];

fn api(
    client: &Client,
    ns: &str,
    (group, version, kind): (&str, &str, &str),
) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    Api::namespaced_with(client.clone(), ns, &resource)
}

async fn list(client: &Client, ns: &str, kind: (&str, &str, &str)) -> Result<Vec<Value>> {
    let items = api(client, ns, kind)
        .list(&ListParams::default())
        .await?
        .items;
    let (group, version, kind) = kind;
    let api_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    items
        .into_iter()
        .map(|o| {
            let mut v = serde_json::to_value(o)?;
            v["apiVersion"] = api_version.clone().into();
            v["kind"] = kind.into();
            if let Some(meta) = v["metadata"].as_object_mut() {
                meta.remove("managedFields");
            }
            Ok(v)
        })
        .collect()
}

fn condition_true(object: &Value, kind: &str) -> bool {
    object["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == kind && c["status"] == "True")
    })
}

/// Whether the cluster is Ready, every member has a node ID, and the bucket and key are Ready.
pub async fn all_ready(client: &Client, ns: &str) -> Result<bool> {
    let clusters = list(client, ns, KINDS[0]).await?;
    let nodes = list(client, ns, KINDS[1]).await?;
    let buckets = list(client, ns, KINDS[2]).await?;
    let keys = list(client, ns, KINDS[3]).await?;
    let cluster_ready = clusters.iter().all(|c| condition_true(c, "Ready")) && !clusters.is_empty();
    let members = nodes.len() >= 3 && nodes.iter().all(|n| n["status"]["nodeId"].is_string());
    let phase_ready = |o: &Value| o["status"]["phase"] == "Ready";
    Ok(cluster_ready
        && members
        && !buckets.is_empty()
        && buckets.iter().all(phase_ready)
        && !keys.is_empty()
        && keys.iter().all(phase_ready))
}

/// Writes `objects.json` (every object of [`KINDS`] but the namespace's own root CA and
/// pods, sorted by kind and name), `pods.json` (the pods, for what ran) and `layout.json`
/// (the Garage layout, as the first member's Admin API reports it) into `out`.
pub async fn write(client: &Client, env: &LocalEnv, ns: &str, out: &Path) -> Result<()> {
    std::fs::create_dir_all(out)?;
    let mut objects = Vec::new();
    let mut pods = Vec::new();
    for kind in KINDS {
        for object in list(client, ns, kind).await? {
            match (kind.2, object["metadata"]["name"].as_str()) {
                ("ConfigMap", Some("kube-root-ca.crt")) => {}
                ("Pod", _) => pods.push(object),
                _ => objects.push(object),
            }
        }
    }
    let layout = layout(env, &objects, ns).await?;
    for (file, value) in [
        ("objects.json", Value::from(objects)),
        ("pods.json", Value::from(pods)),
        ("layout.json", layout),
    ] {
        let path = out.join(file);
        std::fs::write(&path, serde_json::to_string_pretty(&value)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// `GetClusterLayout` from a member, with the admin token from the Secret the pods mount.
async fn layout(env: &LocalEnv, objects: &[Value], ns: &str) -> Result<Value> {
    let statefulset = objects
        .iter()
        .find(|o| o["kind"] == "StatefulSet")
        .context("the Go operator made no StatefulSet")?;
    let pod = format!(
        "{}-0",
        statefulset["metadata"]["name"].as_str().unwrap_or_default()
    );
    let volumes = statefulset["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let env_vars: Vec<Value> = statefulset["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let token = admin_token(objects, &volumes, &env_vars)
        .context("no admin token found in the pods' Secrets")?;
    let ip = env
        .sim()
        .pod_ip(ns, &pod)
        .with_context(|| format!("no address for {pod}"))?;
    let response = reqwest::Client::new()
        .get(format!("http://{ip}:3903/v2/GetClusterLayout"))
        .bearer_auth(token)
        .send()
        .await?
        .error_for_status()?;
    Ok(response.json().await?)
}

/// The admin token: the Secret key behind `GARAGE_ADMIN_TOKEN` or a volume named for it.
fn admin_token(objects: &[Value], volumes: &[Value], env: &[Value]) -> Option<String> {
    let secrets: BTreeMap<&str, &Value> = objects
        .iter()
        .filter(|o| o["kind"] == "Secret")
        .filter_map(|o| Some((o["metadata"]["name"].as_str()?, &o["data"])))
        .collect();
    let decode = |name: &str, key: &str| -> Option<String> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(secrets.get(name)?[key].as_str()?)
            .ok()?;
        String::from_utf8(bytes).ok().map(|t| t.trim().to_owned())
    };
    env.iter()
        .filter(|e| e["name"] == "GARAGE_ADMIN_TOKEN")
        .find_map(|e| {
            let r = &e["valueFrom"]["secretKeyRef"];
            decode(r["name"].as_str()?, r["key"].as_str()?)
        })
        .or_else(|| {
            volumes
                .iter()
                .filter(|v| v["name"].as_str().is_some_and(|n| n.contains("admin")))
                .find_map(|v| {
                    let name = v["secret"]["secretName"].as_str()?;
                    let data = secrets.get(name)?.as_object()?;
                    let key = data.keys().find(|k| k.contains("admin"))?;
                    decode(name, key)
                })
        })
}
