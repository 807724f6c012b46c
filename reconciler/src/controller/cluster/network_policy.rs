//! The NetworkPolicy over a cluster's Garage pods: the install's switch, read from the
//! environment the chart sets (`garageNetworkPolicy.enabled`), and the write that carries a
//! [`Plan`] out.
//!
//! Off means off: with the switch off, a policy the cluster controls is deleted, so turning
//! the value off never leaves pods restricted by rules nobody maintains any more.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Api;
use kube::api::DeleteParams;

use crate::controller::write::{self, ensure};
use crate::controller::{Context, Error};
use crate::desired::is_controlled_by;
use crate::desired::network_policy::{AdminCallers, Plan};

/// `true` renders the policy for every GarageCluster; `false` (or unset) removes it.
pub const ENABLED_ENV: &str = "GARAGE_NETWORK_POLICY";
/// The reconciler's namespace (the release namespace), whose pods may reach the Admin API.
pub const RECONCILER_NAMESPACE_ENV: &str = "GARAGE_NETWORK_POLICY_RECONCILER_NAMESPACE";
/// The labels selecting the reconciler's pods, as a JSON object.
pub const RECONCILER_POD_LABELS_ENV: &str = "GARAGE_NETWORK_POLICY_RECONCILER_POD_LABELS";
/// The namespaces that may scrape `/metrics` on the Admin port, as a JSON label selector; set
/// by the chart only while its metrics scraping (`serviceMonitor.enabled`) is on.
pub const METRICS_NAMESPACES_ENV: &str = "GARAGE_NETWORK_POLICY_METRICS_NAMESPACE_SELECTOR";

/// The install's policy settings from `lookup` (non-empty environment values by name): `None`
/// when the switch is off, or an error naming the variable that is missing or malformed.
pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<AdminCallers>, String> {
    let enabled = lookup(ENABLED_ENV);
    match enabled.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("false") => return Ok(None),
        Some("true") => {}
        Some(_) => {
            return Err(format!(
                "{ENABLED_ENV}={:?} is neither true nor false",
                enabled.unwrap_or_default()
            ));
        }
    }
    let namespace = lookup(RECONCILER_NAMESPACE_ENV)
        .ok_or_else(|| format!("{ENABLED_ENV}=true needs {RECONCILER_NAMESPACE_ENV}"))?;
    let labels = lookup(RECONCILER_POD_LABELS_ENV)
        .ok_or_else(|| format!("{ENABLED_ENV}=true needs {RECONCILER_POD_LABELS_ENV}"))?;
    let labels: BTreeMap<String, String> = serde_json::from_str(&labels).map_err(|_| {
        format!("{RECONCILER_POD_LABELS_ENV} is not a JSON object of label names and values")
    })?;
    let metrics = lookup(METRICS_NAMESPACES_ENV)
        .map(|text| serde_json::from_str::<LabelSelector>(&text))
        .transpose()
        .map_err(|_| format!("{METRICS_NAMESPACES_ENV} is not a JSON label selector"))?;
    AdminCallers::new(&namespace, labels, metrics)
        .map(Some)
        .map_err(|why| format!("{ENABLED_ENV}=true: {why}"))
}

/// Carries `plan` out in namespace `ns` for the cluster with `uid`. A removal deletes only a
/// policy that cluster controls, and writes nothing when there is none.
pub async fn converge(plan: &Plan, ns: &str, uid: &str, ctx: &Context) -> Result<(), Error> {
    let api: Api<NetworkPolicy> = Api::namespaced(ctx.client.clone(), ns);
    match plan {
        Plan::Ensure(policy) => {
            ensure(
                &api,
                &ctx.metrics,
                policy.as_ref(),
                uid,
                write::metadata_and_spec,
            )
            .await?;
        }
        Plan::Remove { name } => {
            let Some(live) = api.get_opt(name).await? else {
                return Ok(());
            };
            if !is_controlled_by(&live, uid) || live.metadata.deletion_timestamp.is_some() {
                return Ok(());
            }
            let params = DeleteParams::background();
            if write::delete_if_present(&api, &ctx.metrics, name, &params).await? {
                tracing::info!(
                    namespace = ns,
                    name,
                    "NetworkPolicy deleted: the install turned it off"
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    /// Environment variables by name and value.
    type Vars = Vec<(&'static str, &'static str)>;

    const LABELS: &str = r#"{"app.kubernetes.io/component":"reconciler","app.kubernetes.io/instance":"garage-operator"}"#;

    #[test]
    fn the_switch_is_off_unless_the_chart_turns_it_on() {
        for pairs in [
            vec![],
            vec![(ENABLED_ENV, "false")],
            // Leftover details of a policy turned off say nothing.
            vec![(ENABLED_ENV, "False"), (RECONCILER_POD_LABELS_ENV, "{}")],
        ] {
            assert_eq!(from_env(env(&pairs)), Ok(None), "{pairs:?}");
        }
    }

    #[test]
    fn turned_on_it_reads_the_reconciler_and_the_scrapers() {
        let on = [
            (ENABLED_ENV, "true"),
            (RECONCILER_NAMESPACE_ENV, "garage-operator"),
            (RECONCILER_POD_LABELS_ENV, LABELS),
        ];
        let install = from_env(env(&on)).unwrap().unwrap();
        assert_eq!(install.reconciler_namespace(), "garage-operator");
        assert_eq!(
            install.reconciler_pod_labels()["app.kubernetes.io/component"],
            "reconciler"
        );
        assert_eq!(install.metrics_namespaces(), None);
        let mut scraped = on.to_vec();
        scraped.push((
            METRICS_NAMESPACES_ENV,
            r#"{"matchLabels":{"metrics":"enabled"}}"#,
        ));
        let install = from_env(env(&scraped)).unwrap().unwrap();
        let selector = install.metrics_namespaces().unwrap();
        assert_eq!(
            selector.match_labels.as_ref().unwrap()["metrics"],
            "enabled"
        );
    }

    #[test]
    fn a_bad_or_missing_value_is_refused_with_its_name() {
        let on = |extra: &[(&'static str, &'static str)]| {
            let mut pairs = vec![(ENABLED_ENV, "true")];
            pairs.extend_from_slice(extra);
            from_env(env(&pairs)).unwrap_err()
        };
        // (why, the variables beside the switch, a word the error must contain)
        let cases: [(&str, Vars, &str); 6] = [
            (
                "no namespace",
                vec![(RECONCILER_POD_LABELS_ENV, LABELS)],
                RECONCILER_NAMESPACE_ENV,
            ),
            (
                "no labels",
                vec![(RECONCILER_NAMESPACE_ENV, "ns")],
                RECONCILER_POD_LABELS_ENV,
            ),
            (
                "labels that are not JSON",
                vec![
                    (RECONCILER_NAMESPACE_ENV, "ns"),
                    (RECONCILER_POD_LABELS_ENV, "a=b"),
                ],
                RECONCILER_POD_LABELS_ENV,
            ),
            (
                "no label at all",
                vec![
                    (RECONCILER_NAMESPACE_ENV, "ns"),
                    (RECONCILER_POD_LABELS_ENV, "{}"),
                ],
                "every pod of its namespace",
            ),
            (
                "a scraper selector that selects every namespace",
                vec![
                    (RECONCILER_NAMESPACE_ENV, "ns"),
                    (RECONCILER_POD_LABELS_ENV, LABELS),
                    (METRICS_NAMESPACES_ENV, "{}"),
                ],
                "every namespace",
            ),
            (
                "a scraper selector that is not JSON",
                vec![
                    (RECONCILER_NAMESPACE_ENV, "ns"),
                    (RECONCILER_POD_LABELS_ENV, LABELS),
                    (METRICS_NAMESPACES_ENV, "metrics=enabled"),
                ],
                METRICS_NAMESPACES_ENV,
            ),
        ];
        for (why, extra, word) in cases {
            let error = on(&extra);
            assert!(error.contains(word), "{why}: {error}");
        }
        let error = from_env(env(&[(ENABLED_ENV, "yes")])).unwrap_err();
        assert!(error.contains(ENABLED_ENV), "{error}");
    }
}
