//! The ServiceMonitor `<cluster>-garage` of `spec.monitoring`: the prometheus-operator object
//! that has Prometheus scrape `/metrics` on the Admin port of every member, through the
//! `<cluster>-admin` Service (the one Service that always carries that port, so each member
//! is scraped once), with the metrics token as its bearer when the cluster has one.
//!
//! The kind belongs to another project and may not be installed: the plan says so in the
//! `ServiceMonitorReady` condition instead of failing the cluster, and a cluster that turns
//! monitoring off has the ServiceMonitor it controls deleted.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::{Deserialize, Serialize};
use serde_json::json;
use shared_types::conditions::cluster as cc;
use shared_types::garage_cluster::common::RelabelConfig;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::label::{self, value};

use super::config::METRICS_TOKEN_KEY;
use super::{DesiredError, Settings, controller_ref, labels};
use crate::conditions::Desired;
use crate::names;

/// API group of the kind.
pub const GROUP: &str = "monitoring.coreos.com";
/// API version of the kind.
pub const VERSION: &str = "v1";
/// The `app.kubernetes.io/component` value of the `<cluster>-admin` Service, which the
/// ServiceMonitor selects.
pub const ADMIN_COMPONENT: &str = "admin";
/// The pod volume that mounts the metrics token (see the statefulset module).
const METRICS_VOLUME: &str = "metrics-token";

/// A `monitoring.coreos.com/v1` ServiceMonitor, with its spec kept as written: the operator
/// reads back only what it wrote.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServiceMonitor {
    /// `monitoring.coreos.com/v1`.
    #[serde(rename = "apiVersion", default)]
    pub api_version: String,
    /// `ServiceMonitor`.
    #[serde(default)]
    pub kind: String,
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// The spec, in prometheus-operator's schema.
    #[serde(default)]
    pub spec: serde_json::Value,
}

impl Resource for ServiceMonitor {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "ServiceMonitor".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        GROUP.into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        VERSION.into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "servicemonitors".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// What to do with the cluster's ServiceMonitor this pass.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Create it, or bring the one the cluster controls to this.
    Ensure(Box<ServiceMonitor>),
    /// Delete the one the cluster controls, if there is one.
    Remove {
        /// Its name.
        name: String,
    },
    /// Nothing: the kind is not installed.
    Nothing,
}

/// `<cluster>-garage`.
pub fn name(cluster: &str) -> String {
    format!("{cluster}-garage")
}

/// The plan for `c`, and its `ServiceMonitorReady` condition (none while monitoring is off).
/// `installed`: whether the API server serves the kind; `pods`: the cluster's Garage pods,
/// whose metrics-token copies decide the bearer (see [`bearer`]).
pub fn plan(
    c: &GarageCluster,
    s: &Settings,
    installed: bool,
    metrics_copy: Option<&str>,
    pods: &[Pod],
) -> Result<(Plan, Option<Desired>), DesiredError> {
    let monitoring = c.spec.monitoring.as_ref();
    let sm_name = name(&s.name);
    if monitoring.and_then(|m| m.enabled) != Some(true) {
        let plan = if installed {
            Plan::Remove { name: sm_name }
        } else {
            Plan::Nothing
        };
        return Ok((plan, None));
    }
    if !installed {
        let condition = Desired {
            type_: cc::CONDITION_SERVICE_MONITOR_READY,
            status: false,
            reason: shared_types::conditions::reason::REASON_SERVICE_MONITOR_KIND_MISSING,
            message: format!(
                "spec.monitoring.enabled is true but the API server serves no {GROUP}/{VERSION} \
                 ServiceMonitor; install the prometheus-operator CRDs and {sm_name} is created \
                 within a few minutes. Garage still serves /metrics on the admin port"
            ),
        };
        return Ok((Plan::Nothing, Some(condition)));
    }
    let mut endpoint = json!({"port": "admin", "path": "/metrics"});
    if let Some(interval) = monitoring.and_then(|m| m.interval.as_deref()) {
        endpoint["interval"] = json!(interval);
    }
    if let Some(rules) = monitoring
        .and_then(|m| m.metric_relabelings.as_ref())
        .filter(|r| !r.is_empty())
    {
        endpoint["metricRelabelings"] = rules.iter().map(relabeling).collect();
    }
    if let Some(secret) = bearer(metrics_copy, pods) {
        endpoint["authorization"] = json!({
            "type": "Bearer",
            "credentials": {"name": secret, "key": METRICS_TOKEN_KEY},
        });
    }
    // The user's labels may add to the operator's, never replace them.
    let mut object_labels = monitoring
        .and_then(|m| m.additional_labels.clone())
        .unwrap_or_default();
    object_labels.extend(labels::cluster_labels(&s.name));
    let spec = json!({
        "jobLabel": label::LABEL_APP_NAME,
        "selector": {"matchLabels": admin_service_selector(&s.name)},
        "namespaceSelector": {"matchNames": [s.namespace]},
        "endpoints": [endpoint],
    });
    // The digest of the spec changes whenever the spec does, also when a field is removed,
    // which comparing the live object with the wanted one alone would not see; the write
    // then replaces the endpoint list, and the removed field with it.
    let digest = crate::names::sha256_hex(spec.to_string().as_bytes());
    let monitor = ServiceMonitor {
        api_version: format!("{GROUP}/{VERSION}"),
        kind: "ServiceMonitor".into(),
        metadata: ObjectMeta {
            name: Some(sm_name.clone()),
            namespace: Some(s.namespace.clone()),
            labels: Some(object_labels),
            annotations: Some(BTreeMap::from([(
                shared_types::keys::annotation::ANNOTATION_RENDERED_HASH.to_owned(),
                digest[..16].to_owned(),
            )])),
            owner_references: Some(vec![controller_ref(c)?]),
            ..Default::default()
        },
        spec,
    };
    let condition = Desired {
        type_: cc::CONDITION_SERVICE_MONITOR_READY,
        status: true,
        reason: shared_types::conditions::reason::REASON_APPLIED,
        message: format!(
            "ServiceMonitor {sm_name} has /metrics scraped on the admin port of every member \
             through Service {}",
            names::admin_service(&s.name)
        ),
    };
    Ok((Plan::Ensure(Box::new(monitor)), Some(condition)))
}

/// One rule in prometheus-operator's `RelabelConfig` (the same fields and spelling); unset
/// fields are left out, so Prometheus applies its defaults.
fn relabeling(r: &RelabelConfig) -> serde_json::Value {
    let mut rule = serde_json::Map::new();
    let mut put = |key: &str, value: serde_json::Value| {
        rule.insert(key.to_owned(), value);
    };
    if let Some(v) = &r.source_labels {
        put("sourceLabels", json!(v));
    }
    if let Some(v) = &r.separator {
        put("separator", json!(v));
    }
    if let Some(v) = &r.target_label {
        put("targetLabel", json!(v));
    }
    if let Some(v) = &r.regex {
        put("regex", json!(v));
    }
    if let Some(v) = r.modulus {
        put("modulus", json!(v));
    }
    if let Some(v) = &r.replacement {
        put("replacement", json!(v));
    }
    if let Some(v) = &r.action {
        put("action", json!(v));
    }
    serde_json::Value::Object(rule)
}

/// The labels of the `<cluster>-admin` Service that tell it from the cluster's other Services.
pub fn admin_service_selector(cluster: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (label::LABEL_CLUSTER.into(), cluster.into()),
        (label::LABEL_APP_COMPONENT.into(), ADMIN_COMPONENT.into()),
        (label::LABEL_APP_NAME.into(), value::APP_NAME_GARAGE.into()),
    ])
}

/// The Secret whose `metrics-token` Prometheus sends: the cluster's current credentials copy,
/// except while some pod still runs another copy (a token change rolling out): that one is
/// kept until every pod has moved, since Garage reads its token only when it starts.
fn bearer<'a>(metrics_copy: Option<&'a str>, pods: &'a [Pod]) -> Option<&'a str> {
    let wanted = metrics_copy?;
    let mut older: Vec<&str> = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| {
            p.spec
                .as_ref()?
                .volumes
                .iter()
                .flatten()
                .find(|v| v.name == METRICS_VOLUME)?
                .secret
                .as_ref()?
                .secret_name
                .as_deref()
        })
        .filter(|copy| *copy != wanted)
        .collect();
    older.sort_unstable();
    Some(older.first().copied().unwrap_or(wanted))
}

#[cfg(test)]
mod tests;
