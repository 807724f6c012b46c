//! The chart rendered without a cluster: `helm lint --strict` and `helm template` for every
//! value combination, and what each combination must (and must not) contain.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use chart_tests::{
    Combo, NAMESPACE, WATCHED, bound_rules, combos, deployment, env, find, lint, of_kind, template,
    template_text,
};
use serde_json::Value;
use webhook::server::endpoint::{CONVERT_PATH, Endpoint};

const GC_CRD: &str = "garageclusters.garage.rajsingh.info";
const WRITE_VERBS: [&str; 6] = [
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "escalate",
];

fn combo(name: &str) -> Combo {
    combos().into_iter().find(|c| c.name == name).unwrap()
}

fn render(name: &str) -> Vec<Value> {
    template(&combo(name).args).unwrap_or_else(|e| panic!("{name}: {e:#}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn webhooks(objects: &[Value]) -> Vec<&Value> {
    [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ]
    .iter()
    .flat_map(|k| of_kind(objects, k))
    .flat_map(|c| c["webhooks"].as_array().unwrap().iter())
    .collect()
}

/// Rules of the Roles and ClusterRoles bound to `account`.
fn rules_of(objects: &[Value], account: &str) -> Vec<Value> {
    bound_rules(objects, account)
        .into_iter()
        .map(|(_, rule)| rule)
        .collect()
}

#[test]
fn every_combination_lints_and_renders() {
    for c in combos() {
        lint(&c.args).unwrap_or_else(|e| panic!("{}: {e:#}", c.name));
        let objects = template(&c.args).unwrap_or_else(|e| panic!("{}: {e:#}", c.name));
        assert!(
            objects.len() > 10,
            "{}: only {} objects",
            c.name,
            objects.len()
        );
        for o in &objects {
            assert!(o["apiVersion"].is_string(), "{}: {o}", c.name);
            assert!(o["metadata"]["name"].is_string(), "{}: {o}", c.name);
        }
    }
}

#[test]
fn operator_pods_are_restricted_and_bounded() {
    for c in combos() {
        for d in of_kind(&template(&c.args).unwrap(), "Deployment") {
            let name = d["metadata"]["name"].as_str().unwrap();
            let pod = &d["spec"]["template"]["spec"];
            assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{name}");
            assert_eq!(
                pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault",
                "{name}"
            );
            for container in pod["containers"].as_array().unwrap() {
                let sc = &container["securityContext"];
                assert_eq!(sc["readOnlyRootFilesystem"], true, "{name}");
                assert_eq!(sc["allowPrivilegeEscalation"], false, "{name}");
                assert_eq!(strings(&sc["capabilities"]["drop"]), ["ALL"], "{name}");
                assert!(container["resources"]["requests"].is_object(), "{name}");
                assert!(
                    container["resources"]["limits"]["memory"].is_string(),
                    "{name}"
                );
                assert!(container["livenessProbe"].is_object(), "{name}");
                assert!(container["readinessProbe"].is_object(), "{name}");
            }
        }
    }
}

#[test]
fn self_managed_install_has_two_processes_and_fail_closed_webhooks() {
    let objects = render("self-managed");
    let webhook = deployment(&objects, "webhook").expect("webhook Deployment");
    let reconciler = deployment(&objects, "reconciler").expect("reconciler Deployment");
    assert!(webhook["spec"]["replicas"].as_i64().unwrap() >= 2);
    assert_eq!(reconciler["spec"]["replicas"], 1);
    assert_ne!(
        webhook["spec"]["template"]["spec"]["serviceAccountName"],
        reconciler["spec"]["template"]["spec"]["serviceAccountName"],
        "the two processes share a ServiceAccount"
    );
    let pdb = of_kind(&objects, "PodDisruptionBudget");
    assert_eq!(pdb.len(), 1);
    assert_eq!(pdb[0]["spec"]["maxUnavailable"], 1);
    assert!(pdb[0]["spec"].get("minAvailable").is_none(), "{}", pdb[0]);

    // The webhook knows who may remove PVC barrier finalizers.
    let container = &webhook["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        env(container, "POD_SERVICE_ACCOUNT").unwrap(),
        &reconciler["spec"]["template"]["spec"]["serviceAccountName"]
    );
    assert_eq!(env(container, "WEBHOOK_CERT_MODE").unwrap(), "self-managed");
    let secret = env(container, "WEBHOOK_SECRET_NAME")
        .unwrap()
        .as_str()
        .unwrap();
    assert!(
        find(&objects, "Secret", secret).is_some(),
        "the certificate Secret is not rendered, so uninstall would leave it behind"
    );

    // Every registered path is one the server serves, with explicit settings.
    let served: BTreeSet<&str> = Endpoint::ALL.iter().map(|e| e.path()).collect();
    let hooks = webhooks(&objects);
    assert_eq!(hooks.len(), Endpoint::ALL.len());
    let mut registered = BTreeSet::new();
    for hook in &hooks {
        let path = hook["clientConfig"]["service"]["path"].as_str().unwrap();
        assert!(served.contains(path), "{path} is not served");
        registered.insert(path);
        assert_eq!(hook["failurePolicy"], "Fail");
        assert_eq!(hook["sideEffects"], "None");
        assert_eq!(hook["timeoutSeconds"], 10);
        assert_eq!(strings(&hook["admissionReviewVersions"]), ["v1"]);
        assert_eq!(
            hook["clientConfig"]["service"]["name"],
            "garage-operator-webhook"
        );
        assert!(hook["namespaceSelector"].is_null());
    }
    assert_eq!(registered, served, "a served endpoint is not registered");

    // The conversion stanza points at the release's Service and the CRDs are kept on uninstall.
    let crds = of_kind(&objects, "CustomResourceDefinition");
    assert_eq!(crds.len(), 6);
    for crd in &crds {
        assert_eq!(
            crd["metadata"]["annotations"]["helm.sh/resource-policy"],
            "keep"
        );
        assert_eq!(
            crd["metadata"]["labels"]["app.kubernetes.io/instance"],
            "garage-operator"
        );
    }
    let gc = find(&objects, "CustomResourceDefinition", GC_CRD).unwrap();
    let service = &gc["spec"]["conversion"]["webhook"]["clientConfig"]["service"];
    assert_eq!(service["name"], "garage-operator-webhook");
    assert_eq!(service["namespace"], NAMESPACE);
    assert_eq!(service["path"], CONVERT_PATH);
}

/// Which configuration registers an endpoint, for which resource and operations.
/// GarageAdminToken DELETE is registered (INV-1): the deletion guard is the documented
/// behaviour. GarageAdminToken and GarageReferenceGrant have no defaulter.
fn inventory(
    endpoint: Endpoint,
) -> (
    &'static str,
    &'static [&'static str],
    &'static str,
    &'static [&'static str],
) {
    const CU: &[&str] = &["CREATE", "UPDATE"];
    const CUD: &[&str] = &["CREATE", "UPDATE", "DELETE"];
    const V1: &[&str] = &["v1beta1"];
    const V2: &[&str] = &["v1beta2"];
    const M: &str = "MutatingWebhookConfiguration";
    const V: &str = "ValidatingWebhookConfiguration";
    match endpoint {
        Endpoint::MutateClusterV1beta2 => (M, V2, "garageclusters", CU),
        Endpoint::ValidateClusterV1beta2 => (V, V2, "garageclusters", CUD),
        Endpoint::MutateClusterV1beta1 => (M, V1, "garageclusters", CU),
        Endpoint::ValidateClusterV1beta1 => (V, V1, "garageclusters", CUD),
        Endpoint::ValidateClusterScale => (
            V,
            &["v1beta1", "v1beta2"],
            "garageclusters/scale",
            &["UPDATE"],
        ),
        Endpoint::MutateNode => (M, V1, "garagenodes", CU),
        Endpoint::ValidateNode => (V, V1, "garagenodes", CUD),
        Endpoint::PvcFinalizerGuard => (V, &["v1"], "persistentvolumeclaims", &["UPDATE"]),
        Endpoint::MutateBucket => (M, V1, "garagebuckets", CU),
        Endpoint::ValidateBucket => (V, V1, "garagebuckets", CU),
        Endpoint::MutateKey => (M, V1, "garagekeys", CU),
        Endpoint::ValidateKey => (V, V1, "garagekeys", CU),
        Endpoint::ValidateAdminToken => (V, V1, "garageadmintokens", CUD),
        Endpoint::ValidateReferenceGrant => (V, V1, "garagereferencegrants", CU),
    }
}

#[test]
fn every_endpoint_is_registered_as_the_inventory_says() {
    let objects = render("self-managed");
    for endpoint in Endpoint::ALL {
        let (configuration, versions, resource, operations) = inventory(endpoint);
        let path = endpoint.path();
        let hooks: Vec<&Value> = of_kind(&objects, configuration)
            .into_iter()
            .flat_map(|c| c["webhooks"].as_array().unwrap().iter())
            .filter(|h| h["clientConfig"]["service"]["path"] == path)
            .collect();
        assert_eq!(hooks.len(), 1, "{path} in {configuration}");
        let rule = &hooks[0]["rules"][0];
        assert_eq!(strings(&rule["apiVersions"]), versions, "{path}");
        assert_eq!(strings(&rule["resources"]), [resource], "{path}");
        assert_eq!(strings(&rule["operations"]), operations, "{path}");
        assert_eq!(hooks[0]["matchPolicy"], "Equivalent", "{path}");
        assert_eq!(
            endpoint.is_mutating(),
            configuration.starts_with("Mutating"),
            "{path}"
        );
    }
    for kind in ["garageadmintokens", "garagereferencegrants"] {
        let mutated = of_kind(&objects, "MutatingWebhookConfiguration")
            .into_iter()
            .flat_map(|c| c["webhooks"].as_array().unwrap().iter())
            .any(|h| strings(&h["rules"][0]["resources"]).contains(&kind.to_owned()));
        assert!(!mutated, "{kind} has no defaulter");
    }
}

#[test]
fn the_webhook_may_read_grants_and_namespace_labels_in_every_install() {
    for name in ["self-managed", "cert-manager", "namespace-scoped"] {
        let objects = render(name);
        let webhook = deployment(&objects, "webhook").unwrap();
        let account = webhook["spec"]["template"]["spec"]["serviceAccountName"]
            .as_str()
            .unwrap();
        let rules = rules_of(&objects, account);
        let allows = |resource: &str, verb: &str| {
            rules.iter().any(|r| {
                strings(&r["resources"]).contains(&resource.to_owned())
                    && strings(&r["verbs"]).contains(&verb.to_owned())
                    && r["resourceNames"].is_null()
            })
        };
        assert!(allows("garagereferencegrants", "list"), "{name}");
        assert!(allows("namespaces", "get"), "{name}");
        assert!(
            allows("garageclusters", "get"),
            "{name}: GarageAdminToken deletion"
        );
    }
}

#[test]
fn pvc_guard_is_fail_whatever_the_failure_policy_and_sees_only_protected_claims() {
    let objects = template(&["--set".into(), "webhooks.failurePolicy=Ignore".into()]).unwrap();
    let guard_path = Endpoint::PvcFinalizerGuard.path();
    for hook in webhooks(&objects) {
        let path = hook["clientConfig"]["service"]["path"].as_str().unwrap();
        if path == guard_path {
            assert_eq!(hook["failurePolicy"], "Fail");
            assert_eq!(strings(&hook["rules"][0]["operations"]), ["UPDATE"]);
            assert_eq!(
                strings(&hook["rules"][0]["resources"]),
                ["persistentvolumeclaims"]
            );
            let expression = hook["matchConditions"][0]["expression"].as_str().unwrap();
            assert!(expression.contains("garagenode.garage.rajsingh.info/pvc-reservation"));
            assert!(expression.contains("storage-rollout-"));
        } else {
            assert_eq!(hook["failurePolicy"], "Ignore", "{path}");
        }
    }
}

#[test]
fn webhook_permissions_are_read_only_except_its_own_objects() {
    let objects = render("self-managed");
    let webhook = deployment(&objects, "webhook").unwrap();
    let account = webhook["spec"]["template"]["spec"]["serviceAccountName"]
        .as_str()
        .unwrap();
    let rules = rules_of(&objects, account);
    assert!(!rules.is_empty());
    let own_configs: BTreeSet<String> = of_kind(&objects, "ValidatingWebhookConfiguration")
        .into_iter()
        .chain(of_kind(&objects, "MutatingWebhookConfiguration"))
        .map(|c| c["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    for rule in &rules {
        let verbs = strings(&rule["verbs"]);
        let resources = strings(&rule["resources"]);
        assert!(!verbs.contains(&"*".to_owned()), "{rule}");
        assert!(!resources.contains(&"*".to_owned()), "{rule}");
        let writes: Vec<&String> = verbs
            .iter()
            .filter(|v| WRITE_VERBS.contains(&v.as_str()))
            .collect();
        if writes.is_empty() {
            continue;
        }
        if resources == ["secrets"] && verbs == ["create"] {
            continue;
        }
        let names: BTreeSet<String> = strings(&rule["resourceNames"]).into_iter().collect();
        assert!(
            !names.is_empty(),
            "the webhook may write without naming the objects: {rule}"
        );
        for name in &names {
            let allowed = own_configs.contains(name)
                || name == GC_CRD
                || name == "garage-operator-webhook-cert";
            assert!(allowed, "the webhook may write {name}: {rule}");
        }
        for resource in &resources {
            assert!(
                [
                    "validatingwebhookconfigurations",
                    "mutatingwebhookconfigurations",
                    "customresourcedefinitions",
                    "secrets"
                ]
                .contains(&resource.as_str()),
                "the webhook may write {resource}"
            );
        }
    }
}

#[test]
fn reconciler_cannot_touch_admission_or_crds() {
    for c in combos() {
        let objects = template(&c.args).unwrap();
        let reconciler = deployment(&objects, "reconciler").unwrap();
        let account = reconciler["spec"]["template"]["spec"]["serviceAccountName"]
            .as_str()
            .unwrap();
        for rule in rules_of(&objects, account) {
            let resources = strings(&rule["resources"]);
            assert!(!strings(&rule["verbs"]).contains(&"*".to_owned()), "{rule}");
            assert!(!resources.contains(&"*".to_owned()), "{rule}");
            for forbidden in [
                "validatingwebhookconfigurations",
                "mutatingwebhookconfigurations",
                "customresourcedefinitions",
                "clusterroles",
                "roles",
            ] {
                assert!(
                    !resources.contains(&forbidden.to_owned()),
                    "{}: {rule}",
                    c.name
                );
            }
        }
    }
}

#[test]
fn cert_manager_mode_leaves_the_ca_bundle_to_cert_manager() {
    let objects = render("cert-manager");
    let certificate = of_kind(&objects, "Certificate");
    assert_eq!(certificate.len(), 1);
    let certificate = certificate[0];
    let name = certificate["metadata"]["name"].as_str().unwrap();
    let inject = format!("{NAMESPACE}/{name}");
    assert_eq!(of_kind(&objects, "Issuer").len(), 1);
    assert_eq!(
        strings(&certificate["spec"]["dnsNames"])[0],
        "garage-operator-webhook.garage-operator.svc"
    );
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        let config = of_kind(&objects, kind)[0];
        assert_eq!(
            config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
            inject.as_str()
        );
    }
    let gc = find(&objects, "CustomResourceDefinition", GC_CRD).unwrap();
    assert_eq!(
        gc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        inject.as_str()
    );
    let webhook = deployment(&objects, "webhook").unwrap();
    let pod = &webhook["spec"]["template"]["spec"];
    assert_eq!(
        env(&pod["containers"][0], "WEBHOOK_CERT_MODE").unwrap(),
        "cert-manager"
    );
    assert_eq!(
        pod["volumes"][0]["secret"]["secretName"],
        certificate["spec"]["secretName"]
    );
    // The webhook needs no write permission at all in this mode.
    let account = pod["serviceAccountName"].as_str().unwrap();
    for rule in rules_of(&objects, account) {
        for verb in strings(&rule["verbs"]) {
            assert!(!WRITE_VERBS.contains(&verb.as_str()), "{rule}");
        }
    }
    assert!(of_kind(&objects, "Secret").is_empty());
}

#[test]
fn namespace_scoped_install_confines_writes_and_admission() {
    let objects = render("namespace-scoped");
    let expected: Vec<String> = std::iter::once(NAMESPACE)
        .chain(WATCHED)
        .map(str::to_owned)
        .collect();
    let reconciler = deployment(&objects, "reconciler").unwrap();
    let pod = &reconciler["spec"]["template"]["spec"];
    assert_eq!(
        env(&pod["containers"][0], "WATCH_NAMESPACES").unwrap(),
        expected.join(",").as_str()
    );
    let account = pod["serviceAccountName"].as_str().unwrap();
    // Workload writes only through namespaced Roles, one per managed namespace.
    for role in of_kind(&objects, "ClusterRole") {
        let bound_to_reconciler = of_kind(&objects, "ClusterRoleBinding").iter().any(|b| {
            b["roleRef"]["name"] == role["metadata"]["name"] && b["subjects"][0]["name"] == account
        });
        if !bound_to_reconciler {
            continue;
        }
        for rule in role["rules"].as_array().unwrap() {
            let resources = strings(&rule["resources"]);
            assert!(
                resources
                    .iter()
                    .all(|r| ["nodes", "namespaces"].contains(&r.as_str())),
                "cluster-wide {resources:?} in a namespace-scoped install"
            );
        }
    }
    let workload_roles: BTreeSet<String> = of_kind(&objects, "Role")
        .into_iter()
        .filter(|r| {
            r["metadata"]["name"]
                .as_str()
                .unwrap()
                .ends_with("-workloads")
        })
        .map(|r| r["metadata"]["namespace"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(workload_roles, expected.iter().cloned().collect());
    for hook in webhooks(&objects) {
        let selector = &hook["namespaceSelector"]["matchExpressions"][0];
        assert_eq!(selector["key"], "kubernetes.io/metadata.name");
        assert_eq!(selector["operator"], "In");
        assert_eq!(strings(&selector["values"]), expected);
    }
}

#[test]
fn without_webhooks_only_the_storage_version_is_served() {
    let objects = render("webhooks-disabled");
    assert!(deployment(&objects, "webhook").is_none());
    assert!(webhooks(&objects).is_empty());
    let gc = find(&objects, "CustomResourceDefinition", GC_CRD).unwrap();
    assert_eq!(gc["spec"]["conversion"]["strategy"], "None");
    for version in gc["spec"]["versions"].as_array().unwrap() {
        assert_eq!(version["served"], version["storage"], "{}", version["name"]);
    }
}

#[test]
fn go_chart_values_install_with_their_meaning() {
    let objects = render("go-chart-values");
    // webhooks.certManager.enabled: true in the Go chart's values selects cert-manager.
    assert_eq!(of_kind(&objects, "Certificate").len(), 1);
    let reconciler = deployment(&objects, "reconciler").unwrap();
    let container = &reconciler["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["image"],
        "ghcr.io/rajsinghtech/garage-operator:v0.7.5"
    );
    // The Go chart probes port 8081; the reconciler serves its probes there.
    assert_eq!(container["livenessProbe"]["httpGet"]["port"], 8081);
    assert_eq!(
        env(container, "GARAGE_RECONCILER_HEALTH_LISTEN").unwrap(),
        "0.0.0.0:8081"
    );
    assert_eq!(
        env(container, "GARAGE_RECONCILER_LISTEN").unwrap(),
        "0.0.0.0:8443"
    );
}

#[test]
fn monitoring_switches_render_their_objects() {
    let objects = render("monitoring");
    assert_eq!(of_kind(&objects, "ServiceMonitor").len(), 2);
    assert_eq!(of_kind(&objects, "NetworkPolicy").len(), 2);
    let reconciler = deployment(&objects, "reconciler").unwrap();
    assert_eq!(
        env(
            &reconciler["spec"]["template"]["spec"]["containers"][0],
            "GARAGE_DEFAULT_IMAGE"
        )
        .unwrap(),
        "registry.example/garage:v2.5.0"
    );
}

#[test]
fn the_storage_capacity_threshold_reaches_the_reconciler() {
    // (--set values, the variable's value)
    let cases: [(&[&str], &str); 3] = [
        (&[], "10"),
        (&["storageCapacityLowPercent=25"], "25"),
        (&["storageCapacityLowPercent=0"], "0"),
    ];
    for (sets, expected) in cases {
        let args: Vec<String> = sets
            .iter()
            .flat_map(|s| ["--set".to_owned(), (*s).to_owned()])
            .collect();
        let objects = template(&args).unwrap_or_else(|e| panic!("{sets:?}: {e:#}"));
        let reconciler = deployment(&objects, "reconciler").unwrap();
        assert_eq!(
            env(
                &reconciler["spec"]["template"]["spec"]["containers"][0],
                "GARAGE_STORAGE_CAPACITY_LOW_PERCENT"
            )
            .unwrap(),
            expected,
            "{sets:?}"
        );
    }
    for bad in [
        "storageCapacityLowPercent=101",
        "storageCapacityLowPercent=-1",
    ] {
        let error = template(&["--set".into(), bad.into()])
            .expect_err(bad)
            .to_string();
        assert!(
            error.contains("storageCapacityLowPercent"),
            "{bad}: {error}"
        );
    }
}

#[test]
fn the_host_access_limits_reach_the_webhook() {
    // (--set values, WEBHOOK_HOST_PATH_ROOTS, WEBHOOK_ALLOW_PRIVILEGED_GARAGE)
    let cases: [(&[&str], &str, &str); 3] = [
        (&[], "", "false"),
        (
            &["garageSecurity.hostPathRoots={/disks,/srv/garage}"],
            "/disks,/srv/garage",
            "false",
        ),
        (&["garageSecurity.allowPrivileged=true"], "", "true"),
    ];
    for (sets, roots, privileged) in cases {
        let args: Vec<String> = sets
            .iter()
            .flat_map(|s| ["--set".to_owned(), (*s).to_owned()])
            .collect();
        let objects = template(&args).unwrap_or_else(|e| panic!("{sets:?}: {e:#}"));
        let webhook = deployment(&objects, "webhook").unwrap();
        let container = &webhook["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(
            env(container, "WEBHOOK_HOST_PATH_ROOTS").unwrap(),
            roots,
            "{sets:?}"
        );
        assert_eq!(
            env(container, "WEBHOOK_ALLOW_PRIVILEGED_GARAGE").unwrap(),
            privileged,
            "{sets:?}"
        );
    }
    let error = template(&[
        "--set".into(),
        "garageSecurity.hostPathRoots={relative}".into(),
    ])
    .expect_err("a relative root")
    .to_string();
    assert!(error.contains("hostPathRoots"), "{error}");
}

#[test]
fn release_name_and_namespace_flow_into_every_reference() {
    let text = template_text(
        "storage-system",
        &["--set".into(), "fullnameOverride=garage".into()],
    )
    .unwrap();
    let objects = chart_tests::parse_documents(&text).unwrap();
    for hook in webhooks(&objects) {
        assert_eq!(hook["clientConfig"]["service"]["name"], "garage-webhook");
        assert_eq!(
            hook["clientConfig"]["service"]["namespace"],
            "storage-system"
        );
    }
    let gc = find(&objects, "CustomResourceDefinition", GC_CRD).unwrap();
    assert_eq!(
        gc["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["namespace"],
        "storage-system"
    );
    let webhook = deployment(&objects, "webhook").unwrap();
    assert_eq!(
        env(
            &webhook["spec"]["template"]["spec"]["containers"][0],
            "WEBHOOK_SERVICE_NAME"
        )
        .unwrap(),
        "garage-webhook"
    );
}

#[test]
fn bad_values_are_refused_with_the_key_named() {
    let cases: [(&[&str], &str); 5] = [
        (&["webhook.replicaz=3"], "replicaz"),
        (&["leaderElection.enabled=false"], "leaderElection"),
        (&["certificates.mode=manual"], "certificates/mode"),
        (&["cosi.enabled=true"], "cosi.enabled"),
        (&["webhooks.failurePolicy=Maybe"], "failurePolicy"),
    ];
    for (sets, needle) in cases {
        let args: Vec<String> = sets
            .iter()
            .flat_map(|s| ["--set".to_owned(), (*s).to_owned()])
            .collect();
        let error = template(&args).expect_err(needle).to_string();
        assert!(error.contains(needle), "{needle}: {error}");
    }
}

/// Pods of `replicas` that `spec` (a PodDisruptionBudget's) lets a drain evict when all are
/// healthy; percentages round up, as the disruption controller rounds them.
fn disruptions_allowed(spec: &Value, replicas: i64) -> i64 {
    let scaled = |v: &Value| match v {
        Value::String(p) => {
            let percent: i64 = p.trim_end_matches('%').parse().unwrap();
            (replicas * percent + 99) / 100
        }
        v => v.as_i64().unwrap(),
    };
    match (spec.get("minAvailable"), spec.get("maxUnavailable")) {
        (Some(min), None) => (replicas - scaled(min)).max(0),
        (None, Some(max)) => scaled(max).min(replicas),
        other => panic!("a budget sets exactly one of minAvailable and maxUnavailable: {other:?}"),
    }
}

#[test]
fn the_webhook_budget_never_blocks_a_drain_by_default() {
    let set = |pairs: &[String]| -> Vec<String> {
        pairs
            .iter()
            .flat_map(|p| ["--set".to_owned(), p.clone()])
            .collect()
    };
    // (replicas, further values, disruptions the budget must allow)
    let cases: [(i64, &[&str], i64); 5] = [
        (1, &[], 1),
        (2, &[], 1),
        (3, &[], 1),
        // What the user sets explicitly is rendered as set.
        (2, &["webhook.podDisruptionBudget.minAvailable=1"], 1),
        (3, &["webhook.podDisruptionBudget.maxUnavailable=50%"], 2),
    ];
    for (replicas, extra, allowed) in cases {
        let mut values = vec![format!("webhook.replicas={replicas}")];
        values.extend(extra.iter().map(|v| (*v).to_owned()));
        let objects = template(&set(&values)).unwrap_or_else(|e| panic!("{values:?}: {e:#}"));
        let webhook = deployment(&objects, "webhook").expect("webhook Deployment");
        assert_eq!(webhook["spec"]["replicas"], replicas, "{values:?}");
        let pdb = of_kind(&objects, "PodDisruptionBudget");
        assert_eq!(pdb.len(), 1, "{values:?}");
        let got = disruptions_allowed(&pdb[0]["spec"], replicas);
        assert_eq!(got, allowed, "{values:?}: {}", pdb[0]["spec"]);
        assert!(got >= 1, "{values:?}: the budget blocks every drain");
    }
    // A single replica with the old default (minAvailable: 1) would allow none: the check
    // above can tell.
    assert_eq!(
        disruptions_allowed(&serde_json::json!({"minAvailable": 1}), 1),
        0
    );
}
