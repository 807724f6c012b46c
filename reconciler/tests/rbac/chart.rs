//! The chart's reconciler RBAC against the table: every value combination is rendered with the
//! pinned helm, the rules bound to the reconciler's ServiceAccount are expanded to single
//! grants, and they must equal the grants the table gives that install.

use std::collections::BTreeSet;

use chart_tests::{bound_rules, combos, deployment, env, template};
use reconciler::rbac::{Objects, PERMISSIONS, Scope};
use serde_json::Value;

/// One verb on one resource, where and on which object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Grant {
    /// The namespace of the binding; `None` for cluster-wide.
    namespace: Option<String>,
    group: String,
    resource: String,
    verb: String,
    /// One `resourceNames` entry; `None` for every object.
    name: Option<String>,
}

/// What the chart rendered for the reconciler.
struct Install {
    account: String,
    /// The release namespace (the Deployment's).
    release: String,
    /// `WATCH_NAMESPACES`; empty for a cluster-wide install.
    managed: Vec<String>,
    /// `GARAGE_RECONCILER_LEASE`.
    lease: String,
}

fn install(objects: &[Value]) -> Install {
    let reconciler = deployment(objects, "reconciler").expect("the reconciler Deployment");
    let pod = &reconciler["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
    Install {
        account: text(Some(&pod["serviceAccountName"])),
        release: text(Some(&reconciler["metadata"]["namespace"])),
        managed: text(env(container, "WATCH_NAMESPACES"))
            .split(',')
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .collect(),
        lease: text(env(container, "GARAGE_RECONCILER_LEASE")),
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

/// Every single grant the rendered rules give `account`.
fn granted(objects: &[Value], account: &str) -> BTreeSet<Grant> {
    let mut out = BTreeSet::new();
    for (namespace, rule) in bound_rules(objects, account) {
        let names = strings(&rule["resourceNames"]);
        let names: Vec<Option<String>> = if names.is_empty() {
            vec![None]
        } else {
            names.into_iter().map(Some).collect()
        };
        for group in strings(&rule["apiGroups"]) {
            for resource in strings(&rule["resources"]) {
                for verb in strings(&rule["verbs"]) {
                    for name in &names {
                        out.insert(Grant {
                            namespace: namespace.clone(),
                            group: group.clone(),
                            resource: resource.clone(),
                            verb: verb.clone(),
                            name: name.clone(),
                        });
                    }
                }
            }
        }
    }
    out
}

/// Every single grant the table gives `install`.
fn expected(install: &Install) -> BTreeSet<Grant> {
    let cluster_wide = install.managed.is_empty();
    let mut out = BTreeSet::new();
    for p in PERMISSIONS {
        let namespaces: Vec<Option<String>> = match p.scope {
            Scope::Managed if cluster_wide => vec![None],
            Scope::Managed => install.managed.iter().cloned().map(Some).collect(),
            Scope::Cluster => vec![None],
            Scope::Release => vec![Some(install.release.clone())],
        };
        let name = match p.objects {
            Objects::Any => None,
            Objects::LeaderLease => Some(install.lease.clone()),
        };
        for namespace in namespaces {
            for verb in p.verbs {
                out.insert(Grant {
                    namespace: namespace.clone(),
                    group: p.group.to_owned(),
                    resource: p.resource.to_owned(),
                    verb: (*verb).to_owned(),
                    name: name.clone(),
                });
            }
        }
    }
    out
}

#[test]
fn the_chart_grants_the_reconciler_exactly_the_table() {
    let mut modes = BTreeSet::new();
    for combo in combos() {
        let objects = template(&combo.args).unwrap_or_else(|e| panic!("{}: {e:#}", combo.name));
        let install = install(&objects);
        assert!(!install.lease.is_empty(), "{}: no lease name", combo.name);
        modes.insert(install.managed.is_empty());
        let granted = granted(&objects, &install.account);
        let expected = expected(&install);
        let extra: Vec<_> = granted.difference(&expected).collect();
        let missing: Vec<_> = expected.difference(&granted).collect();
        assert!(
            extra.is_empty() && missing.is_empty(),
            "{}: the chart's reconciler RBAC differs from reconciler::rbac::PERMISSIONS\n\
             granted but in no row: {extra:#?}\nin a row but not granted: {missing:#?}",
            combo.name
        );
    }
    assert_eq!(
        modes.len(),
        2,
        "both a cluster-wide and a namespace-scoped install are checked"
    );
}
