//! The reconciler's RBAC is exactly what its code uses, as [`reconciler::rbac::PERMISSIONS`]
//! writes it down:
//!
//! - the chart, rendered in every value combination, grants the reconciler's ServiceAccount
//!   every row of the table and nothing else ([`chart`]);
//! - every Kubernetes API call in `reconciler/src` is allowed by a row, and every row allows
//!   some call ([`scan`] finds the calls in the source).
//!
//! `cargo test -p reconciler --test rbac` (needs the pinned helm: `cargo xtask tools`).

// Test code: a panic is a failed check with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod chart;
mod scan;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use k8s_openapi::api::apps::v1::{DaemonSet, StatefulSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Node, PersistentVolumeClaim, Pod, Secret, Service,
};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Resource;
use reconciler::rbac::{Need, PERMISSIONS, Scope};
use shared_types::garage_admin_token::GarageAdminToken;
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_key::GarageKey;
use shared_types::garage_node::GarageNode;
use shared_types::garage_reference_grant::GarageReferenceGrant;

/// What RBAC needs to know of a kind the source names.
#[derive(Debug, Clone)]
struct Kind {
    group: String,
    plural: String,
    namespaced: bool,
}

fn kind<K>() -> Kind
where
    K: Resource<DynamicType = ()>,
    K::Scope: 'static,
{
    Kind {
        group: K::group(&()).into_owned(),
        plural: K::plural(&()).into_owned(),
        namespaced: std::any::TypeId::of::<K::Scope>()
            == std::any::TypeId::of::<k8s_openapi::NamespaceResourceScope>(),
    }
}

/// Every kind the reconciler may name in `Api<K>`, by its Rust type name, with its group and
/// plural taken from the types themselves.
fn kinds() -> BTreeMap<&'static str, Kind> {
    BTreeMap::from([
        ("ConfigMap", kind::<ConfigMap>()),
        ("DaemonSet", kind::<DaemonSet>()),
        ("Event", kind::<Event>()),
        ("GarageAdminToken", kind::<GarageAdminToken>()),
        ("GarageBucket", kind::<GarageBucket>()),
        ("GarageCluster", kind::<GarageCluster>()),
        ("GarageKey", kind::<GarageKey>()),
        ("GarageNode", kind::<GarageNode>()),
        ("GarageReferenceGrant", kind::<GarageReferenceGrant>()),
        ("Lease", kind::<Lease>()),
        ("Namespace", kind::<Namespace>()),
        ("NetworkPolicy", kind::<NetworkPolicy>()),
        ("Node", kind::<Node>()),
        ("PersistentVolumeClaim", kind::<PersistentVolumeClaim>()),
        ("Pod", kind::<Pod>()),
        ("PodDisruptionBudget", kind::<PodDisruptionBudget>()),
        ("Secret", kind::<Secret>()),
        ("Service", kind::<Service>()),
        (
            "ServiceMonitor",
            kind::<reconciler::desired::service_monitor::ServiceMonitor>(),
        ),
        ("StatefulSet", kind::<StatefulSet>()),
    ])
}

/// `(group, resource, verb)` of every call the source makes; panics with the scan's problems.
fn calls() -> BTreeMap<(String, String, String), Vec<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = scan::scan_dir(&src);
    assert!(
        found.problems.is_empty(),
        "the source scan cannot follow every Api use; change the code or the scan:\n{}",
        found.problems.join("\n")
    );
    let kinds = kinds();
    let mut out: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
    for u in &found.uses {
        let k = kinds.get(u.kind.as_str()).unwrap_or_else(|| {
            panic!(
                "{}: Api<{}> is not a kind this test knows; add it to kinds()",
                u.at, u.kind
            )
        });
        let resource = match u.subresource {
            Some(sub) => format!("{}/{sub}", k.plural),
            None => k.plural.clone(),
        };
        // A namespaced kind is granted per namespace, a cluster-scoped one cluster-wide.
        let fits = |s: Scope| match s {
            Scope::Managed | Scope::Release => k.namespaced,
            Scope::Cluster => !k.namespaced,
        };
        let allowed =
            reconciler::rbac::granting(&k.group, &resource, u.verb).any(|p| fits(p.scope));
        assert!(
            allowed,
            "{}: {} {} in group {:?} is allowed by no row of reconciler::rbac::PERMISSIONS \
             (in a scope that fits a {} kind); add a row with its reason, and the chart follows",
            u.at,
            u.verb,
            resource,
            k.group,
            if k.namespaced {
                "namespaced"
            } else {
                "cluster-scoped"
            }
        );
        out.entry((k.group.clone(), resource, u.verb.to_owned()))
            .or_default()
            .push(u.at.clone());
    }
    out
}

#[test]
fn every_api_call_in_the_source_is_allowed_by_the_table() {
    let calls = calls();
    assert!(
        calls.len() > 40,
        "only {} calls found: the scan is not finding the calls",
        calls.len()
    );
}

#[test]
fn every_row_of_the_table_is_used_by_the_source() {
    let calls = calls();
    let mut unused = Vec::new();
    for p in PERMISSIONS.iter().filter(|p| p.need == Need::Call) {
        for verb in p.verbs {
            let key = (
                p.group.to_owned(),
                p.resource.to_owned(),
                (*verb).to_owned(),
            );
            if !calls.contains_key(&key) {
                unused.push(format!(
                    "{verb} {} ({:?}): {}",
                    p.resource, p.group, p.reason
                ));
            }
        }
    }
    assert!(
        unused.is_empty(),
        "rows no call needs (remove them, the chart follows):\n{}",
        unused.join("\n")
    );
}

#[test]
fn owner_rows_name_kinds_the_reconciler_writes() {
    let calls = calls();
    for p in PERMISSIONS
        .iter()
        .filter(|p| p.need == Need::BlockOwnerDeletion)
    {
        let owner = p.resource.trim_end_matches("/finalizers");
        assert_eq!(p.verbs, ["update"], "{p:?}");
        assert!(
            calls.keys().any(|(g, r, _)| g == p.group && r == owner),
            "{}: the reconciler never touches {owner}, so it owns nothing of that kind",
            p.resource
        );
    }
}

#[test]
fn the_scan_reports_what_it_cannot_follow() {
    let source = r#"
        async fn known(client: Client) {
            let pods: Api<Pod> = Api::namespaced(client.clone(), "ns");
            pods.get_opt("a").await;
            helper(&pods).await;
            owned::<Secret>(&client).await;
            Api::<Node>::all(client.clone()).patch("n", &pp, &patch).await;
            tokio::join!(Api::<Service>::all(client.clone()).delete("s", &dp));
        }
        async fn helper<K>(api: &Api<K>) { api.patch_status("x", &pp, &patch).await; }
        async fn owned<K>(client: &Client) { Api::<K>::all(client.clone()).list(&lp).await; }
        async fn unknown(client: Client) {
            let apis = vec![Api::<Pod>::all(client.clone())];
            let inferred = Api::namespaced(client.clone(), "ns");
            Api::<Pod>::all(client.clone()).logs("p", &lp).await;
            client.request::<Pod>(request).await;
        }
    "#;
    let found = scan::scan_sources(&[("lib.rs".into(), source.into())]);
    let uses: BTreeSet<(String, &str, Option<&str>)> = found
        .uses
        .iter()
        .map(|u| (u.kind.clone(), u.verb, u.subresource))
        .collect();
    for expected in [
        ("Pod".to_owned(), "get", None),
        ("Pod".to_owned(), "patch", Some("status")),
        ("Secret".to_owned(), "list", None),
        ("Node".to_owned(), "patch", None),
        ("Service".to_owned(), "delete", None),
    ] {
        assert!(uses.contains(&expected), "{expected:?} not in {uses:?}");
    }
    let problems = found.problems.join("\n");
    for expected in [
        "unknown: an Api used in a way the scan does not follow",
        "unknown: an Api constructor whose kind the scan cannot tell",
        "unknown: Api::logs is not mapped to RBAC verbs",
        "unknown: .request(..) reaches the API without an Api",
    ] {
        assert!(
            problems.contains(expected),
            "{expected:?} not in:\n{problems}"
        );
    }
    assert!(!problems.contains("lib.rs: known:"), "{problems}");
}

#[test]
fn the_scan_tells_same_named_helpers_apart_by_module() {
    let helpers = r#"
        pub async fn report<K>(api: &Api<K>) { api.patch_status("x", &pp, &patch).await; }
    "#;
    let caller = r#"
        use super::helpers::report;
        async fn local(client: Client) {
            let keys: Api<GarageKey> = Api::namespaced(client.clone(), "ns");
            report(&keys).await;
            self::report_again(&client).await;
        }
        async fn report_again(client: &Client) {
            super::helpers::report(&Api::<Secret>::all(client.clone())).await;
        }
    "#;
    let other = r#"
        async fn report(name: &str) {}
        async fn pass(client: Client) { report("x").await; }
    "#;
    let found = scan::scan_sources(&[
        ("resources/helpers.rs".into(), helpers.into()),
        ("resources/key.rs".into(), caller.into()),
        ("resources/token.rs".into(), other.into()),
    ]);
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    let uses: BTreeSet<(String, &str, Option<&str>)> = found
        .uses
        .iter()
        .map(|u| (u.kind.clone(), u.verb, u.subresource))
        .collect();
    assert_eq!(
        uses,
        BTreeSet::from([
            ("GarageKey".to_owned(), "patch", Some("status")),
            ("Secret".to_owned(), "patch", Some("status")),
        ])
    );
}
