use super::*;
use crate::desired::test_support::cluster;
use serde_json::json;

fn monitored(monitoring: serde_json::Value) -> GarageCluster {
    let mut c = cluster(3);
    c.spec.monitoring = Some(serde_json::from_value(monitoring).unwrap());
    c
}

fn pod(copy: Option<&str>, deleting: bool) -> Pod {
    let volumes: Vec<serde_json::Value> = copy
        .map(|c| json!({"name": "metrics-token", "secret": {"secretName": c}}))
        .into_iter()
        .collect();
    let mut p: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [], "volumes": volumes},
    }))
    .unwrap();
    if deleting {
        p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::now(),
        ));
    }
    p
}

fn planned(
    c: &GarageCluster,
    installed: bool,
    copy: Option<&str>,
    pods: &[Pod],
) -> (Plan, Option<Desired>) {
    plan(
        c,
        &Settings::from_cluster(c).unwrap(),
        installed,
        copy,
        pods,
    )
    .unwrap()
}

#[test]
fn off_removes_the_one_the_cluster_controls_and_says_nothing() {
    for c in [cluster(3), monitored(json!({"enabled": false}))] {
        assert_eq!(
            planned(&c, true, None, &[]),
            (
                Plan::Remove {
                    name: "garage-garage".into()
                },
                None
            )
        );
        assert_eq!(planned(&c, false, None, &[]), (Plan::Nothing, None));
    }
}

#[test]
fn on_without_the_kind_is_reported_not_failed() {
    let (plan, condition) = planned(&monitored(json!({"enabled": true})), false, None, &[]);
    assert_eq!(plan, Plan::Nothing);
    let condition = condition.unwrap();
    assert!(!condition.status);
    assert_eq!(condition.reason, "KindNotInstalled");
    assert!(
        condition.message.contains("prometheus-operator"),
        "{}",
        condition.message
    );
}

#[test]
fn on_it_scrapes_the_admin_service_with_the_spec_settings() {
    let c = monitored(json!({
        "enabled": true,
        "interval": "15s",
        "additionalLabels": {"release": "kube-prometheus", "garage.rajsingh.info/cluster": "x"},
        "metricRelabelings": [{"action": "drop", "regex": "rpc_duration_.*", "sourceLabels": ["__name__"]}],
    }));
    let (Plan::Ensure(sm), Some(condition)) = planned(&c, true, None, &[]) else {
        panic!("no ServiceMonitor planned");
    };
    assert!(condition.status);
    // What the API server needs to know what is created.
    let body = serde_json::to_value(&sm).unwrap();
    assert_eq!(
        (&body["apiVersion"], &body["kind"]),
        (&json!("monitoring.coreos.com/v1"), &json!("ServiceMonitor"))
    );
    let labels = sm.metadata.labels.clone().unwrap();
    assert_eq!(labels["release"], "kube-prometheus");
    assert_eq!(
        labels["garage.rajsingh.info/cluster"], "garage",
        "the operator's label wins"
    );
    assert_eq!(
        sm.metadata.owner_references.as_ref().unwrap()[0].kind,
        "GarageCluster"
    );
    assert_eq!(
        sm.spec,
        json!({
            "jobLabel": "app.kubernetes.io/name",
            "selector": {"matchLabels": {
                "app.kubernetes.io/component": "admin",
                "app.kubernetes.io/name": "garage",
                "garage.rajsingh.info/cluster": "garage",
            }},
            "namespaceSelector": {"matchNames": ["ns"]},
            "endpoints": [{
                "port": "admin", "path": "/metrics", "interval": "15s",
                "metricRelabelings": [{"action": "drop", "regex": "rpc_duration_.*", "sourceLabels": ["__name__"]}],
            }],
        })
    );
    // Exactly one of the cluster's Services carries those labels: the admin one.
    let s = Settings::from_cluster(&c).unwrap();
    let selector = admin_service_selector("garage");
    let selected: Vec<String> = crate::desired::services::cluster_services(&c, &s)
        .unwrap()
        .into_iter()
        .filter(|svc| {
            let l = svc.metadata.labels.clone().unwrap_or_default();
            selector.iter().all(|(k, v)| l.get(k) == Some(v))
        })
        .filter_map(|svc| svc.metadata.name)
        .collect();
    assert_eq!(selected, ["garage-admin"]);
}

#[test]
fn the_bearer_follows_the_pods_until_every_one_runs_the_new_token() {
    let c = monitored(json!({"enabled": true}));
    let bearer_of = |copy: Option<&str>, pods: &[Pod]| -> Option<String> {
        let (Plan::Ensure(sm), _) = planned(&c, true, copy, pods) else {
            panic!("no ServiceMonitor planned");
        };
        sm.spec["endpoints"][0].get("authorization").map(|a| {
            assert_eq!(a["type"], "Bearer");
            assert_eq!(a["credentials"]["key"], "metrics-token");
            a["credentials"]["name"].as_str().unwrap().to_owned()
        })
    };
    assert_eq!(
        bearer_of(None, &[pod(Some("old"), false)]),
        None,
        "no token"
    );
    let new = Some("new");
    assert_eq!(bearer_of(new, &[]).as_deref(), Some("new"));
    assert_eq!(
        bearer_of(new, &[pod(new, false), pod(Some("old"), false)]).as_deref(),
        Some("old"),
        "a pod still runs the old token"
    );
    assert_eq!(
        bearer_of(
            new,
            &[pod(new, false), pod(Some("old"), true), pod(None, false)]
        )
        .as_deref(),
        Some("new"),
        "a pod going away, and one without a token (its /metrics is open), do not hold it"
    );
}

#[test]
fn a_removed_setting_changes_the_digest_so_the_write_replaces_it() {
    let digest = |c: &GarageCluster| {
        let (Plan::Ensure(sm), _) = planned(c, true, Some("copy"), &[]) else {
            panic!("no ServiceMonitor planned");
        };
        sm.metadata.annotations.unwrap()["garage.rajsingh.info/rendered-hash"].clone()
    };
    let with = monitored(json!({"enabled": true, "interval": "15s"}));
    let without = monitored(json!({"enabled": true}));
    assert_ne!(digest(&with), digest(&without));
    assert_eq!(digest(&with), digest(&with.clone()));
}
