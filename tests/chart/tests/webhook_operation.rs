//! What the chart renders for the webhook's operation: every validating webhook fails closed,
//! a terminating webhook pod gets time for its grace period and drain, and the memory limit is
//! the one the webhook's review memory budget was derived from.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chart_tests::{combos, deployment, env, of_kind, template};
use serde_json::Value;
use webhook::server::limits::{CHART_MEMORY_LIMIT_BYTES, MAX_BODY_BYTES, REVIEW_BUDGET_BYTES};

fn set(pairs: &[&str]) -> Vec<String> {
    pairs
        .iter()
        .flat_map(|p| ["--set".to_owned(), (*p).to_owned()])
        .collect()
}

fn webhook_container(objects: &[Value]) -> &Value {
    &deployment(objects, "webhook").expect("webhook Deployment")["spec"]["template"]["spec"]["containers"]
        [0]
}

/// `"10s"` as 10.
fn seconds(value: &Value) -> u64 {
    value
        .as_str()
        .and_then(|s| s.strip_suffix('s'))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{value} is not a duration in seconds"))
}

#[test]
fn every_validating_webhook_fails_closed_in_every_combination() {
    for combo in combos() {
        let objects = template(&combo.args).unwrap_or_else(|e| panic!("{}: {e:#}", combo.name));
        let hooks: Vec<&Value> = of_kind(&objects, "ValidatingWebhookConfiguration")
            .into_iter()
            .flat_map(|c| c["webhooks"].as_array().unwrap().iter())
            .collect();
        if combo.name == "webhooks-disabled" {
            assert!(hooks.is_empty(), "{}: webhooks rendered", combo.name);
            continue;
        }
        assert!(!hooks.is_empty(), "{}: no validating webhook", combo.name);
        for hook in hooks {
            assert_eq!(
                hook["failurePolicy"], "Fail",
                "{}: {} does not fail closed",
                combo.name, hook["name"]
            );
        }
    }
}

#[test]
fn a_terminating_webhook_pod_has_time_for_its_grace_period_and_drain() {
    let cases: [(&[&str], u64, u64); 3] = [
        (&[], 10, 10),
        (
            &[
                "webhooks.timeoutSeconds=30",
                "webhook.shutdownGraceSeconds=20",
            ],
            20,
            30,
        ),
        (&["terminationGracePeriodSeconds=5"], 10, 10),
    ];
    for (values, grace, drain) in cases {
        let objects = template(&set(values)).unwrap();
        let container = webhook_container(&objects);
        assert_eq!(
            seconds(env(container, "WEBHOOK_SHUTDOWN_GRACE").unwrap()),
            grace,
            "{values:?}"
        );
        // The drain lasts as long as the API server waits for an answer.
        assert_eq!(
            seconds(env(container, "WEBHOOK_SHUTDOWN_DRAIN").unwrap()),
            drain,
            "{values:?}"
        );
        let pod = &deployment(&objects, "webhook").unwrap()["spec"]["template"]["spec"];
        let period = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
        assert!(
            period >= grace + drain + 5,
            "{values:?}: {period} s leave no time to stop after {grace} s + {drain} s"
        );
        assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    }
    // The default grace lets endpoint removal propagate, within the default period.
    let objects = template(&[]).unwrap();
    let pod = &deployment(&objects, "webhook").unwrap()["spec"]["template"]["spec"];
    assert_eq!(pod["terminationGracePeriodSeconds"], 30);
    let reconciler = &deployment(&objects, "reconciler").unwrap()["spec"]["template"]["spec"];
    assert_eq!(reconciler["terminationGracePeriodSeconds"], 30);
}

#[test]
fn the_memory_limit_is_the_one_the_review_budget_was_derived_from() {
    let objects = template(&[]).unwrap();
    let container = webhook_container(&objects);
    assert_eq!(
        env(container, "WEBHOOK_REVIEW_BUDGET_MIB").unwrap(),
        &Value::from((REVIEW_BUDGET_BYTES >> 20).to_string()),
        "the chart's review budget is not the webhook's default"
    );
    let limit = container["resources"]["limits"]["memory"]
        .as_str()
        .unwrap()
        .to_owned();
    let mib: usize = limit
        .strip_suffix("Mi")
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("memory limit {limit} is not in Mi"));
    assert_eq!(
        mib * 1024 * 1024,
        CHART_MEMORY_LIMIT_BYTES,
        "the webhook's memory limit changed: derive REVIEW_BUDGET_BYTES (webhook/src/server/limits.rs) again"
    );
    const {
        assert!(MAX_BODY_BYTES <= REVIEW_BUDGET_BYTES);
        assert!(REVIEW_BUDGET_BYTES < CHART_MEMORY_LIMIT_BYTES / 2);
    }
}
