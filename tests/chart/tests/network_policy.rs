//! The chart's NetworkPolicy values rendered without a cluster: the Garage pods' policy switch
//! and what it hands the reconciler, and the webhook port's sources.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chart_tests::{NAMESPACE, deployment, env, find, template};
use serde_json::Value;

/// `--set` arguments of `pairs`.
fn sets(pairs: &[&str]) -> Vec<String> {
    pairs
        .iter()
        .flat_map(|s| ["--set".to_owned(), (*s).to_owned()])
        .collect()
}

#[test]
fn the_garage_network_policy_switch_reaches_the_reconciler() {
    let details = [
        "GARAGE_NETWORK_POLICY_RECONCILER_NAMESPACE",
        "GARAGE_NETWORK_POLICY_RECONCILER_POD_LABELS",
        "GARAGE_NETWORK_POLICY_METRICS_NAMESPACE_SELECTOR",
    ];
    // Off by default, and said so: the reconciler then deletes the policies it wrote.
    let objects = template(&[]).unwrap();
    let off =
        &deployment(&objects, "reconciler").unwrap()["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(env(off, "GARAGE_NETWORK_POLICY").unwrap(), "false");
    for name in details {
        assert!(env(off, name).is_none(), "{name} with the policy off");
    }

    // On: the release namespace and labels that select the reconciler's pods and no other.
    let objects = template(&sets(&["garageNetworkPolicy.enabled=true"])).unwrap();
    let reconciler = deployment(&objects, "reconciler").unwrap();
    let container = &reconciler["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(env(container, "GARAGE_NETWORK_POLICY").unwrap(), "true");
    assert_eq!(
        env(container, "GARAGE_NETWORK_POLICY_RECONCILER_NAMESPACE").unwrap(),
        NAMESPACE
    );
    let labels: Value = serde_json::from_str(
        env(container, "GARAGE_NETWORK_POLICY_RECONCILER_POD_LABELS")
            .and_then(Value::as_str)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(labels, reconciler["spec"]["selector"]["matchLabels"]);
    let matches = |pod_labels: &Value| {
        labels
            .as_object()
            .unwrap()
            .iter()
            .all(|(k, v)| pod_labels[k] == *v)
    };
    assert!(matches(
        &reconciler["spec"]["template"]["metadata"]["labels"]
    ));
    let webhook = deployment(&objects, "webhook").unwrap();
    assert!(!matches(&webhook["spec"]["template"]["metadata"]["labels"]));
    assert!(
        env(
            container,
            "GARAGE_NETWORK_POLICY_METRICS_NAMESPACE_SELECTOR"
        )
        .is_none(),
        "no scrapers without serviceMonitor.enabled"
    );

    // With metrics scraping on, the namespaces the chart lets scrape metrics.
    let objects = template(&sets(&[
        "garageNetworkPolicy.enabled=true",
        "serviceMonitor.enabled=true",
    ]))
    .unwrap();
    let container =
        &deployment(&objects, "reconciler").unwrap()["spec"]["template"]["spec"]["containers"][0];
    let scrapers: Value = serde_json::from_str(
        env(
            container,
            "GARAGE_NETWORK_POLICY_METRICS_NAMESPACE_SELECTOR",
        )
        .and_then(Value::as_str)
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        scrapers,
        serde_json::json!({"matchLabels": {"metrics": "enabled"}})
    );

    // A selector of every namespace would open Garage's Admin API to all of them.
    let error = template(&sets(&[
        "garageNetworkPolicy.enabled=true",
        "serviceMonitor.enabled=true",
        "networkPolicy.allowedNamespaceSelector.matchLabels=null",
    ]))
    .expect_err("an empty scraper selector")
    .to_string();
    assert!(error.contains("allowedNamespaceSelector"), "{error}");
}

#[test]
fn the_webhook_port_admits_only_the_api_server_sources_when_named() {
    let webhook_ingress = |pairs: &[&str]| -> Value {
        let mut all = vec!["networkPolicy.enabled=true"];
        all.extend_from_slice(pairs);
        let objects = template(&sets(&all)).unwrap_or_else(|e| panic!("{pairs:?}: {e:#}"));
        let policy = find(&objects, "NetworkPolicy", "garage-operator-webhook").unwrap();
        policy["spec"]["ingress"].clone()
    };
    // Without sources the port stays open, as before.
    let open = webhook_ingress(&[]);
    assert_eq!(open.as_array().unwrap().len(), 1);
    assert!(open[0].get("from").is_none(), "{open}");
    // (extra values, the peers of the webhook port)
    let cidrs = "networkPolicy.apiServerSourceCIDRs={10.0.0.0/24,fd00:10::/64}";
    let blocks = serde_json::json!([
        {"ipBlock": {"cidr": "10.0.0.0/24"}},
        {"ipBlock": {"cidr": "fd00:10::/64"}},
    ]);
    let mut scraped = blocks.as_array().unwrap().clone();
    scraped.push(serde_json::json!({"namespaceSelector": {"matchLabels": {"metrics": "enabled"}}}));
    let cases: [(&[&str], Value); 2] = [
        (&[cidrs], blocks.clone()),
        (
            &[cidrs, "serviceMonitor.enabled=true"],
            Value::Array(scraped),
        ),
    ];
    for (pairs, want) in cases {
        let ingress = webhook_ingress(pairs);
        assert_eq!(ingress.as_array().unwrap().len(), 1, "{pairs:?}");
        assert_eq!(ingress[0]["from"], want, "{pairs:?}");
        assert_eq!(ingress[0]["ports"][0]["port"], "webhook", "{pairs:?}");
    }
    let error = template(&sets(&["networkPolicy.apiServerSourceCIDRs={10.0.0.1}"]))
        .expect_err("an address without a prefix length")
        .to_string();
    assert!(error.contains("apiServerSourceCIDRs"), "{error}");
}
