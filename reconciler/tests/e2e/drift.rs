//! Drift: a label of an object the reconciler owns, changed or removed by hand, is put back on
//! the next pass, for every kind a storage cluster of Managed members has (a generated
//! GarageNode, its StatefulSet, the cluster's Services, the disruption budget and the
//! NetworkPolicy), and so is a field of its spec (a claim retention policy, a Service's
//! `publishNotReadyAddresses`, the budget's `minAvailable`, the NetworkPolicy's rules), with
//! no layout change and the cluster Ready at the repair's end. The changes are made while the
//! cluster is suspended ([`crate::suspension`]), and stay until the suspension is lifted.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, Resource};
use localcluster::wait_until as wait;
use reconciler::names;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use shared_types::conditions::common::CONDITION_READY;
use shared_types::garage_node::GarageNode;
use shared_types::keys::label;

use crate::support::*;
use crate::{NAME, World, ns};

/// One object of one kind, and the label the step changes on it.
struct Drifted {
    what: String,
    labels: BTreeMap<String, String>,
    read: Box<dyn Fn() -> futures::future::BoxFuture<'static, anyhow::Result<Labels>> + Send>,
}

type Labels = BTreeMap<String, String>;

/// Changes `key` on `name` (removes it for `None`) and returns how to read its labels again,
/// with the labels it had before.
async fn drift<K>(
    client: &Client,
    name: &str,
    key: &str,
    value: Option<&str>,
) -> anyhow::Result<Drifted>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + 'static,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns());
    let before = api
        .get(name)
        .await
        .with_context(|| format!("{} {name}", K::kind(&Default::default())))?
        .meta()
        .labels
        .clone()
        .unwrap_or_default();
    ensure!(
        before.contains_key(key),
        "{} {name} has no label {key} to change: {before:?}",
        K::kind(&Default::default())
    );
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {key: value}}})),
    )
    .await?;
    let owned = name.to_owned();
    Ok(Drifted {
        what: format!("{} {name} ({key})", K::kind(&Default::default())),
        labels: before,
        read: Box::new(move || {
            let api = api.clone();
            let name = owned.clone();
            Box::pin(async move {
                Ok(api
                    .get(&name)
                    .await?
                    .meta()
                    .labels
                    .clone()
                    .unwrap_or_default())
            })
        }),
    })
}

/// A field of one object, changed by hand, and how to read it again.
struct DriftedField {
    what: String,
    before: Value,
    read: Box<dyn Fn() -> futures::future::BoxFuture<'static, anyhow::Result<Value>> + Send>,
}

/// Merge-patches `change` into `name` and returns how to read the value at `pointer` (a JSON
/// pointer) again, with the value it had before; the change must alter that value.
async fn drift_field<K>(
    client: &Client,
    name: &str,
    pointer: &'static str,
    change: Value,
) -> anyhow::Result<DriftedField>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + Debug
        + Send
        + 'static,
    K::DynamicType: Default,
{
    let kind = K::kind(&Default::default()).to_string();
    let api: Api<K> = Api::namespaced(client.clone(), ns());
    let at = |object: &K| -> anyhow::Result<Value> {
        Ok(serde_json::to_value(object)?
            .pointer(pointer)
            .cloned()
            .unwrap_or(Value::Null))
    };
    let before = at(&api
        .get(name)
        .await
        .with_context(|| format!("{kind} {name}"))?)?;
    let after = at(&api
        .patch(name, &PatchParams::default(), &Patch::Merge(change))
        .await?)?;
    ensure!(
        after != before,
        "{kind} {name}: the change left {pointer} at {before}"
    );
    let owned = name.to_owned();
    Ok(DriftedField {
        what: format!("{kind} {name} ({pointer})"),
        before,
        read: Box::new(move || {
            let api = api.clone();
            let name = owned.clone();
            Box::pin(async move {
                let object = api.get(&name).await?;
                Ok(serde_json::to_value(&object)?
                    .pointer(pointer)
                    .cloned()
                    .unwrap_or(Value::Null))
            })
        }),
    })
}

/// Changes one spec field on an object of each kind but the GarageNode (whose fields name its
/// role and would move data) and waits until every one is back.
async fn fields(w: &World<'_>) -> anyhow::Result<Vec<DriftedField>> {
    let c = &w.client;
    let node = format!("{NAME}-storage-0");
    Ok(vec![
        // Retain keeps a member's data when the set is scaled; Delete would drop it.
        drift_field::<StatefulSet>(
            c,
            &node,
            "/spec/persistentVolumeClaimRetentionPolicy/whenScaled",
            json!({"spec": {"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete"}}}),
        )
        .await?,
        drift_field::<Service>(
            c,
            &names::headless_service(NAME),
            "/spec/publishNotReadyAddresses",
            json!({"spec": {"publishNotReadyAddresses": false}}),
        )
        .await?,
        // A budget lowered by hand would let evictions take quorum.
        drift_field::<PodDisruptionBudget>(
            c,
            &names::storage_pdb(NAME),
            "/spec/minAvailable",
            json!({"spec": {"minAvailable": 0}}),
        )
        .await?,
        drift_field::<NetworkPolicy>(
            c,
            &names::garage_network_policy(NAME),
            "/spec/ingress",
            json!({"spec": {"ingress": [{}]}}),
        )
        .await?,
    ])
}

/// Suspends the cluster, changes one label on an object of each kind and one spec field on
/// each kind but the GarageNode, proves that none is put back while suspended, lifts the
/// suspension and waits until every one is back.
pub(crate) async fn put_back(w: &World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let c = &w.client;
    let layout_before = w
        .clusters
        .get(NAME)
        .await?
        .status
        .and_then(|s| s.layout_version);
    let node = format!("{NAME}-storage-0");
    // Made while the cluster is suspended: nothing is put back until it is lifted.
    crate::suspension::hold(w).await?;
    let drifted = vec![
        // The slot label names which Auto member a GarageNode is; the tier, its kind.
        drift::<GarageNode>(c, &node, label::LABEL_AUTO_NODE_SLOT, Some("drifted")).await?,
        drift::<GarageNode>(c, &format!("{NAME}-storage-1"), label::LABEL_TIER, None).await?,
        drift::<StatefulSet>(c, &node, label::LABEL_STORAGE_GROUP, Some("drifted")).await?,
        drift::<Service>(
            c,
            &names::headless_service(NAME),
            label::LABEL_CLUSTER,
            Some("other"),
        )
        .await?,
        drift::<Service>(
            c,
            &names::api_service(NAME),
            label::LABEL_APP_INSTANCE,
            None,
        )
        .await?,
        drift::<PodDisruptionBudget>(c, &names::storage_pdb(NAME), label::LABEL_APP_NAME, None)
            .await?,
        drift::<NetworkPolicy>(
            c,
            &names::garage_network_policy(NAME),
            label::LABEL_CLUSTER,
            Some("other"),
        )
        .await?,
    ];
    let fields = fields(w).await?;
    crate::suspension::still_held(w).await?;
    for d in &drifted {
        let now = (d.read)().await?;
        ensure!(
            d.labels.iter().any(|(k, v)| now.get(k) != Some(v)),
            "{} was put back while the cluster was suspended",
            d.what
        );
    }
    for f in &fields {
        ensure!(
            (f.read)().await? != f.before,
            "{} was put back while the cluster was suspended",
            f.what
        );
    }
    crate::suspension::lift(w).await?;
    wait(
        "every drifted label and field put back",
        Duration::from_secs(120),
        || async {
            for d in &drifted {
                let now = (d.read)().await?;
                if d.labels.iter().any(|(k, v)| now.get(k) != Some(v)) {
                    return Ok(false);
                }
            }
            for f in &fields {
                if (f.read)().await? != f.before {
                    return Ok(false);
                }
            }
            Ok(true)
        },
    )
    .await
    .with_context(|| {
        let what: Vec<&str> = drifted
            .iter()
            .map(|d| d.what.as_str())
            .chain(fields.iter().map(|f| f.what.as_str()))
            .collect();
        format!("drifted: {}", what.join(", "))
    })?;
    wait_condition(
        &w.clusters,
        CONDITION_READY,
        "True",
        None,
        Duration::from_secs(120),
    )
    .await?;
    let layout_after = w
        .clusters
        .get(NAME)
        .await?
        .status
        .and_then(|s| s.layout_version);
    ensure!(
        layout_after == layout_before,
        "the layout changed from {layout_before:?} to {layout_after:?} while labels were repaired"
    );
    if let Some(store) = &w.store {
        verify(store, &s3(w.sim, &format!("{node}-0"))?, &w.checksummed).await?;
    }
    println!(
        "drift: {} labels (GarageNode, StatefulSet, Service, PodDisruptionBudget, NetworkPolicy) and {} spec fields (StatefulSet, Service, PodDisruptionBudget, NetworkPolicy) left alone while suspended, put back after, in {:.1}s; layout version unchanged, objects read back",
        drifted.len(),
        fields.len(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
