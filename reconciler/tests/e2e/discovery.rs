//! Site F: Garage's own Kubernetes peer discovery (`spec.discovery.kubernetes`).
//!
//! The cluster is created with discovery on and a ServiceAccount allowed what Garage's
//! discovery calls (its CRD, and its `garagenodes.deuxfleurs.fr` objects in the namespace).
//! Once it is Ready every member has published itself there: an object named by its node ID,
//! labelled with the cluster's name as service, holding its pod's address; that is Garage
//! reading the `[kubernetes_discovery]` section the operator rendered, with the token the
//! operator mounted.

use std::time::{Duration, Instant};

use anyhow::ensure;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::{Api, Client};
use localcluster::wait_until as wait;
use serde_json::json;

use crate::support::node_ids;
use crate::{NAME, World, ns};

/// The ServiceAccount the Garage pods run as.
pub(crate) const ACCOUNT: &str = "garage-discovery";

/// The ServiceAccount and what Garage's discovery needs of the API.
pub(crate) async fn grant(client: &Client) -> anyhow::Result<()> {
    let pp = PostParams::default();
    let name = format!("{}-{ACCOUNT}", ns());
    Api::<ServiceAccount>::namespaced(client.clone(), ns())
        .create(
            &pp,
            &serde_json::from_value(json!({"metadata": {"name": ACCOUNT}}))?,
        )
        .await?;
    Api::<Role>::namespaced(client.clone(), ns())
        .create(
            &pp,
            &serde_json::from_value(json!({
                "metadata": {"name": ACCOUNT},
                "rules": [{"apiGroups": ["deuxfleurs.fr"], "resources": ["garagenodes"],
                           "verbs": ["get", "list", "create", "update"]}],
            }))?,
        )
        .await?;
    Api::<RoleBinding>::namespaced(client.clone(), ns())
        .create(
            &pp,
            &serde_json::from_value(json!({
                "metadata": {"name": ACCOUNT},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ACCOUNT},
                "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": ns()}],
            }))?,
        )
        .await?;
    // Garage applies its own CRD (a server-side apply: a patch, authorized as a create too
    // while the CRD does not exist) unless told to skip it; the rule names that one CRD only.
    Api::<ClusterRole>::all(client.clone())
        .create(
            &pp,
            &serde_json::from_value(json!({
                "metadata": {"name": name},
                "rules": [{"apiGroups": ["apiextensions.k8s.io"],
                           "resources": ["customresourcedefinitions"],
                           "resourceNames": ["garagenodes.deuxfleurs.fr"],
                           "verbs": ["create", "patch"]}],
            }))?,
        )
        .await?;
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(
            &pp,
            &serde_json::from_value(json!({
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": ns()}],
            }))?,
        )
        .await?;
    Ok(())
}

/// Every member of the Ready cluster has published itself for its peers.
pub(crate) async fn published(w: &World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let ids = node_ids(&w.gns).await?;
    ensure!(!ids.is_empty(), "no member has a node ID");
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("deuxfleurs.fr", "v1", "GarageNode"),
        "garagenodes",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(w.client.clone(), ns(), &resource);
    let pods = &w.pods;
    wait(
        "every member published through Kubernetes discovery",
        Duration::from_secs(150),
        || async {
            let listed = api
                .list(
                    &ListParams::default().labels(&format!("garage.deuxfleurs.fr/service={NAME}")),
                )
                .await?
                .items;
            for (member, id) in &ids {
                let Some(o) = listed
                    .iter()
                    .find(|o| o.metadata.name.as_deref() == Some(id.as_str()))
                else {
                    anyhow::bail!("{member} ({id}) has not published itself");
                };
                let pod = pods.get(&format!("{member}-0")).await?;
                let ip = pod.status.and_then(|s| s.pod_ip).unwrap_or_default();
                ensure!(
                    o.data["spec"]["address"] == ip.as_str(),
                    "{member} published {} where its pod runs at {ip}",
                    o.data["spec"]["address"]
                );
            }
            Ok(true)
        },
    )
    .await?;
    println!(
        "discovery: every member published itself for Garage's Kubernetes discovery ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
