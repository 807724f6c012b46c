//! What a production cluster holds, so that the webhook's live reads LIST realistic amounts:
//! Nodes with the status a kubelet reports, other GarageClusters with node-local pools, and
//! Manual GarageNodes. The objects are written straight to the API server (the bench registers
//! no webhook), once, before the first step.

use anyhow::{Context as _, Result};
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

/// Kubernetes Nodes; a mid-size cluster.
pub(super) const NODES: usize = 100;
/// Images per Node status: the kubelet's default `nodeStatusMaxImages`.
pub(super) const IMAGES_PER_NODE: usize = 50;
/// Other GarageClusters with node-local pools, spread over [`NAMESPACES`] namespaces.
pub(super) const CLUSTERS: usize = 20;
const NAMESPACES: usize = 5;
/// Manual GarageNodes, spread over the clusters.
pub(super) const GARAGE_NODES: usize = 40;

fn namespace(i: usize) -> String {
    format!("bench-{}", i % NAMESPACES)
}

/// A Node as a kubelet reports it: labels, and a status whose image list is most of its size.
fn node(i: usize) -> (Value, Value) {
    let name = format!("bench-node-{i:03}");
    let object = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": format!("zone-{}", i % 3),
                "node.kubernetes.io/instance-type": "standard-8",
                // Every tenth Node carries the sample's pool label.
                "storage.garage.example/pool": if i.is_multiple_of(10) { "local-700" } else { "none" },
            },
        },
        "spec": {"podCIDR": format!("10.{}.{}.0/24", 64 + i / 256, i % 256)},
    });
    let images: Vec<Value> = (0..IMAGES_PER_NODE)
        .map(|j| {
            let repo = format!("registry.example.com/team-{}/service-{j}", j % 7);
            json!({
                "names": [
                    format!("{repo}@sha256:{:064x}", i * 1000 + j),
                    format!("{repo}:v1.{j}.{}", i % 10),
                ],
                "sizeBytes": 10_000_000 + j * 12_345,
            })
        })
        .collect();
    let conditions: Vec<Value> = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID"),
        ("Ready", "True", "KubeletReady"),
    ]
    .iter()
    .map(|(kind, status, reason)| {
        json!({
            "type": kind, "status": status, "reason": reason,
            "message": format!("kubelet reports {reason}"),
            "lastHeartbeatTime": "2026-11-30T00:00:00Z",
            "lastTransitionTime": "2026-11-01T00:00:00Z",
        })
    })
    .collect();
    let resources =
        json!({"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "200Gi"});
    let status = json!({"status": {
        "capacity": resources,
        "allocatable": resources,
        "conditions": conditions,
        "addresses": [
            {"type": "InternalIP", "address": format!("10.0.{}.{}", i / 256, i % 256)},
            {"type": "Hostname", "address": name},
        ],
        "nodeInfo": {
            "machineID": format!("{i:032x}"), "systemUUID": format!("{i:032x}"),
            "bootID": format!("{i:032x}"), "kernelVersion": "6.18.0", "osImage": "Debian GNU/Linux 13",
            "containerRuntimeVersion": "containerd://2.1.0", "kubeletVersion": "v1.36.2",
            "kubeProxyVersion": "v1.36.2", "operatingSystem": "linux", "architecture": "amd64",
        },
        "images": images,
    }});
    (object, status)
}

/// The node-local pool sample as another tenant's cluster: its own name, namespace,
/// HostPaths and pool label, so it overlaps nothing the reviewed object declares.
fn cluster(pools_sample: &Value, i: usize) -> Value {
    let mut c = pools_sample.clone();
    c["metadata"] = json!({"name": format!("tenant-{i:02}"), "namespace": namespace(i)});
    let pool = &mut c["spec"]["storage"]["nodeLocalPools"][0];
    pool["name"] = json!(format!("pool-{i:02}"));
    pool["metadata"]["hostPath"] = json!(format!("/srv/garage/tenant-{i:02}/metadata"));
    pool["data"]["hostPath"] = json!(format!("/srv/garage/tenant-{i:02}/data"));
    pool["selector"]["matchLabels"] =
        json!({"storage.garage.example/pool": format!("tenant-{i:02}")});
    c
}

fn garage_node(i: usize) -> Value {
    let owner = i % CLUSTERS;
    json!({
        "apiVersion": "garage.rajsingh.info/v1beta1",
        "kind": "GarageNode",
        "metadata": {"name": format!("manual-{i:02}"), "namespace": namespace(owner)},
        "spec": {
            "clusterRef": {"name": format!("tenant-{owner:02}")},
            "zone": "site-a",
            "capacity": "2Ti",
            "network": {"rpcPublicAddr": format!("manual-{i:02}.storage.example.net:3901")},
            "storage": {
                "metadata": {"size": "10Gi", "storageClassName": "replicated-block"},
                "data": {"size": "2Ti", "storageClassName": "smb"},
            },
        },
    })
}

fn dynamic(client: &Client, object: &Value) -> Result<Api<DynamicObject>> {
    let (group, version) = object["apiVersion"]
        .as_str()
        .and_then(|v| v.split_once('/'))
        .context("a namespaced custom object")?;
    let kind = object["kind"].as_str().context("kind")?;
    let ns = object["metadata"]["namespace"]
        .as_str()
        .context("namespace")?;
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    Ok(Api::namespaced_with(client.clone(), ns, &resource))
}

/// Writes the population; returns the bytes of one Node as stored, for the record.
pub(super) async fn populate(client: &Client, pools_sample: &Value) -> Result<usize> {
    let create = PostParams::default();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for i in 0..NAMESPACES {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": namespace(i)}}))?;
        namespaces
            .create(&create, &ns)
            .await
            .context("creating a namespace")?;
    }
    let nodes: Api<Node> = Api::all(client.clone());
    for i in 0..NODES {
        let (object, status) = node(i);
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        nodes
            .create(&create, &serde_json::from_value(object)?)
            .await
            .with_context(|| format!("creating Node {name}"))?;
        nodes
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .with_context(|| format!("writing the status of Node {name}"))?;
    }
    for object in (0..CLUSTERS)
        .map(|i| cluster(pools_sample, i))
        .chain((0..GARAGE_NODES).map(garage_node))
    {
        let what = format!("{} {}", object["kind"], object["metadata"]["name"]);
        dynamic(client, &object)?
            .create(&create, &serde_json::from_value(object)?)
            .await
            .with_context(|| format!("creating {what}"))?;
    }
    let stored = nodes.get("bench-node-000").await?;
    Ok(serde_json::to_vec(&stored)?.len())
}
