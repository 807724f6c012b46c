//! Table tests of where a management handle reaches Garage and what its status says.

use std::time::Duration;

use serde_json::json;
use shared_types::common::ClusterPhase;
use shared_types::garage_cluster::v1beta2::GarageCluster;

use super::*;

fn cluster(spec: serde_json::Value) -> GarageCluster {
    serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta2",
        "kind": "GarageCluster",
        "metadata": {"name": "h", "namespace": "garage", "uid": "u"},
        "spec": spec,
    }))
    .unwrap()
}

fn token() -> serde_json::Value {
    json!({"name": "t", "key": "admin-token"})
}

#[test]
fn only_a_connect_to_without_tiers_is_a_handle() {
    let cases = [
        (json!({"connectTo": {"clusterRef": {"name": "s"}}}), true),
        (
            json!({"connectTo": {"clusterRef": {"name": "s"}}, "gateway": {"replicas": 1}}),
            false,
        ),
        (json!({"storage": {"replicas": 3}}), false),
        (json!({}), false),
    ];
    for (spec, want) in cases {
        assert_eq!(is_handle(&cluster(spec.clone())), want, "{spec}");
    }
}

#[test]
fn a_handle_reaches_its_admin_api_by_url_or_through_a_sibling() {
    let endpoint = |url: &str| AdminSource::Endpoint {
        url: url.into(),
        token: SecretSource {
            name: "t".into(),
            key: "admin-token".into(),
            generated: false,
        },
    };
    let cases = [
        (
            "a URL and its token",
            json!({"adminApiEndpoint": "http://garage.garage.svc:3903/", "adminTokenSecretRef": token()}),
            Ok(endpoint("http://garage.garage.svc:3903")),
        ),
        (
            "the URL wins over a clusterRef",
            json!({"adminApiEndpoint": "https://g.example:3903", "adminTokenSecretRef": token(), "clusterRef": {"name": "s"}}),
            Ok(endpoint("https://g.example:3903")),
        ),
        (
            "a token key left empty is admin-token",
            json!({"adminApiEndpoint": "http://g:3903", "adminTokenSecretRef": {"name": "t", "key": ""}}),
            Ok(endpoint("http://g:3903")),
        ),
        (
            "a URL without a token leaves the clusterRef to follow",
            json!({"adminApiEndpoint": "http://g:3903", "clusterRef": {"name": "s"}}),
            Ok(AdminSource::Cluster("s".into())),
        ),
        (
            "a sibling",
            json!({"clusterRef": {"name": "s", "namespace": "garage"}}),
            Ok(AdminSource::Cluster("s".into())),
        ),
        (
            "a URL without its token",
            json!({"adminApiEndpoint": "http://g:3903"}),
            Err("spec.connectTo.adminTokenSecretRef"),
        ),
        (
            "credentials in the URL",
            json!({"adminApiEndpoint": "http://u:p@g:3903", "adminTokenSecretRef": token()}),
            Err("spec.connectTo.adminApiEndpoint"),
        ),
        (
            "another scheme",
            json!({"adminApiEndpoint": "ftp://g:3903", "adminTokenSecretRef": token()}),
            Err("spec.connectTo.adminApiEndpoint"),
        ),
        (
            "a query",
            json!({"adminApiEndpoint": "http://g:3903/?a=b", "adminTokenSecretRef": token()}),
            Err("spec.connectTo.adminApiEndpoint"),
        ),
        (
            "no host",
            json!({"adminApiEndpoint": "http:///v2", "adminTokenSecretRef": token()}),
            Err("spec.connectTo.adminApiEndpoint"),
        ),
        (
            "a sibling of another namespace",
            json!({"clusterRef": {"name": "s", "namespace": "other"}}),
            Err("spec.connectTo.clusterRef.namespace"),
        ),
        (
            "itself",
            json!({"clusterRef": {"name": "h"}}),
            Err("spec.connectTo.clusterRef.name"),
        ),
        (
            "a kubeconfig",
            json!({"clusterRef": {"name": "s", "kubeConfigSecretRef": {"name": "k", "key": "c"}}}),
            Err("spec.connectTo.clusterRef.kubeConfigSecretRef"),
        ),
        (
            "only bootstrap peers",
            json!({"bootstrapPeers": ["x@y:3901"]}),
            Err("spec.connectTo"),
        ),
    ];
    for (name, to, want) in cases {
        let got = admin_source(&cluster(json!({ "connectTo": to })));
        match (got, want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{name}"),
            (Err(DesiredError::Invalid { field, .. }), Err(want)) => {
                assert_eq!(field, want, "{name}");
            }
            (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn a_handle_is_running_only_once_its_admin_api_answers() {
    let resync = Duration::from_secs(300);
    let short = Duration::from_secs(10);
    let cases = [
        (
            Probe::TokenMissing("Secret t".into()),
            false,
            reason::REASON_ADMIN_TOKEN_MISSING,
        ),
        (
            Probe::Unreachable("refused".into()),
            false,
            reason::REASON_ADMIN_UNREACHABLE,
        ),
        (
            Probe::Referent("s has no Ready pod".into()),
            false,
            reason::REASON_CLUSTER_NOT_READY,
        ),
        (
            Probe::Invalid(DesiredError::Invalid {
                field: "spec.connectTo",
                message: "x".into(),
            }),
            false,
            reason::REASON_VALIDATION_FAILED,
        ),
        (
            Probe::Reached {
                health: None,
                admin_url: Some("http://g:3903".into()),
            },
            true,
            reason::REASON_RECONCILE_SUCCESS,
        ),
    ];
    for (probe, ready, why) in cases {
        let (status, wanted, requeue) = status("h", &probe, resync, short);
        assert_eq!(
            status.phase,
            Some(if ready {
                ClusterPhase::Running
            } else {
                ClusterPhase::Pending
            }),
            "{probe:?}"
        );
        assert_eq!(requeue, if ready { resync } else { short }, "{probe:?}");
        // The schema requires both, and a handle runs no pod.
        assert_eq!(status.replicas, Some(0));
        assert!(status.selector.is_some());
        for type_ in [
            cluster::CONDITION_MANAGEMENT_HANDLE_READY,
            common::CONDITION_READY,
        ] {
            let c = wanted.iter().find(|c| c.type_ == type_).unwrap();
            assert_eq!((c.status, c.reason), (ready, why), "{probe:?} {type_}");
        }
        // A pass that runs is not suspended: a condition left by a suspension goes.
        let suspended = shared_types::conditions::node::CONDITION_SUSPENDED;
        assert!(OWNED.contains(&suspended));
        assert!(wanted.iter().all(|c| c.type_ != suspended));
        assert_eq!(
            status.endpoints.and_then(|e| e.admin).is_some(),
            ready,
            "{probe:?}"
        );
    }
}

#[test]
fn dependents_wait_until_the_handle_proved_its_current_spec() {
    let with = |status: &str, observed: i64| {
        let mut c = cluster(json!({"connectTo": {"clusterRef": {"name": "s"}}}));
        c.metadata.generation = Some(2);
        c.status = Some(
            serde_json::from_value(json!({"conditions": [{
                "type": "ManagementHandleReady", "status": status, "reason": "R",
                "message": "why", "observedGeneration": observed,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }]}))
            .unwrap(),
        );
        waits(&c)
    };
    assert_eq!(with("True", 2), None);
    assert!(with("True", 1).is_some(), "proven for an older spec");
    assert_eq!(with("False", 2).as_deref(), Some("why"));
    let fresh = cluster(json!({"connectTo": {"clusterRef": {"name": "s"}}}));
    assert!(waits(&fresh).is_some(), "never proven");
}
