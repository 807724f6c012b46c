//! The Garage pods' NetworkPolicy, turned on for the in-process reconciler: its settings and
//! the check that a Ready site's cluster has the policy with the expected ports and peers.
//! kubesim does not enforce NetworkPolicy, so only the object is checked, not the traffic.

use std::collections::BTreeMap;

use anyhow::{Context as _, ensure};
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicyIngressRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::Api;
use reconciler::desired::network_policy::{AdminCallers, NAMESPACE_NAME_LABEL};
use serde_json::json;

use crate::{NAME, WEBHOOK_NS, World};

/// The labels of the reconciler's pods as the chart renders them for release
/// `garage-operator`.
fn reconciler_labels() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".into(), "garage-operator".into()),
        (
            "app.kubernetes.io/instance".into(),
            "garage-operator".into(),
        ),
        ("app.kubernetes.io/component".into(), "reconciler".into()),
    ])
}

/// The chart's default `networkPolicy.allowedNamespaceSelector`.
fn scrapers() -> LabelSelector {
    LabelSelector {
        match_labels: Some(BTreeMap::from([("metrics".into(), "enabled".into())])),
        match_expressions: None,
    }
}

/// What the chart passes with `garageNetworkPolicy.enabled` and `serviceMonitor.enabled`.
pub(crate) fn admin_callers() -> AdminCallers {
    AdminCallers::new(WEBHOOK_NS, reconciler_labels(), Some(scrapers()))
        .expect("the e2e's reconciler labels and scrapers select something")
}

fn ports(rule: &NetworkPolicyIngressRule) -> Vec<i32> {
    rule.ports
        .iter()
        .flatten()
        .filter_map(|p| match p.port {
            Some(IntOrString::Int(n)) => Some(n),
            _ => None,
        })
        .collect()
}

/// `C-garage` of the calling site's cluster (no member outside Kubernetes): every Garage pod
/// of the cluster selected; S3 and web open; RPC from the cluster's pods only; the Admin API
/// from the reconciler's pods and the scrapers' namespaces only.
pub(crate) async fn check(w: &World<'_>) -> anyhow::Result<()> {
    let garage_pods = json!({"matchLabels": {"garage.rajsingh.info/cluster": NAME}});
    check_of(w, NAME, json!([{ "podSelector": garage_pods }])).await
}

/// [`check`] for the GarageCluster `cluster`, whose RPC rule admits `rpc_from` (null: every
/// source, as for a cluster whose peers are not its own pods).
pub(crate) async fn check_of(
    w: &World<'_>,
    cluster: &str,
    rpc_from: serde_json::Value,
) -> anyhow::Result<()> {
    let name = format!("{cluster}-garage");
    let policy = Api::<NetworkPolicy>::namespaced(w.client.clone(), crate::ns())
        .get_opt(&name)
        .await?
        .with_context(|| format!("no NetworkPolicy {name} with garageNetworkPolicy on"))?;
    let owner = policy.metadata.owner_references.clone().unwrap_or_default();
    ensure!(
        owner
            .iter()
            .any(|o| o.kind == "GarageCluster" && o.name == cluster),
        "{name} is not owned by its GarageCluster: {owner:?}"
    );
    let spec = policy.spec.clone().context("a policy without spec")?;
    let garage_pods = json!({"matchLabels": {"garage.rajsingh.info/cluster": cluster}});
    ensure!(
        serde_json::to_value(&spec.pod_selector)? == garage_pods,
        "{name} selects {:?}",
        spec.pod_selector
    );
    ensure!(spec.policy_types == Some(vec!["Ingress".to_owned()]));
    let rules = spec.ingress.unwrap_or_default();
    let by_ports: Vec<(Vec<i32>, serde_json::Value)> = rules
        .iter()
        .map(|r| Ok((ports(r), serde_json::to_value(&r.from)?)))
        .collect::<anyhow::Result<_>>()?;
    let reconciler = json!({
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: WEBHOOK_NS}},
        "podSelector": {"matchLabels": reconciler_labels()},
    });
    let expected = vec![
        (vec![3900, 3902], serde_json::Value::Null),
        (vec![3901], rpc_from),
        (
            vec![3903],
            json!([reconciler, {"namespaceSelector": {"matchLabels": {"metrics": "enabled"}}}]),
        ),
    ];
    ensure!(
        by_ports == expected,
        "{name}: ingress {by_ports:#?}\nexpected {expected:#?}"
    );
    println!("site {}: NetworkPolicy {name} in place", crate::ns());
    Ok(())
}
