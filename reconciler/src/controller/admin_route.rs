//! How the Admin API of a GarageCluster is reached by what manages buckets and keys through
//! it: one of its Ready storage pods at the pod's own IP, or, for a management handle
//! ([`decide::cluster::handle`]), the URL it names or the cluster its `clusterRef` leads to
//! (a chain of handles is followed, up to [`handle::MAX_CHAIN`] links).

use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::label;

use super::garage_access::{
    admin_token, client_at, is_ready, pod_admin_token, pod_client, running_ip,
};
use super::ownership::{self, Resolved};
use super::{Context, Error};
use crate::desired::secrets::{self, SecretSource};
use crate::desired::{DesiredError, Settings};
use crate::garage::AdminClient;
use decide::cluster::handle::{self, AdminSource};
use decide::garage_objects::key::secret::Endpoint;

/// A way to the Admin API, with what dependents render from the cluster that answers.
pub struct Route {
    /// The client.
    pub admin: AdminClient,
    /// The S3 endpoint a key's Secret names; without an address behind a handle's URL,
    /// whose S3 endpoint the operator cannot know.
    pub s3: Endpoint,
    /// The website endpoint a bucket's status names; none behind a handle's URL.
    pub web_endpoint: Option<String>,
    /// The handle's Admin API URL, when the route ends at one.
    pub admin_url: Option<String>,
    /// The RPC secret a key made by the Go operator derives from, when one is known.
    pub rpc_secret: Option<SecretSource>,
}

/// Why there is no route now.
#[derive(Debug)]
pub enum Blocked {
    /// A spec on the way says nothing usable.
    Invalid(DesiredError),
    /// A bearer cannot be read.
    TokenMissing(String),
    /// A cluster on the way does not exist, is another install's, is being deleted, or has no
    /// Ready storage pod.
    NotReady(String),
}

/// The route to `cluster`'s Admin API. `for_cleanup` accepts clusters being deleted along a
/// handle's chain, as cleanup accepts the one it starts from.
pub async fn route(
    ctx: &Context,
    cluster: &GarageCluster,
    for_cleanup: bool,
) -> Result<Result<Route, Blocked>, Error> {
    let mut current = cluster.clone();
    for _ in 0..=handle::MAX_CHAIN {
        if !handle::is_handle(&current) {
            return through_pods(ctx, &current).await;
        }
        let ns = current.namespace().unwrap_or_default();
        let name = current.name_any();
        match handle::admin_source(&current) {
            Err(e) => return Ok(Err(Blocked::Invalid(e))),
            Ok(AdminSource::Endpoint { url, token }) => {
                return through_url(ctx, &current, url, &token).await;
            }
            Ok(AdminSource::Cluster(next)) => {
                let why = |what: &str| {
                    Blocked::NotReady(format!(
                        "GarageCluster {ns}/{next}, which spec.connectTo.clusterRef of {ns}/{name} names, {what}"
                    ))
                };
                current = match ownership::resolve(ctx, &ns, &next).await? {
                    Resolved::Absent => return Ok(Err(why("does not exist"))),
                    Resolved::HandsOff(_) => {
                        return Ok(Err(why("is managed by another install")));
                    }
                    Resolved::Managed(c) if c.metadata.deletion_timestamp.is_some() => {
                        if !for_cleanup {
                            return Ok(Err(why("is being deleted")));
                        }
                        *c
                    }
                    Resolved::Managed(c) => *c,
                };
                // Every handle further down the chain must have proven its own way first,
                // as the first one has for its dependents.
                if handle::is_handle(&current)
                    && !for_cleanup
                    && let Some(waits) = handle::waits(&current)
                {
                    return Ok(Err(why(&format!(
                        "is a management handle that is not Ready yet: {waits}"
                    ))));
                }
            }
        }
    }
    Ok(Err(Blocked::Invalid(DesiredError::Invalid {
        field: "spec.connectTo.clusterRef",
        message: format!(
            "more than {} management handles in a row (a loop?); point it at the cluster that runs Garage",
            handle::MAX_CHAIN
        ),
    })))
}

/// The route through a handle's URL (or a remote edge's), with the bearer its Secret holds.
pub async fn through_url(
    ctx: &Context,
    handle: &GarageCluster,
    url: String,
    token: &SecretSource,
) -> Result<Result<Route, Blocked>, Error> {
    let ns = handle.namespace().unwrap_or_default();
    let secrets_api = Api::<Secret>::namespaced(ctx.client.clone(), &ns);
    let Some(bearer) = admin_token(&secrets_api, token).await? else {
        return Ok(Err(Blocked::TokenMissing(format!(
            "key {} of Secret {ns}/{}, which spec.connectTo.adminTokenSecretRef of {ns}/{} names, is not readable or is empty",
            token.key,
            token.name,
            handle.name_any()
        ))));
    };
    let Ok(admin) = client_at(&url, &bearer, ctx.config.admin_timeout) else {
        // The URL was checked; what remains is a bearer no HTTP header can carry.
        return Ok(Err(Blocked::TokenMissing(format!(
            "key {} of Secret {ns}/{} cannot be sent as a bearer (it holds characters an HTTP header cannot)",
            token.key, token.name
        ))));
    };
    // Keys the Go operator made on a handle derive from the remote RPC secret it names.
    let spec = &handle.spec;
    let rpc = spec
        .connect_to
        .as_ref()
        .and_then(|t| t.rpc_secret_ref.as_ref())
        .or_else(|| spec.network.as_ref()?.rpc_secret_ref.as_ref());
    Ok(Ok(Route {
        admin,
        s3: decide::garage_objects::key::plan::handle_endpoint(handle),
        web_endpoint: None,
        admin_url: Some(url),
        rpc_secret: secrets::user_rpc_source(rpc),
    }))
}

/// The route through one of `cluster`'s Ready storage pods, with the token that pod runs.
async fn through_pods(
    ctx: &Context,
    cluster: &GarageCluster,
) -> Result<Result<Route, Blocked>, Error> {
    let ns = cluster.namespace().unwrap_or_default();
    let name = cluster.name_any();
    let settings = match Settings::from_cluster(cluster) {
        Ok(s) => s,
        Err(e) => return Ok(Err(Blocked::Invalid(e))),
    };
    let secrets_api = Api::<Secret>::namespaced(ctx.client.clone(), &ns);
    let source = secrets::admin_token_source(cluster, &settings);
    let Some(token) = admin_token(&secrets_api, &source).await? else {
        return Ok(Err(Blocked::TokenMissing(format!(
            "the admin token Secret {} of GarageCluster {ns}/{name} is not readable yet",
            source.name
        ))));
    };
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), &ns)
        .list(&ListParams::default().labels(&format!(
            "{}={name},{}={}",
            label::LABEL_CLUSTER,
            label::LABEL_TIER,
            label::value::TIER_STORAGE
        )))
        .await?
        .items;
    let mut ready: Vec<&Pod> = pods.iter().filter(|p| is_ready(p)).collect();
    // The same pod each pass while it is Ready, so that reads and writes see one view.
    ready.sort_by_key(|p| p.name_any());
    let Some((pod, ip)) = ready.iter().find_map(|p| running_ip(p).map(|ip| (*p, ip))) else {
        return Ok(Err(Blocked::NotReady(format!(
            "GarageCluster {ns}/{name} has no Ready storage pod yet"
        ))));
    };
    // The pod's own token: it differs from the desired one while a changed token rolls out.
    let token = pod_admin_token(pod, &secrets_api, &mut Default::default())
        .await?
        .unwrap_or(token);
    let admin = pod_client(&ip, settings.admin_port, &token, ctx.config.admin_timeout)?;
    Ok(Ok(Route {
        admin,
        s3: decide::garage_objects::key::plan::endpoint(cluster, &settings),
        web_endpoint: Some(decide::garage_objects::bucket::status::web_endpoint(
            &settings,
        )),
        admin_url: None,
        rpc_secret: Some(secrets::rpc_secret_source(cluster, &settings)),
    }))
}
