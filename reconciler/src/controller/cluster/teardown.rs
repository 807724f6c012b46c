//! The GarageCluster finalizer: observes what of the store is left and carries out the
//! [`machine::teardown`](crate::machine::teardown) step.

use std::time::Duration;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PropagationPolicy};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use shared_types::common::ClusterPhase;
use shared_types::conditions::{common, reason};
use shared_types::garage_cluster::common::DeletionPolicy;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::keys::finalizer::FINALIZER_CLUSTER;
use shared_types::keys::label;

use super::act::publish;
use crate::controller::{Context, Error, finalizer, write};
use crate::desired::is_controlled_by;
use crate::machine::teardown::{self, Child, Phase};
use decide::cluster::observed::references;
use decide::conditions::Desired;
use decide::note::Note;

/// One teardown pass over a deleting cluster.
pub async fn run(cluster: &GarageCluster, ctx: &Context) -> Result<Action, Error> {
    if !finalizer::has(cluster, FINALIZER_CLUSTER) {
        return Ok(Action::await_change());
    }
    let ns = cluster.namespace().unwrap_or_default();
    if cluster.effective_deletion_policy() == DeletionPolicy::Destroy
        && abandon_transaction(cluster, ctx).await?
    {
        return Ok(Action::requeue(Duration::from_millis(500)));
    }
    let observed = observe(cluster, ctx).await?;
    let phase = teardown::step(cluster.effective_deletion_policy(), &observed);
    let client = &ctx.client;
    let (message, notes) = match &phase {
        Phase::Refused(why) => (
            why.clone(),
            vec![Note::warning(
                reason::REASON_UNSUPPORTED,
                "Teardown",
                why.clone(),
            )],
        ),
        Phase::DeleteNodes(names) => {
            let api: Api<GarageNode> = Api::namespaced(client.clone(), &ns);
            // Foreground: each GarageNode stays visible until its workload is gone.
            let dp = DeleteParams {
                propagation_policy: Some(PropagationPolicy::Foreground),
                ..DeleteParams::default()
            };
            for name in names {
                write::delete_if_present(&api, &ctx.metrics, name, &dp).await?;
            }
            ctx.metrics.step("teardown", "delete_nodes");
            let m = format!("deleting GarageNodes {}", names.join(", "));
            (
                m.clone(),
                vec![Note::normal(reason::REASON_DELETING, "DeleteNodes", m)],
            )
        }
        Phase::WaitForNodes(names) => (
            format!("waiting for {} to finish deleting", names.join(", ")),
            Vec::new(),
        ),
        Phase::DeleteOwned(children) => {
            for child in children {
                delete_owned(ctx, cluster, &ns, child).await?;
            }
            ctx.metrics.step("teardown", "delete_owned");
            (
                "removing the cluster's Services, ConfigMaps, Secrets, PDB, pool DaemonSets and Node activation labels and identity records".into(),
                Vec::new(),
            )
        }
        Phase::Done => {
            let api: Api<GarageCluster> = Api::namespaced(client.clone(), &ns);
            finalizer::set(&api, &ctx.metrics, cluster, FINALIZER_CLUSTER, false).await?;
            ctx.metrics.step("teardown", "release");
            ctx.events
                .publish(
                    cluster,
                    &[Note::normal(
                        reason::REASON_DELETING,
                        "Teardown",
                        "every object of the store is gone; finalizer released".into(),
                    )],
                )
                .await;
            return Ok(Action::await_change());
        }
    };
    ctx.events.publish(cluster, &notes).await;
    let mut status = cluster.status.clone().unwrap_or_default();
    status.phase = Some(ClusterPhase::Deleting);
    let wanted = [Desired {
        type_: common::CONDITION_READY,
        status: false,
        reason: if matches!(phase, Phase::Refused(_)) {
            reason::REASON_UNSUPPORTED
        } else {
            reason::REASON_DELETING
        },
        message,
    }];
    publish(cluster, ctx, status, &wanted).await?;
    Ok(Action::requeue(match phase {
        Phase::Refused(_) => ctx.config.resync,
        _ => ctx.config.short_requeue.min(Duration::from_secs(2)),
    }))
}

/// Destroy discards the whole store, so a drain or rollout in progress has nothing left to
/// protect; its record would otherwise keep admission from letting the members go (a
/// GarageNode is not deleted while a rollout replaces a pod, nor while another drain is
/// recorded). Clears one record per pass, each write conditional on the resourceVersion the
/// cluster was read at. True when a record was cleared.
async fn abandon_transaction(cluster: &GarageCluster, ctx: &Context) -> Result<bool, Error> {
    let status = cluster.status.as_ref();
    let (field, what) = if let Some(record) = status.and_then(|s| s.storage_drain.as_ref()) {
        let actor = record
            .actor
            .as_ref()
            .and_then(|a| a.name.clone())
            .unwrap_or_default();
        ("storageDrain", format!("the drain of {actor}"))
    } else if let Some(record) = status.and_then(|s| s.storage_rollout.as_ref()) {
        let actor = record.garage_node_name.clone().unwrap_or_default();
        ("storageRollout", format!("the rollout replacing {actor}"))
    } else {
        return Ok(false);
    };
    super::act::write_transaction(cluster, field, None, ctx).await?;
    ctx.metrics.step(
        "teardown",
        if field == "storageDrain" {
            "abandon_drain"
        } else {
            "abandon_rollout"
        },
    );
    ctx.events
        .publish(
            cluster,
            &[Note::warning(
                reason::REASON_DELETING,
                "Teardown",
                format!(
                    "deletionPolicy Destroy: {what} is abandoned, the whole store is being deleted"
                ),
            )],
        )
        .await;
    Ok(true)
}

async fn observe(cluster: &GarageCluster, ctx: &Context) -> Result<teardown::Observed, Error> {
    let ns = cluster.namespace().unwrap_or_default();
    let name = cluster.name_any();
    let uid = cluster.metadata.uid.clone().unwrap_or_default();
    let nodes = Api::<GarageNode>::namespaced(ctx.client.clone(), &ns)
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|gn| references(gn, &name, &ns) || is_controlled_by(gn, &uid))
        .map(|gn| child("GarageNode", &gn))
        .collect();
    let selector = ListParams::default().labels(&format!("{}={name}", label::LABEL_CLUSTER));
    let mut owned = Vec::new();
    owned.extend(owned_of::<Service>(ctx, &ns, &uid, &selector, "Service").await?);
    owned.extend(owned_of::<ConfigMap>(ctx, &ns, &uid, &selector, "ConfigMap").await?);
    owned.extend(owned_of::<Secret>(ctx, &ns, &uid, &selector, "Secret").await?);
    owned.extend(
        owned_of::<PodDisruptionBudget>(ctx, &ns, &uid, &selector, "PodDisruptionBudget").await?,
    );
    owned.extend(owned_of::<NetworkPolicy>(ctx, &ns, &uid, &selector, "NetworkPolicy").await?);
    let daemonsets = owned_of::<DaemonSet>(ctx, &ns, &uid, &selector, "DaemonSet").await?;
    let pools_declared = cluster
        .spec
        .storage
        .as_ref()
        .and_then(|s| s.node_local_pools.as_ref())
        .is_some_and(|p| !p.is_empty());
    // Nodes are read only for a cluster with pools: other installs may not read them.
    if pools_declared || !daemonsets.is_empty() {
        owned.extend(owned_of::<Pod>(ctx, &ns, &uid, &selector, "Pod").await?);
        for node in Api::<Node>::all(ctx.client.clone())
            .list(&ListParams::default())
            .await?
            .items
        {
            if !binding_keys(cluster, &node).is_empty() {
                owned.push(Child {
                    kind: "NodeBinding",
                    name: node.name_any(),
                    deleting: false,
                });
            }
        }
    }
    owned.extend(daemonsets);
    Ok(teardown::Observed { nodes, owned })
}

/// The activation labels and identity records of `cluster`'s pools on `node`.
fn binding_keys(cluster: &GarageCluster, node: &Node) -> Vec<String> {
    let ns = cluster.namespace().unwrap_or_default();
    let name = cluster.name_any();
    let uid = cluster.metadata.uid.clone().unwrap_or_default();
    node.labels()
        .keys()
        .chain(node.annotations().keys())
        .filter(|k| crate::desired::pool::is_binding_key(&ns, &name, &uid, k))
        .cloned()
        .collect()
}

fn child<K: Resource>(kind: &'static str, object: &K) -> Child {
    Child {
        kind,
        name: object.meta().name.clone().unwrap_or_default(),
        deleting: object.meta().deletion_timestamp.is_some(),
    }
}

/// Objects of kind `K` labelled for the cluster and controlled by exactly its UID; a
/// same-labelled object someone else controls is never touched.
async fn owned_of<K>(
    ctx: &Context,
    ns: &str,
    uid: &str,
    selector: &ListParams,
    kind: &'static str,
) -> Result<Vec<Child>, Error>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    Ok(Api::<K>::namespaced(ctx.client.clone(), ns)
        .list(selector)
        .await?
        .items
        .iter()
        .filter(|o| is_controlled_by(*o, uid))
        .map(|o| child(kind, o))
        .collect())
}

async fn delete_owned(
    ctx: &Context,
    cluster: &GarageCluster,
    ns: &str,
    c: &Child,
) -> Result<(), Error> {
    let client = ctx.client.clone();
    let m = &ctx.metrics;
    let dp = DeleteParams::background();
    let name = c.name.as_str();
    match c.kind {
        "Service" => {
            write::delete_if_present(&Api::<Service>::namespaced(client, ns), m, name, &dp).await?
        }
        "ConfigMap" => {
            write::delete_if_present(&Api::<ConfigMap>::namespaced(client, ns), m, name, &dp)
                .await?
        }
        "Secret" => {
            write::delete_if_present(&Api::<Secret>::namespaced(client, ns), m, name, &dp).await?
        }
        "DaemonSet" => {
            write::delete_if_present(&Api::<DaemonSet>::namespaced(client, ns), m, name, &dp)
                .await?
        }
        "Pod" => {
            write::delete_if_present(&Api::<Pod>::namespaced(client, ns), m, name, &dp).await?
        }
        "NetworkPolicy" => {
            write::delete_if_present(&Api::<NetworkPolicy>::namespaced(client, ns), m, name, &dp)
                .await?
        }
        "NodeBinding" => return clear_node_binding(ctx, cluster, name).await,
        _ => {
            write::delete_if_present(
                &Api::<PodDisruptionBudget>::namespaced(client, ns),
                m,
                name,
                &dp,
            )
            .await?
        }
    };
    Ok(())
}

/// Removes the labels and annotations that bind Node `name` to `cluster`'s pools; a Node
/// already gone holds none.
async fn clear_node_binding(
    ctx: &Context,
    cluster: &GarageCluster,
    name: &str,
) -> Result<(), Error> {
    let nodes = Api::<Node>::all(ctx.client.clone());
    let Some(node) = nodes.get_opt(name).await? else {
        return Ok(());
    };
    let cleared: serde_json::Map<String, serde_json::Value> = binding_keys(cluster, &node)
        .into_iter()
        .map(|k| (k, serde_json::Value::Null))
        .collect();
    ctx.metrics.wrote();
    let patch = serde_json::json!({"metadata": {"labels": cleared, "annotations": cleared}});
    match nodes
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
