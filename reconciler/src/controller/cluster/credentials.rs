//! Secrets the user names are copied into immutable Secrets the cluster controls, and only the
//! copies are mounted: kubelet can then never change bytes under a
//! running Garage, and a change of the user's Secret reaches pods only through the storage
//! rollout.
//!
//! - The RPC secret is pinned once (`C-rpc-secret-snapshot`). Garage nodes with different RPC
//!   secrets cannot talk to each other, so it cannot change one pod at a time: a later change
//!   of the source stops the cluster's reconciliation with a message to restore it; a deleted
//!   source changes nothing (the copy stays).
//! - The admin and metrics tokens are copied together under a name derived from their values
//!   (`C-credentials-<16 hex>`); the cluster's `static-credentials-secret` annotation names the
//!   current copy and `static-credentials-sources` the references it was made from: a new
//!   value or reference gets a new copy, the pod templates change and the rollout replaces
//!   pods one at a time. A copy goes once no pod mounts it.

use k8s_openapi::api::apps::v1::{DaemonSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, PodSpec, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::{annotation, label};

use crate::controller::garage_access::random_hex32;
use crate::controller::write::{self, ensure_immutable};
use crate::controller::{Context, Error};
use crate::desired::secrets::SecretSource;
use crate::desired::{Settings, is_controlled_by, secrets};
use crate::names;

/// What pinning did this pass.
#[derive(Debug, PartialEq, Eq)]
pub enum Pinned {
    /// The cluster object is as the pass read it.
    Unchanged,
    /// The cluster's annotations changed: the pass starts again from the new object.
    Annotated,
}

/// The value `source` names (its Secret's key), when the Secret exists and holds it.
pub(crate) async fn read_value(
    api: &Api<Secret>,
    source: &SecretSource,
) -> Result<Option<String>, Error> {
    Ok(api
        .get_opt(&source.name)
        .await?
        .and_then(|sec| value_of(&sec, &source.key)))
}

/// The trimmed-nonempty value under `key` of `secret`.
pub(crate) fn value_of(secret: &Secret, key: &str) -> Option<String> {
    secret
        .data
        .as_ref()?
        .get(key)
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        .filter(|v| !v.trim().is_empty())
}

/// Copies the user-named RPC secret and the admin and metrics tokens, and drops credentials
/// copies no pod mounts any more.
pub async fn pin(cluster: &GarageCluster, s: &Settings, ctx: &Context) -> Result<Pinned, Error> {
    let secrets_api: Api<Secret> = Api::namespaced(ctx.client.clone(), &s.namespace);
    let uid = s.uid.clone();
    let rpc_value = match secrets::rpc_secret_user_source(cluster) {
        Some(source) => pin_rpc(cluster, s, ctx, &secrets_api, &source, &uid).await?,
        None => {
            // The admin token copy is named with the RPC secret: the generated one is made
            // here, before any workload, so that the first workloads already mount the copy.
            let generated = secrets::rpc_secret(cluster, s, &random_hex32()?)?;
            let live =
                ensure_immutable(&secrets_api, &ctx.metrics, &generated, &uid, |_| true).await?;
            value_of(&live, crate::desired::config::RPC_SECRET_KEY)
        }
    };
    // The copy's name is keyed by the RPC secret; without it nothing can be named yet.
    match rpc_value {
        Some(rpc_value) => pin_copy(cluster, s, ctx, &rpc_value).await,
        None => Ok(Pinned::Unchanged),
    }
}

/// Copies the admin and metrics tokens `cluster` names into the copy keyed by `rpc_value`
/// (the RPC secret its pods run with), names it in the cluster's annotations, and drops
/// copies no pod mounts any more.
pub async fn pin_copy(
    cluster: &GarageCluster,
    s: &Settings,
    ctx: &Context,
    rpc_value: &str,
) -> Result<Pinned, Error> {
    let secrets_api: Api<Secret> = Api::namespaced(ctx.client.clone(), &s.namespace);
    let uid = s.uid.clone();
    let parts = crate::desired::credentials::parts(cluster);
    if parts.is_empty() {
        return Ok(Pinned::Unchanged);
    }
    let mut values = Vec::new();
    for part in parts {
        let Some(value) = secrets_api
            .get_opt(&part.source.name)
            .await?
            .and_then(|sec| value_of(&sec, &part.source.key))
        else {
            // A source that went away (or is not there yet) leaves the copy the pods run
            // with in place.
            return Ok(Pinned::Unchanged);
        };
        values.push((part, value.trim().to_owned()));
    }
    let credentials = &crate::desired::credentials::snapshot;
    let revision = crate::desired::credentials::revision(rpc_value.trim_end().as_bytes(), &values);
    let desired = credentials(cluster, s, &revision, &values)?;
    let name = desired.name_any();
    ensure_immutable(&secrets_api, &ctx.metrics, &desired, &uid, |live| {
        live.data == desired.data
    })
    .await?;
    prune(s, ctx, &secrets_api, &name, &uid).await?;
    let parts: Vec<_> = values.into_iter().map(|(p, _)| p).collect();
    let sources = crate::desired::credentials::sources_annotation(&parts);
    let annotations = cluster.annotations();
    if annotations.get(annotation::ANNOTATION_STATIC_CREDENTIALS_SECRET) == Some(&name)
        && annotations.get(annotation::ANNOTATION_STATIC_CREDENTIALS_SOURCES) == Some(&sources)
    {
        return Ok(Pinned::Unchanged);
    }
    let api: Api<GarageCluster> = Api::namespaced(ctx.client.clone(), &s.namespace);
    ctx.metrics.wrote();
    api.patch(
        &s.name,
        &PatchParams::default(),
        &Patch::Merge(json!({
            "metadata": {
                "resourceVersion": cluster.resource_version(),
                "annotations": {
                    annotation::ANNOTATION_STATIC_CREDENTIALS_SECRET: name,
                    annotation::ANNOTATION_STATIC_CREDENTIALS_REVISION: revision,
                    annotation::ANNOTATION_STATIC_CREDENTIALS_SOURCES: sources,
                },
            }
        })),
    )
    .await?;
    tracing::info!(cluster = %s.name, copy = %name, "credentials copy pinned; pods follow through the storage rollout");
    Ok(Pinned::Annotated)
}

/// The RPC secret copy: made once, then compared with the source at every pass. Returns the
/// value the pods run with.
async fn pin_rpc(
    cluster: &GarageCluster,
    s: &Settings,
    ctx: &Context,
    secrets_api: &Api<Secret>,
    source: &secrets::SecretSource,
    uid: &str,
) -> Result<Option<String>, Error> {
    let copy_name = names::rpc_secret_snapshot(&s.name);
    let source_value = secrets_api
        .get_opt(&source.name)
        .await?
        .and_then(|sec| value_of(&sec, &source.key));
    match secrets_api.get_opt(&copy_name).await? {
        Some(copy) => {
            if !is_controlled_by(&copy, uid) {
                return Err(Error::Foreign {
                    kind: "Secret",
                    name: copy_name,
                    owner: uid.to_owned(),
                });
            }
            let pinned = value_of(&copy, crate::desired::config::RPC_SECRET_KEY);
            if let (Some(now), Some(was)) = (&source_value, &pinned)
                && secrets::rpc_fingerprint(now) != secrets::rpc_fingerprint(was)
            {
                return Err(Error::Unsafe(format!(
                    "the RPC secret in Secret {} (key {}) changed after the cluster pinned it; Garage nodes with different RPC secrets cannot talk, so it cannot be changed one pod at a time: restore the original value (the pods keep running with the pinned copy {copy_name})",
                    source.name, source.key
                )));
            }
            Ok(pinned)
        }
        None => {
            let Some(value) = source_value else {
                // Nothing to copy yet; the pods wait for the copy to exist.
                return Ok(None);
            };
            let desired = secrets::rpc_secret_snapshot(cluster, s, &value, source)?;
            ensure_immutable(secrets_api, &ctx.metrics, &desired, uid, |live| {
                live.data == desired.data
            })
            .await?;
            Ok(Some(value.trim_end().to_ascii_lowercase()))
        }
    }
}

/// Deletes the admin token copies of this cluster that are neither `current` nor mounted by
/// any of its pods.
async fn prune(
    s: &Settings,
    ctx: &Context,
    secrets_api: &Api<Secret>,
    current: &str,
    uid: &str,
) -> Result<(), Error> {
    let prefix = format!("{}-credentials-", s.name);
    let copies: Vec<Secret> = secrets_api
        .list(&ListParams::default().labels(&format!("{}={}", label::LABEL_CLUSTER, s.name)))
        .await?
        .items
        .into_iter()
        .filter(|sec| {
            let n = sec.name_any();
            n.starts_with(&prefix) && n != current && is_controlled_by(sec, uid)
        })
        .collect();
    if copies.is_empty() {
        return Ok(());
    }
    // Pods, and the templates that may still create one, by their volumes: every one of the
    // namespace, since an edge gateway's pods mount the copy of the storage cluster they join.
    let every = ListParams::default();
    let mut specs: Vec<PodSpec> = Api::<Pod>::namespaced(ctx.client.clone(), &s.namespace)
        .list(&every)
        .await?
        .items
        .into_iter()
        .filter_map(|p| p.spec)
        .collect();
    specs.extend(
        Api::<StatefulSet>::namespaced(ctx.client.clone(), &s.namespace)
            .list(&every)
            .await?
            .items
            .into_iter()
            .filter_map(|w| w.spec?.template.spec),
    );
    specs.extend(
        Api::<DaemonSet>::namespaced(ctx.client.clone(), &s.namespace)
            .list(&every)
            .await?
            .items
            .into_iter()
            .filter_map(|w| w.spec?.template.spec),
    );
    for copy in copies {
        let name = copy.name_any();
        let mounted = specs.iter().any(|sp| {
            sp.volumes.iter().flatten().any(|v| {
                v.secret.as_ref().and_then(|x| x.secret_name.as_deref()) == Some(name.as_str())
            })
        });
        if !mounted {
            let params = DeleteParams::default();
            if write::delete_if_present(secrets_api, &ctx.metrics, &name, &params).await? {
                tracing::info!(secret = %name, "admin token copy no pod mounts deleted");
            }
        }
    }
    Ok(())
}
