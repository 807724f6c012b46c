//! The reads behind [`decide::cluster::legacy_env`]: which pods get their RPC secret or
//! configuration file from the environment, and whether each RPC secret they get is byte for
//! byte the one the operator mounts. Both controllers ask: the cluster before it renders or
//! replaces anything, a node before it rewrites its StatefulSet.
//!
//! A pod read its variable when it started; what is compared is the Secret key it names as it
//! is now (a literal is in the pod itself). A Secret changed since that start would pass
//! although the process runs with the old bytes; nothing outside the process can tell.

use std::collections::{BTreeMap, BTreeSet};

use decide::cluster::legacy_env::{self, Carrier, Source};
use decide::desired::DesiredError;
use decide::desired::config::RPC_SECRET_KEY;
use decide::desired::secrets::rpc_secret_user_source;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::{Api, ResourceExt};
use shared_types::garage_cluster::v1beta2::GarageCluster;

use super::{Context, Error};

/// The refusal while `pods` (of `cluster`) carry reserved variables not yet settled; `None`
/// when they carry none or every one is settled.
pub async fn refusal(
    cluster: &GarageCluster,
    pods: &[Pod],
    ctx: &Context,
) -> Result<Option<DesiredError>, Error> {
    let carriers = legacy_env::carriers(pods);
    if carriers.is_empty() {
        return Ok(None);
    }
    let proven = if legacy_env::wants_proof(&carriers) {
        proven(cluster, pods, &carriers, ctx).await?
    } else {
        BTreeSet::new()
    };
    Ok(legacy_env::refused(cluster, &carriers, &proven))
}

/// The `(pod, variable)` pairs whose value is byte for byte the RPC secret the operator
/// mounts: the generated Secret, or with `spec.network.rpcSecretRef` the Secret it names and,
/// once made, its immutable copy (both must hold the same). Nothing is proven while the
/// operator's Secret is missing.
async fn proven(
    cluster: &GarageCluster,
    pods: &[Pod],
    carriers: &[Carrier],
    ctx: &Context,
) -> Result<BTreeSet<(String, String)>, Error> {
    let ns = cluster.namespace().unwrap_or_default();
    let name = cluster.name_any();
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let mut cache = BTreeMap::new();
    let mut proven = BTreeSet::new();
    let wanted = match rpc_secret_user_source(cluster) {
        Some(user) => {
            let named = read(&secrets, &mut cache, &user.name, &user.key).await?;
            let snapshot = decide::names::rpc_secret_snapshot(&name);
            let copy = read(&secrets, &mut cache, &snapshot, RPC_SECRET_KEY).await?;
            named.filter(|v| copy.as_ref().is_none_or(|c| c == v))
        }
        None => {
            let generated = decide::names::rpc_secret(&name);
            read(&secrets, &mut cache, &generated, RPC_SECRET_KEY).await?
        }
    };
    let Some(wanted) = wanted else {
        return Ok(proven);
    };
    for c in carriers.iter().filter(|c| c.comparable()) {
        let value = match &c.source {
            Source::Literal => literal(pods, c),
            Source::SecretKey { name, key } => read(&secrets, &mut cache, name, key).await?,
            Source::Unreadable => None,
        };
        if value.is_some_and(|v| v == wanted) {
            proven.insert((c.pod.clone(), c.name.clone()));
        }
    }
    Ok(proven)
}

/// The literal value `c` names in its pod's Garage container, trimmed as Garage trims it.
fn literal(pods: &[Pod], c: &Carrier) -> Option<String> {
    let pod = pods.iter().find(|p| p.name_any() == c.pod)?;
    pod.spec
        .as_ref()?
        .containers
        .iter()
        .filter(|k| k.name == decide::desired::statefulset::CONTAINER)
        .flat_map(|k| k.env.iter().flatten())
        .find(|e| e.name == c.name)
        .map(|e| e.value.as_deref().unwrap_or_default().trim().to_owned())
}

/// One key of one Secret, trimmed; each Secret read once per pass.
async fn read(
    secrets: &Api<Secret>,
    cache: &mut BTreeMap<String, Option<Secret>>,
    name: &str,
    key: &str,
) -> Result<Option<String>, Error> {
    if !cache.contains_key(name) {
        let secret = secrets.get_opt(name).await?;
        cache.insert(name.to_owned(), secret);
    }
    Ok(cache
        .get(name)
        .and_then(Option::as_ref)
        .and_then(|s| s.data.as_ref())
        .and_then(|d| d.get(key))
        .map(|b| String::from_utf8_lossy(&b.0).trim().to_owned())
        .filter(|v| !v.is_empty()))
}
