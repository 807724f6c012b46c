//! What moved between two looks at a namespace: every object the reconciler writes, as JSON,
//! and the leaf paths whose values differ. A steady-state check that fails names the field that
//! was written, not only a count.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};
use serde_json::Value;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;

use crate::ns;

/// Every object of the namespace the reconciler writes, by `Kind/name`, without its managed
/// fields (their timestamps move with any write and say nothing of what was written). Secret
/// data is left out: a failure message must not carry it.
pub(crate) async fn bodies(client: &Client) -> anyhow::Result<BTreeMap<String, Value>> {
    let mut out = BTreeMap::new();
    let lp = ListParams::default();
    macro_rules! add {
        ($k:ty) => {
            for mut o in Api::<$k>::namespaced(client.clone(), ns())
                .list(&lp)
                .await?
                .items
            {
                o.managed_fields_mut().clear();
                let name = format!("{}/{}", stringify!($k), o.name_any());
                let mut v = serde_json::to_value(&o)?;
                if let Some(m) = v.as_object_mut() {
                    m.remove("data");
                    m.remove("stringData");
                }
                out.insert(name, v);
            }
        };
    }
    add!(GarageCluster);
    add!(GarageNode);
    add!(StatefulSet);
    add!(Service);
    add!(ConfigMap);
    add!(Secret);
    add!(PodDisruptionBudget);
    add!(NetworkPolicy);
    Ok(out)
}

/// One line per changed leaf: `Kind/name path: before -> after`; objects that came or went are
/// one line each.
pub(crate) fn changes(
    before: &BTreeMap<String, Value>,
    after: &BTreeMap<String, Value>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (name, b) in before {
        match after.get(name) {
            None => out.push(format!("{name}: deleted")),
            Some(a) => leaves(name, "", b, a, &mut out),
        }
    }
    out.extend(
        after
            .keys()
            .filter(|k| !before.contains_key(*k))
            .map(|k| format!("{k}: created")),
    );
    out
}

fn leaves(name: &str, path: &str, b: &Value, a: &Value, out: &mut Vec<String>) {
    match (b, a) {
        (Value::Object(bm), Value::Object(am)) => {
            let keys: std::collections::BTreeSet<&String> = bm.keys().chain(am.keys()).collect();
            for k in keys {
                let null = Value::Null;
                let p = format!("{path}.{k}");
                leaves(
                    name,
                    &p,
                    bm.get(k).unwrap_or(&null),
                    am.get(k).unwrap_or(&null),
                    out,
                );
            }
        }
        (Value::Array(ba), Value::Array(aa)) if ba.len() == aa.len() => {
            for (i, (bi, ai)) in ba.iter().zip(aa).enumerate() {
                leaves(name, &format!("{path}[{i}]"), bi, ai, out);
            }
        }
        _ if b != a => out.push(format!("{name} {path}: {b} -> {a}")),
        _ => {}
    }
}

/// Whether the only thing that moved between `before` and `after` is the cluster's
/// `status.storageStats` (with the resourceVersion its write bumps), and it moved because the
/// disk did: its used space or its total moved by at least a percent of the total, the
/// threshold below which the reconciler keeps the recorded figures. The data filesystems of
/// the test members are the machine's own disk, which other processes write to; such a move
/// is a real change the status must follow, not a write at steady state.
pub(crate) fn only_the_disk_moved(
    before: &BTreeMap<String, Value>,
    after: &BTreeMap<String, Value>,
    cluster: &str,
) -> bool {
    let key = format!("GarageCluster/{cluster}");
    let without = |m: &BTreeMap<String, Value>| {
        let mut m = m.clone();
        if let Some(c) = m.get_mut(&key) {
            c["metadata"]["resourceVersion"] = Value::Null;
            c["status"]["storageStats"] = Value::Null;
        }
        m
    };
    if without(before) != without(after) {
        return false;
    }
    let figure = |m: &BTreeMap<String, Value>, field: &str| -> Option<i128> {
        let text = m.get(&key)?["status"]["storageStats"][field]
            .as_str()?
            .to_owned();
        let q = k8s_openapi::apimachinery::pkg::api::resource::Quantity(text);
        shared_types::quantity::QuantityValue::try_from(&q)
            .ok()?
            .value()
    };
    let (Some(t0), Some(u0), Some(t1), Some(u1)) = (
        figure(before, "totalCapacity"),
        figure(before, "usedCapacity"),
        figure(after, "totalCapacity"),
        figure(after, "usedCapacity"),
    ) else {
        return false;
    };
    (t1 - t0).abs() * 100 >= t1 || (u1 - u0).abs() * 100 >= t1
}
