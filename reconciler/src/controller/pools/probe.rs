//! The scheduling-gate capability probe that node-local pools rest on: the reads and writes
//! that prove it ([`probe`]). What they prove is judged by
//! [`decide::pools::capability::verdict`], and kept per namespace in its `EvidenceCache`.

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::label;

use crate::controller::{Error, Metrics, write};
use crate::desired::controller_ref;
use decide::pools::capability::{EVIDENCE_TTL, EvidenceCache, PROBE_GATE, Verdict, verdict};

/// Name of the probe pod of `cluster`.
pub fn probe_pod_name(cluster: &GarageCluster) -> String {
    format!("{}-gate-probe", cluster.name_any())
}

/// Proves (or reuses a fresh proof of) the gate capability in the cluster's namespace.
/// `image` is what the probe pod names; it never runs.
pub async fn probe(
    client: &Client,
    cluster: &GarageCluster,
    image: &str,
    cache: &EvidenceCache,
    metrics: &Metrics,
) -> Result<Verdict, Error> {
    let ns = cluster.namespace().unwrap_or_default();
    let now = Timestamp::now();
    if let Some(at) = cache.fresh(&ns, now) {
        return Ok(Verdict::Proven(at));
    }
    let version = client.apiserver_version().await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let name = probe_pod_name(cluster);
    let owner = controller_ref(cluster)?;
    let labels = json!({
        label::LABEL_APP_MANAGED_BY: label::value::MANAGED_BY_OPERATOR,
        label::LABEL_CLUSTER: cluster.name_any(),
        label::LABEL_NODE_LOCAL_CAPABILITY_PROBE: "scheduler",
    });
    let template = json!({
        "metadata": {"labels": labels},
        "spec": {
            "schedulingGates": [{"name": PROBE_GATE}],
            "automountServiceAccountToken": false,
            "containers": [{"name": "probe", "image": image}],
        },
    });
    let daemonset: DaemonSet = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels, "ownerReferences": [owner]},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": template,
        },
    }))
    .map_err(|e| Error::Encoding(format!("building the probe DaemonSet: {e}")))?;
    let dry_run = Api::<DaemonSet>::namespaced(client.clone(), &ns)
        .create(
            &PostParams {
                dry_run: true,
                ..PostParams::default()
            },
            &daemonset,
        )
        .await?;
    let kept = dry_run
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|g| g.iter().any(|g| g.name == PROBE_GATE));
    let mut live = pods.get_opt(&name).await?;
    if live.is_none() && kept && version.major == "1" {
        let mut pod_value = template.clone();
        pod_value["metadata"]["name"] = json!(name);
        pod_value["metadata"]["ownerReferences"] = json!([controller_ref(cluster)?]);
        let pod: Pod = serde_json::from_value(pod_value)
            .map_err(|e| Error::Encoding(format!("building the probe pod: {e}")))?;
        metrics.wrote();
        live = Some(pods.create(&PostParams::default(), &pod).await?);
    }
    let mut v = verdict(&version.major, &version.minor, kept, live.as_ref());
    // A proof older than its lifetime (a probe pod left from an earlier pass) proves nothing
    // now: the pod goes and the next pass proves again.
    if let Verdict::Proven(at) = v
        && now.duration_since(at).unsigned_abs() >= EVIDENCE_TTL
    {
        v = Verdict::Pending("the last proof is older than 30 s; proving again".into());
        delete_probe(&pods, &name, metrics).await?;
        return Ok(v);
    }
    if let Verdict::Proven(at) = v {
        cache.record(&ns, at);
    }
    // The probe pod has done its work either way once the verdict is final.
    if live.is_some() && !matches!(v, Verdict::Pending(_)) {
        delete_probe(&pods, &name, metrics).await?;
    }
    Ok(v)
}

async fn delete_probe(pods: &Api<Pod>, name: &str, metrics: &Metrics) -> Result<(), Error> {
    write::delete_if_present(pods, metrics, name, &DeleteParams::background()).await?;
    Ok(())
}
