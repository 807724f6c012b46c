use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::*;

const LITERAL: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn pod(name: &str, env: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"containers": [
            {"name": "garage", "env": env},
            {"name": "sidecar", "env": [{"name": RPC_SECRET, "value": "ignored"}]},
        ]},
    }))
    .unwrap()
}

fn cluster(annotations: &[(&str, &str)], rpc_ref: bool) -> GarageCluster {
    let annotations: serde_json::Map<String, Value> = annotations
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    let network = if rpc_ref {
        json!({"rpcSecretRef": {"name": "rpc", "key": "rpc-secret"}})
    } else {
        json!({})
    };
    serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster",
        "metadata": {"name": "garage", "namespace": "ns", "annotations": annotations},
        "spec": {"network": network},
    }))
    .unwrap()
}

fn rpc_literal(pod_name: &str) -> Pod {
    pod(
        pod_name,
        json!([{"name": RPC_SECRET, "value": LITERAL}, {"name": "RUST_LOG", "value": "info"}]),
    )
}

#[test]
fn the_rpc_secret_and_a_foreign_config_path_are_carriers_with_their_source() {
    let pods = [
        pod(
            "a",
            json!([
                {"name": RPC_SECRET, "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                {"name": CONFIG_FILE, "value": "/etc/garage/other.toml"},
                {"name": RPC_SECRET_FILE, "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}},
                // The admin and metrics tokens are not checked: a wrong one stops every read.
                {"name": "GARAGE_ADMIN_TOKEN", "value": "t"},
                {"name": "FOO", "value": "bar"},
            ]),
        ),
        // What the Go operator renders for its own pods: its config path is no carrier.
        pod(
            "b",
            json!([
                {"name": CONFIG_FILE, "value": GO_CONFIG_PATH},
                {"name": RPC_SECRET},
            ]),
        ),
    ];
    let c = |pod: &str, name: &str, source| Carrier {
        pod: pod.into(),
        name: name.into(),
        source,
    };
    assert_eq!(
        carriers(&pods),
        vec![
            c(
                "a",
                RPC_SECRET,
                Source::SecretKey {
                    name: "s".into(),
                    key: "k".into()
                }
            ),
            c("a", CONFIG_FILE, Source::Literal),
            c("a", RPC_SECRET_FILE, Source::Unreadable),
            c("b", RPC_SECRET, Source::Literal),
        ]
    );
}

#[test]
fn each_carrier_is_settled_only_by_what_proves_it_safe() {
    let rpc = carriers(&[rpc_literal("p0"), rpc_literal("p1")]);
    let file = carriers(&[pod(
        "p0",
        json!([{"name": RPC_SECRET_FILE, "value": "/secrets/rpc"}]),
    )]);
    let config = carriers(&[pod(
        "p0",
        json!([{"name": CONFIG_FILE, "value": "/etc/g.toml"}]),
    )]);
    let both: Vec<Carrier> = rpc.iter().chain(&config).cloned().collect();
    let pair = |p: &str, n: &str| (p.to_owned(), n.to_owned());
    let all_proven: BTreeSet<_> = [pair("p0", RPC_SECRET), pair("p1", RPC_SECRET)].into();
    let one_proven: BTreeSet<_> = [pair("p0", RPC_SECRET)].into();
    let file_proven: BTreeSet<_> = [pair("p0", RPC_SECRET_FILE)].into();
    let none = BTreeSet::new();
    let migrate = (ANNOTATION_MIGRATE_LEGACY_RPC_SECRET, "true");
    let acknowledge = (ANNOTATION_ACKNOWLEDGE_LEGACY_CONFIG_MIGRATION, "true");
    for (what, c, carried, proven, refused_) in [
        ("nothing carried", cluster(&[], false), vec![], &none, false),
        (
            "rpc proven equal",
            cluster(&[], false),
            rpc.clone(),
            &all_proven,
            false,
        ),
        (
            "rpc, one pod unproven",
            cluster(&[migrate], true),
            rpc.clone(),
            &one_proven,
            true,
        ),
        (
            "rpc, nothing proven",
            cluster(&[migrate], true),
            rpc.clone(),
            &none,
            true,
        ),
        (
            "rpc, acknowledged only",
            cluster(&[acknowledge], true),
            rpc.clone(),
            &none,
            true,
        ),
        (
            "rpc file, never provable",
            cluster(&[migrate], true),
            file.clone(),
            &file_proven,
            true,
        ),
        (
            "config, not acknowledged",
            cluster(&[migrate], true),
            config.clone(),
            &none,
            true,
        ),
        (
            "config, acknowledged",
            cluster(&[acknowledge], false),
            config.clone(),
            &none,
            false,
        ),
        (
            "config, acknowledged as yes",
            cluster(&[(acknowledge.0, "yes")], false),
            config.clone(),
            &none,
            true,
        ),
        (
            "both, rpc proven only",
            cluster(&[], true),
            both.clone(),
            &all_proven,
            true,
        ),
        (
            "both, acknowledged only",
            cluster(&[acknowledge], true),
            both.clone(),
            &none,
            true,
        ),
        (
            "both settled",
            cluster(&[acknowledge], true),
            both.clone(),
            &all_proven,
            false,
        ),
    ] {
        let got = refused(&c, &carried, proven);
        assert_eq!(got.is_some(), refused_, "{what}: {got:?}");
    }
}

#[test]
fn the_refusal_names_the_pods_variables_and_next_step_but_never_a_value() {
    let rpc = carriers(&[rpc_literal("garage-storage-0-0")]);
    let none = BTreeSet::new();
    for (c, next) in [
        (
            cluster(&[], false),
            "the generated Secret garage-rpc-secret",
        ),
        (
            cluster(&[], true),
            "the Secret rpc that spec.network.rpcSecretRef names",
        ),
    ] {
        let e = refused(&c, &rpc, &none).unwrap();
        let text = e.to_string();
        assert!(text.starts_with("spec.storage.env: "), "{text}");
        assert!(
            text.contains("GARAGE_RPC_SECRET in pod garage-storage-0-0"),
            "{text}"
        );
        assert!(text.contains(next), "{next}: {text}");
        assert!(
            text.contains("make both hold the secret the pods run with"),
            "{text}"
        );
        assert!(!text.contains(LITERAL), "the secret was echoed: {text}");
        assert_eq!(e.reported_as().0, "Unsupported");
    }
    let file = carriers(&[pod("p", json!([{"name": RPC_SECRET_FILE, "value": "/f"}]))]);
    let text = refused(&cluster(&[], true), &file, &none)
        .unwrap()
        .to_string();
    assert!(
        text.contains("cannot be read from outside the pod"),
        "{text}"
    );
    let config = carriers(&[pod(
        "p",
        json!([{"name": CONFIG_FILE, "value": "/etc/g.toml"}]),
    )]);
    let text = refused(&cluster(&[], false), &config, &none)
        .unwrap()
        .to_string();
    assert!(
        text.contains("acknowledge-legacy-config-migration"),
        "{text}"
    );
}

#[test]
fn bytes_are_compared_only_where_there_is_a_value_to_read() {
    let rpc = carriers(&[rpc_literal("p")]);
    let file = carriers(&[pod("p", json!([{"name": RPC_SECRET_FILE, "value": "/f"}]))]);
    let config = carriers(&[pod("p", json!([{"name": CONFIG_FILE, "value": "/g"}]))]);
    assert!(wants_proof(&rpc));
    assert!(!wants_proof(&file));
    assert!(!wants_proof(&config));
    assert!(!wants_proof(&[]));
}
