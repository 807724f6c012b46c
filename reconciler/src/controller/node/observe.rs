//! Reading everything one GarageNode pass decides from ([`Observed`]): its parent, its
//! workload, its pod and the identity that exact pod reports. Nothing here writes.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, PersistentVolumeClaim, Pod, Secret, Service};
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::keys::label;

use crate::controller::garage_access::{admin_token, pod_admin_token, pod_client, running_ip};
use crate::controller::ownership::{self, Resolved};
use crate::controller::{Context, Error};
use crate::desired::{Settings, is_controlled_by, nodes, secrets};
use crate::names;
use decide::node::observed::{Discovered, Observed};
use decide::pools::membership;
use decide::zone::HostZone;

/// The node's parent GarageCluster through the ownership gate. A parent in another
/// namespace is never this node's (admission keeps parents in the node's namespace).
pub async fn parent(node: &GarageNode, ctx: &Context) -> Result<Resolved, Error> {
    let ns = node.namespace().unwrap_or_default();
    if node.parent_namespace() != ns {
        return Ok(Resolved::Absent);
    }
    ownership::resolve(ctx, &ns, &node.spec.cluster_ref.name).await
}

/// Reads everything [`decide::node::decision::decide`] needs, `parent` being what [`parent`] found managed.
pub async fn observe(
    node: Arc<GarageNode>,
    parent: Option<GarageCluster>,
    ctx: &Context,
) -> Result<Observed, Error> {
    let ns = node.namespace().unwrap_or_default();
    let name = node.name_any();
    let mut settings = parent.as_ref().map(|c| {
        Settings::from_cluster(c).map(|mut s| {
            s.use_default_image(c, ctx.config.default_garage_image.as_deref());
            s
        })
    });
    read_ingress(&mut settings, &node, &ns, ctx).await?;
    let mut observed = Observed {
        node: node.clone(),
        parent,
        settings,
        config_published: false,
        statefulset: None,
        service_exists: false,
        pod: None,
        discovered: None,
        host: None,
        claims: Vec::new(),
        expansions: Vec::new(),
        zone_host: decide::zone::HostZone::NotRead,
    };
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    if let Ok(nodes::NodeShape::Pool { pool, node: host }) = nodes::shape(&node) {
        // A pool member's pod is the pool pod the cluster released for exactly this member.
        let selector = format!("{}={name}", label::LABEL_NODE);
        let mut candidates: Vec<Pod> = pods
            .list(&ListParams::default().labels(&selector))
            .await?
            .items
            .into_iter()
            .filter(|p| membership::runs_on(p, &pool, &host))
            .collect();
        candidates.sort_by_key(|p| p.metadata.deletion_timestamp.is_some());
        observed.pod = candidates.into_iter().next();
        observed.config_published = true;
        // Its Node matters when the member leaves or is acknowledged lost (fenced).
        let acknowledged = node
            .annotations()
            .contains_key(shared_types::keys::annotation::ANNOTATION_ACKNOWLEDGE_LOST_SOURCE);
        if node.metadata.deletion_timestamp.is_some() || acknowledged {
            observed.host = Api::<Node>::all(ctx.client.clone()).get_opt(&host).await?;
        }
        if node.metadata.deletion_timestamp.is_some() {
            return Ok(observed);
        }
        return discover_identity(observed, &pods, ctx).await;
    }
    let node_uid = node.metadata.uid.clone().unwrap_or_default();
    observed.statefulset = Api::<StatefulSet>::namespaced(ctx.client.clone(), &ns)
        .get_opt(&name)
        .await?
        .filter(|s| is_controlled_by(s, &node_uid));
    observed.service_exists = Api::<Service>::namespaced(ctx.client.clone(), &ns)
        .get_opt(&names::node_rpc_service(&name))
        .await?
        .is_some_and(|s| is_controlled_by(&s, &node_uid));
    if let Some(sts_uid) = observed
        .statefulset
        .as_ref()
        .and_then(|s| s.metadata.uid.clone())
    {
        observed.pod = pods
            .get_opt(&names::node_pod(&name))
            .await?
            .filter(|p| is_controlled_by(p, &sts_uid));
    }
    let (Some(cluster), Some(Ok(s))) = (&observed.parent, &observed.settings) else {
        return Ok(observed);
    };
    // Its pod still running with reserved variables of a released Go operator: the
    // StatefulSet is not rewritten (a restart would start the pod without them) until the
    // cluster has settled them; the node waits, as for any cluster that cannot be reconciled.
    if let Some(pod) = observed
        .pod
        .as_ref()
        .filter(|_| node.metadata.deletion_timestamp.is_none())
        && let Some(e) =
            crate::controller::legacy_env::refusal(cluster, std::slice::from_ref(pod), ctx).await?
    {
        observed.settings = Some(Err(e));
        return Ok(observed);
    }
    let revision = decide::desired::node_config::revision_for(cluster, s, &node)?;
    let cluster_uid = cluster.metadata.uid.clone().unwrap_or_default();
    observed.config_published = Api::<ConfigMap>::namespaced(ctx.client.clone(), &ns)
        .get_opt(&revision.name)
        .await?
        .is_some_and(|cm| {
            is_controlled_by(&cm, &cluster_uid) && cm.data == revision.config_map.data
        });
    // A deleting node's claims are read too: their reservations are released as it goes.
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &ns);
    for claim in crate::desired::statefulset::managed_claims(&node) {
        let pvc = claims.get_opt(&claim.name).await?;
        observed.expansions.push(decide::node::expansion::Sized {
            name: claim.name.clone(),
            want: claim.size,
            pvc: pvc.clone(),
            refused: ctx.expansion_refused(&ns, &claim.name),
        });
        observed.claims.push(decide::node::volumes::Claim {
            refused: ctx.volume_class_refused(&ns, &claim.name),
            name: claim.name,
            desired: claim.class,
            pvc,
        });
    }
    if node.metadata.deletion_timestamp.is_some() {
        return Ok(observed);
    }
    discover_identity(observed, &pods, ctx).await
}

/// The address a publicEndpoint gives a member is its Service's ingress, read as the cluster
/// controller reads it; only when the cluster or the node declares one.
async fn read_ingress(
    settings: &mut Option<Result<Settings, decide::desired::DesiredError>>,
    node: &GarageNode,
    ns: &str,
    ctx: &Context,
) -> Result<(), Error> {
    let Some(Ok(s)) = settings.as_mut() else {
        return Ok(());
    };
    if s.public_endpoint.is_none() && node.spec.public_endpoint.is_none() {
        return Ok(());
    }
    let selector = crate::desired::labels::selector_string(
        &crate::desired::labels::headless_selector(&s.name),
    );
    let services = Api::<Service>::namespaced(ctx.client.clone(), ns)
        .list(&ListParams::default().labels(&selector))
        .await?
        .items;
    s.ingress = decide::desired::public_endpoint::ingress(&services);
    Ok(())
}

/// Asks the observed pod for its identity, with the parent's admin token.
async fn discover_identity(
    mut observed: Observed,
    pods: &Api<Pod>,
    ctx: &Context,
) -> Result<Observed, Error> {
    let (Some(cluster), Some(Ok(s))) = (&observed.parent, &observed.settings) else {
        return Ok(observed);
    };
    observed.zone_host = host_zone(&observed, s, ctx).await?;
    let ns = observed.node.namespace().unwrap_or_default();
    let source = secrets::admin_token_source(cluster, s);
    let secrets_api = Api::<Secret>::namespaced(ctx.client.clone(), &ns);
    // The token the pod runs with, which differs from the desired one while a changed token
    // rolls out.
    let own = match &observed.pod {
        Some(pod) => pod_admin_token(pod, &secrets_api, &mut Default::default()).await?,
        None => None,
    };
    let token = match own {
        Some(t) => Some(t),
        None => admin_token(&secrets_api, &source).await?,
    };
    if let (Some(pod), Some(token)) = (&observed.pod, token)
        && let Some(ip) = running_ip(pod)
    {
        observed.discovered = discover(pods, pod, &ip, s.admin_port, &token, ctx).await;
    }
    Ok(observed)
}

/// The `zoneFrom` label of the Node the observed pod runs on, read only for a member that
/// takes its zone from one. Only the Node's metadata is fetched; a refusal is reported by the
/// decision, any other failure fails the pass.
async fn host_zone(observed: &Observed, s: &Settings, ctx: &Context) -> Result<HostZone, Error> {
    let Some(key) = decide::zone::label_key(&observed.node, Some(s)) else {
        return Ok(HostZone::NotRead);
    };
    let Some(host) = observed
        .pod
        .as_ref()
        .and_then(|p| p.spec.as_ref())
        .and_then(|spec| spec.node_name.clone())
    else {
        return Ok(HostZone::Unknown);
    };
    Ok(
        match Api::<Node>::all(ctx.client.clone())
            .get_metadata_opt(&host)
            .await
        {
            Ok(Some(node)) => HostZone::Read(node.labels().get(key).cloned()),
            Ok(None) => HostZone::Unknown,
            Err(kube::Error::Api(e)) if e.code == 403 => HostZone::Forbidden(e.message),
            Err(e) => return Err(e.into()),
        },
    )
}

/// The node ID of `pod`, proven to belong to that exact incarnation: the pod is re-read after
/// the call and must still have the same UID and IP.
async fn discover(
    pods: &Api<Pod>,
    pod: &Pod,
    ip: &str,
    port: u16,
    token: &crate::garage::AdminToken,
    ctx: &Context,
) -> Option<Discovered> {
    let client = pod_client(ip, port, token, ctx.config.admin_timeout).ok()?;
    let id = match client.local_node_id().await {
        Ok(id) => id,
        Err(e) => {
            tracing::debug!(pod = %pod.name_any(), error = %e, "node identity not readable yet");
            return None;
        }
    };
    let uid = pod.metadata.uid.clone()?;
    let again = pods.get_opt(&pod.name_any()).await.ok().flatten()?;
    (again.metadata.uid.as_deref() == Some(uid.as_str())
        && running_ip(&again).as_deref() == Some(ip))
    .then(|| Discovered {
        id,
        pod_uid: uid,
        ip: ip.to_owned(),
    })
}
