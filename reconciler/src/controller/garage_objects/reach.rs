//! Reaching the Garage cluster a GarageBucket, GarageKey or GarageAdminToken names: the
//! reference itself (a cross-namespace one needs a GarageReferenceGrant, checked again at
//! every pass), the cluster object (only one this install manages: see
//! [`crate::controller::ownership`]), and an Admin API client ([`admin_route`]): one of its
//! Ready storage pods', or, for a management handle that has proven its Admin API, the one
//! the handle leads to.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::ListParams;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use shared_types::common::ClusterReference;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_reference_grant::{
    GarageReferenceGrant, GrantFromKind, GrantToKind, Reference,
};

use crate::controller::admin_route::{self, Blocked};
use crate::controller::ownership::{self, Resolved};
use crate::controller::{Context, Error};
use crate::desired::secrets::SecretSource;
use crate::garage::AdminClient;
use decide::cluster::handle;
use decide::garage_objects::key::secret::Endpoint;
use decide::garage_objects::reach::target_namespace;

/// Where a reference leads.
pub enum Reach {
    /// The cluster answers.
    Ready(Box<Target>),
    /// The cluster object does not exist (or never did): nothing in Garage can be changed.
    Gone,
    /// The cluster exists but this install does not manage it, or no install has claimed it
    /// yet ([`crate::controller::ownership`]): the pass writes nothing, not even its own
    /// object's status or finalizer, and ends with the action.
    HandsOff(Action),
    /// Not usable now; the message says why and what to do.
    Waiting {
        /// Condition reason.
        reason: &'static str,
        /// Condition message.
        message: String,
    },
}

/// A reachable cluster.
pub struct Target {
    /// The GarageCluster the reference names (a management handle, or the cluster itself).
    pub cluster: GarageCluster,
    /// A client of its Admin API: one Ready storage pod's, or the one a handle leads to.
    pub admin: AdminClient,
    /// The S3 endpoint a key's Secret names (its address only when the operator knows it).
    pub s3: Endpoint,
    /// The website endpoint a bucket's status names, when the operator knows it.
    pub web_endpoint: Option<String>,
    /// The RPC secret keys made by the Go operator derive from, when one is known.
    pub rpc_secret: Option<SecretSource>,
    /// False when the reference crosses namespaces without a grant; only cleanup reaches a
    /// cluster that way, and it must prove what it deletes is its own.
    pub granted: bool,
}

impl Target {
    /// The referenced cluster's name.
    pub fn name(&self) -> String {
        self.cluster.name_any()
    }

    /// The referenced cluster's namespace.
    pub fn namespace(&self) -> String {
        self.cluster.namespace().unwrap_or_default()
    }

    /// The referenced cluster's UID.
    pub fn uid(&self) -> String {
        self.cluster.uid().unwrap_or_default()
    }
}

/// Every GarageReferenceGrant in `ns`, and the labels of `from_ns` when some grant needs them
/// (`None` when they cannot be read: selector grants then admit nothing).
pub async fn grants_into(
    ctx: &Context,
    ns: &str,
    from_ns: &str,
) -> Result<(Vec<GarageReferenceGrant>, Option<BTreeMap<String, String>>), Error> {
    let grants = Api::<GarageReferenceGrant>::namespaced(ctx.client.clone(), ns)
        .list(&ListParams::default())
        .await?
        .items;
    let labels = if grants
        .iter()
        .any(GarageReferenceGrant::reads_namespace_labels)
    {
        match Api::<Namespace>::all(ctx.client.clone())
            .get_opt(from_ns)
            .await
        {
            Ok(n) => n.map(|n| n.labels().clone()),
            // A namespace-scoped install may not read Namespaces: fail closed.
            Err(_) => None,
        }
    } else {
        None
    };
    Ok((grants, labels))
}

/// True when a reference from `from_ns` to `to_kind` `to_name` in `to_ns` is allowed:
/// always within one namespace, else only through a grant in `to_ns`.
pub async fn allowed(
    ctx: &Context,
    from_kind: GrantFromKind,
    from_ns: &str,
    to_kind: GrantToKind,
    to_ns: &str,
    to_name: &str,
) -> Result<bool, Error> {
    if from_ns == to_ns {
        return Ok(true);
    }
    let (grants, labels) = grants_into(ctx, to_ns, from_ns).await?;
    let reference = Reference {
        from_kind,
        from_namespace: from_ns,
        to_kind,
        to_name,
    };
    Ok(grants
        .iter()
        .any(|g| g.permits(&reference, labels.as_ref())))
}

/// Follows `reference` from an object of `from_kind` in `from_ns`. `for_cleanup` accepts a
/// cluster that is being deleted (a finalizer still has to clean up in Garage), and one whose
/// grant has gone ([`Target::granted`] says so).
pub async fn reach(
    ctx: &Context,
    from_kind: GrantFromKind,
    from_ns: &str,
    reference: &ClusterReference,
    for_cleanup: bool,
) -> Result<Reach, Error> {
    use shared_types::conditions::reason;
    let ns = target_namespace(from_ns, reference.namespace.as_deref());
    if reference.kube_config_secret_ref.is_some() {
        return Ok(Reach::Waiting {
            reason: reason::REASON_UNSUPPORTED,
            message: "spec.clusterRef.kubeConfigSecretRef (a cluster in another Kubernetes cluster) is not supported; reference a GarageCluster of this Kubernetes cluster".into(),
        });
    }
    let granted = allowed(
        ctx,
        from_kind,
        from_ns,
        GrantToKind::GarageCluster,
        ns,
        &reference.name,
    )
    .await?;
    if !granted && !for_cleanup {
        return Ok(Reach::Waiting {
            reason: reason::REASON_VALIDATION_FAILED,
            message: format!(
                "spec.clusterRef points at GarageCluster {ns}/{} but no GarageReferenceGrant in namespace {ns} allows {from_kind:?} objects from namespace {from_ns}; create one there",
                reference.name
            ),
        });
    }
    let cluster = match ownership::resolve(ctx, ns, &reference.name).await? {
        Resolved::Absent => return Ok(Reach::Gone),
        Resolved::HandsOff(action) => return Ok(Reach::HandsOff(action)),
        Resolved::Managed(cluster) => *cluster,
    };
    if cluster.metadata.deletion_timestamp.is_some() && !for_cleanup {
        return Ok(Reach::Waiting {
            reason: reason::REASON_CLUSTER_DELETING,
            message: format!("GarageCluster {ns}/{} is being deleted", reference.name),
        });
    }
    if handle::is_handle(&cluster)
        && !for_cleanup
        && let Some(why) = handle::waits(&cluster)
    {
        return Ok(Reach::Waiting {
            reason: reason::REASON_CLUSTER_NOT_READY,
            message: format!(
                "GarageCluster {ns}/{} is a management handle that is not Ready yet: {why}",
                reference.name
            ),
        });
    }
    let route = match admin_route::route(ctx, &cluster, for_cleanup).await? {
        Ok(route) => route,
        Err(blocked) => {
            let (reason, message) = match blocked {
                Blocked::Invalid(e) => (e.reported_as().0, e.to_string()),
                Blocked::TokenMissing(m) => (reason::REASON_ADMIN_TOKEN_MISSING, m),
                Blocked::NotReady(m) => (reason::REASON_CLUSTER_NOT_READY, m),
            };
            return Ok(Reach::Waiting { reason, message });
        }
    };
    Ok(Reach::Ready(Box::new(Target {
        cluster,
        admin: route.admin,
        s3: route.s3,
        web_endpoint: route.web_endpoint,
        rpc_secret: route.rpc_secret,
        granted,
    })))
}

/// Where a deleted object's cleanup leads, once a cluster another install manages is ruled
/// out ([`Reach::for_cleanup`]).
pub enum Cleaning {
    /// The cluster answers.
    Reached(Box<Target>),
    /// The cluster object does not exist.
    Gone,
    /// It cannot be reached now.
    Unreachable {
        /// Condition reason.
        reason: &'static str,
        /// Why.
        message: String,
    },
}

impl Cleaning {
    /// The cluster, when it answers.
    pub fn target(&self) -> Option<&Target> {
        match self {
            Cleaning::Reached(t) => Some(t),
            _ => None,
        }
    }
}

impl Reach {
    /// What cleanup can do here; `Err` with the action for a cluster another install manages:
    /// that install finalizes the object, and removing the finalizer here would let it go
    /// before that install has cleaned up in Garage.
    pub fn for_cleanup(self) -> Result<Cleaning, Action> {
        match self {
            Reach::Ready(t) => Ok(Cleaning::Reached(t)),
            Reach::Gone => Ok(Cleaning::Gone),
            Reach::HandsOff(action) => Err(action),
            Reach::Waiting { reason, message } => Ok(Cleaning::Unreachable { reason, message }),
        }
    }
}
