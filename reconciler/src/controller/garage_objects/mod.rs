//! The controllers of the objects that live inside a Garage cluster: GarageKey, GarageBucket,
//! GarageAdminToken and GarageReferenceGrant. Each pass over a key, bucket or admin token is
//! observe → a pure plan (in [`decide::garage_objects`]) → act; what is here reads and writes.
//! Keys and buckets declare grants on each other, so their controllers share reflector stores
//! of both kinds ([`Stores`]) and gather from them the [`Snapshot`] their plans compute
//! permissions from.

pub mod admin_token;
pub mod bucket;
pub mod key;
pub mod reach;
pub mod reference_grant;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::ListParams;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use serde::Serialize;
use shared_types::common::ClusterReference;
use shared_types::garage_admin_token::GarageAdminToken;
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_key::GarageKey;
use shared_types::garage_reference_grant::GarageReferenceGrant;
use shared_types::keys::label;

use super::triggers::{self, OwnsIn as _};
use super::{Context, Error, runner, scoped};
use decide::garage_objects::outcome::Outcome;
use decide::garage_objects::reach::{leads_to, target_namespace};
use decide::garage_objects::{Snapshot, access, merge_patch};

/// Passes of one kind (keys, buckets) run at once. Each asks one Garage storage pod's Admin
/// API; unbounded, a thousand objects created together overwhelm that pod until its health
/// probe fails and every object reports the cluster not ready.
pub const CONCURRENCY: u16 = 4;

/// What the key and bucket controllers see of each other: the objects of every namespace the
/// install watches, whichever scope's controller runs the pass. A bucket in one watched
/// namespace granted to a key in another must see that key's declaration, or its pass would
/// revoke what the key's pass grants.
pub struct Stores {
    /// The GarageKeys of each watched scope.
    pub keys: Vec<Store<GarageKey>>,
    /// The GarageBuckets of each watched scope.
    pub buckets: Vec<Store<GarageBucket>>,
    /// The scopes: namespaces, or `None` for all of them.
    pub namespaces: Vec<Option<String>>,
}

impl Stores {
    /// Waits until every store holds a complete list: a pass deciding from a partial view could
    /// revoke a grant it merely has not seen yet.
    pub async fn ready(&self) {
        for keys in &self.keys {
            let _ = keys.wait_until_ready().await;
        }
        for buckets in &self.buckets {
            let _ = buckets.wait_until_ready().await;
        }
    }

    /// Every GarageKey in scope.
    pub fn all_keys(&self) -> Vec<Arc<GarageKey>> {
        self.keys.iter().flat_map(Store::state).collect()
    }

    /// Every GarageBucket in scope.
    pub fn all_buckets(&self) -> Vec<Arc<GarageBucket>> {
        self.buckets.iter().flat_map(Store::state).collect()
    }

    /// Every grant in scope, and the labels of the namespaces a selector grant needs (none
    /// when Namespaces cannot be read: such grants then admit nothing).
    pub async fn grants(&self, ctx: &Context) -> Result<access::Grants, Error> {
        let mut grants = Vec::new();
        for namespace in &self.namespaces {
            grants.extend(
                scoped::<GarageReferenceGrant>(&ctx.client, namespace.as_deref())
                    .list(&ListParams::default())
                    .await?
                    .items,
            );
        }
        let mut namespace_labels = std::collections::BTreeMap::new();
        if grants
            .iter()
            .any(GarageReferenceGrant::reads_namespace_labels)
            && let Ok(list) = Api::<Namespace>::all(ctx.client.clone())
                .list(&ListParams::default())
                .await
        {
            for n in list.items {
                namespace_labels.insert(n.name_any(), n.labels().clone());
            }
        }
        Ok(access::Grants {
            grants,
            namespace_labels,
        })
    }
}

/// The object a pass is about, as the others should see it (with the ID it now has).
pub enum Me {
    /// A key with its access key ID.
    Key(GarageKey),
    /// A bucket with its bucket ID.
    Bucket(GarageBucket),
}

impl Stores {
    /// The stores, Garage's bucket list and the grants, with `me` in place of its stored copy.
    pub async fn snapshot(
        &self,
        ctx: &Context,
        target: &reach::Target,
        me: Me,
    ) -> Result<Snapshot, Error> {
        // Garage's whole bucket list is read only when a declaration of this cluster needs it
        // (a key granted every bucket, or naming buckets by ID or alias): it grows with every
        // bucket, and the pass of each key and bucket would fetch it.
        let view_needs_list = self.all_keys().iter().any(|k| {
            leads_to(k, &target.namespace(), &target.name()) && access::reads_garage_buckets(k)
        });
        let garage_buckets =
            if view_needs_list || matches!(&me, Me::Key(k) if access::reads_garage_buckets(k)) {
                target.admin.list_buckets().await?
            } else {
                Vec::new()
            };
        let grants = self.grants(ctx).await?;
        let mut keys = self.all_keys();
        let mut buckets = self.all_buckets();
        match me {
            Me::Key(k) => {
                keys.retain(|o| o.uid() != k.uid());
                keys.push(Arc::new(k));
            }
            Me::Bucket(b) => {
                buckets.retain(|o| o.uid() != b.uid());
                buckets.push(Arc::new(b));
            }
        }
        Ok(Snapshot {
            keys,
            buckets,
            garage_buckets,
            grants,
            cluster_namespace: target.namespace(),
            cluster_name: target.name(),
        })
    }
}

/// The requeue of a pass that ended with `outcome`; `resync` is its controller's period for
/// converged objects.
pub fn action(outcome: &Outcome, resync: Duration) -> Action {
    outcome
        .requeue(resync)
        .map_or_else(Action::await_change, Action::requeue)
}

/// True when the GarageCluster `reference` leads to (from `from_ns`) is being deleted or gone.
pub async fn cluster_deleting(
    ctx: &Context,
    from_ns: &str,
    reference: &ClusterReference,
) -> Result<bool, Error> {
    let ns = target_namespace(from_ns, reference.namespace.as_deref());
    Ok(Api::<GarageCluster>::namespaced(ctx.client.clone(), ns)
        .get_opt(&reference.name)
        .await?
        .is_none_or(|c| c.metadata.deletion_timestamp.is_some()))
}

/// Writes `status` unless it equals `current`: a converged object is never rewritten.
pub async fn patch_status_if_changed<K, S>(
    api: &Api<K>,
    ctx: &Context,
    object: &K,
    current: Option<&S>,
    status: &S,
) -> Result<(), Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    S: Serialize + PartialEq,
{
    if current == Some(status) {
        return Ok(());
    }
    let before = current
        .and_then(|c| serde_json::to_value(c).ok())
        .unwrap_or(serde_json::Value::Null);
    let after = serde_json::to_value(status)
        .map_err(|e| Error::Encoding(format!("encoding a status: {e}")))?;
    super::write::patch_status(
        api,
        &ctx.metrics,
        &object.name_any(),
        merge_patch(&before, &after),
    )
    .await
}

/// The key, bucket, admin-token and reference-grant controllers of every scope (`None`: all
/// namespaces). The key and bucket controllers of all scopes share one [`Stores`], and each
/// watches the other kind in every scope, so that a change in one watched namespace reaches
/// the objects of another that it concerns.
pub async fn run(
    ctx: Arc<Context>,
    scopes: Vec<Option<String>>,
    stop_rx: tokio::sync::watch::Receiver<bool>,
) {
    let client: Client = ctx.client.clone();
    let bounded = || kube::runtime::controller::Config::default().concurrency(CONCURRENCY);
    let controllers: Vec<_> = scopes
        .iter()
        .map(|ns| {
            let ns = ns.as_deref();
            let keys =
                triggers::controller(scoped::<GarageKey>(&client, ns), watcher::Config::default())
                    .with_config(bounded());
            let buckets = triggers::controller(
                scoped::<GarageBucket>(&client, ns),
                watcher::Config::default(),
            )
            .with_config(bounded());
            (keys, buckets)
        })
        .collect();
    let stores = Arc::new(Stores {
        keys: controllers.iter().map(|(k, _)| k.store()).collect(),
        buckets: controllers.iter().map(|(_, b)| b.store()).collect(),
        namespaces: scopes.clone(),
    });
    let started = std::time::Instant::now();
    let complete = {
        let stores = stores.clone();
        async move {
            stores.ready().await;
            // Every key and bucket pass waits for this: when it is slow, so are they.
            tracing::info!(
                scopes = stores.namespaces.len(),
                seconds = started.elapsed().as_secs_f64(),
                "the key and bucket lists of every watched namespace are complete"
            );
        }
    };
    let mut passes = Vec::new();
    for ((keys, buckets), namespace) in controllers.into_iter().zip(&scopes) {
        let ns = namespace.as_deref();
        let managed_secrets = watcher::Config::default().labels(label::LABEL_KEY);
        let mut keys = keys.owns_in::<Secret>(&client, ns, &managed_secrets);
        let mut buckets = buckets;
        for other in &scopes {
            // A bucket that gets its ID, or declares a key, changes what the key should hold;
            // a key's declarations change what the bucket should grant.
            let view = stores.clone();
            keys = keys.watches_stream(
                triggers::touched(
                    scoped::<GarageBucket>(&client, other.as_deref()),
                    watcher::Config::default(),
                ),
                move |b: GarageBucket| keys_of_bucket(&b, &view),
            );
            let view = stores.clone();
            buckets = buckets.watches_stream(
                triggers::touched(
                    scoped::<GarageKey>(&client, other.as_deref()),
                    watcher::Config::default(),
                ),
                move |k: GarageKey| buckets_of_key(&k, &view),
            );
        }
        let reconcile_key = {
            let stores = stores.clone();
            move |k, x| key::reconcile(k, x, stores.clone())
        };
        let keys = runner::start(
            key::CONTROLLER,
            keys,
            reconcile_key,
            ctx.clone(),
            stop_rx.clone(),
        );
        let reconcile_bucket = {
            let stores = stores.clone();
            move |b, x| bucket::reconcile(b, x, stores.clone())
        };
        let buckets = runner::start(
            bucket::CONTROLLER,
            buckets,
            reconcile_bucket,
            ctx.clone(),
            stop_rx.clone(),
        );
        let others = token_and_grant_passes(&ctx, ns, &stop_rx);
        passes.push(async move {
            tokio::join!(keys, buckets, others);
        });
    }
    tokio::join!(futures::future::join_all(passes), complete);
}

/// The GarageAdminToken and GarageReferenceGrant controllers of one scope, run together.
async fn token_and_grant_passes(
    ctx: &Arc<Context>,
    ns: Option<&str>,
    stop_rx: &tokio::sync::watch::Receiver<bool>,
) {
    let client = &ctx.client;
    let tokens = triggers::controller(
        scoped::<GarageAdminToken>(client, ns),
        watcher::Config::default(),
    )
    .owns_in::<Secret>(
        client,
        ns,
        &watcher::Config::default().labels(label::LABEL_ADMIN_TOKEN),
    );
    let tokens = runner::start(
        admin_token::CONTROLLER,
        tokens,
        admin_token::reconcile,
        ctx.clone(),
        stop_rx.clone(),
    );
    let grants = triggers::controller(
        scoped::<GarageReferenceGrant>(client, ns),
        watcher::Config::default(),
    );
    let grants = runner::start(
        reference_grant::CONTROLLER,
        grants,
        reference_grant::reconcile,
        ctx.clone(),
        stop_rx.clone(),
    );
    tokio::join!(tokens, grants);
}

/// The keys a bucket event concerns: those it declares, and those declaring it by reference.
fn keys_of_bucket(b: &GarageBucket, stores: &Stores) -> Vec<ObjectRef<GarageKey>> {
    let ns = b.namespace().unwrap_or_default();
    let name = b.name_any();
    let mut out: Vec<ObjectRef<GarageKey>> = b
        .spec
        .key_permissions
        .iter()
        .flatten()
        .map(|p| {
            ObjectRef::new(&p.key_ref.name)
                .within(target_namespace(&ns, p.key_ref.namespace.as_deref()))
        })
        .collect();
    for k in stores.all_keys() {
        let kns = k.namespace().unwrap_or_default();
        let names_it = k.spec.bucket_permissions.iter().flatten().any(|p| {
            p.bucket_ref.as_ref().is_some_and(|r| {
                r.name == name && target_namespace(&kns, r.namespace.as_deref()) == ns
            })
        }) || k.spec.all_buckets.is_some();
        if names_it {
            out.push(ObjectRef::from_obj(&*k));
        }
    }
    out
}

/// The buckets a key event concerns: those it references, and those declaring it.
fn buckets_of_key(k: &GarageKey, stores: &Stores) -> Vec<ObjectRef<GarageBucket>> {
    let ns = k.namespace().unwrap_or_default();
    let name = k.name_any();
    let mut out: Vec<ObjectRef<GarageBucket>> = k
        .spec
        .bucket_permissions
        .iter()
        .flatten()
        .filter_map(|p| p.bucket_ref.as_ref())
        .map(|r| ObjectRef::new(&r.name).within(target_namespace(&ns, r.namespace.as_deref())))
        .collect();
    for b in stores.all_buckets() {
        let bns = b.namespace().unwrap_or_default();
        let declares = b.spec.key_permissions.iter().flatten().any(|p| {
            p.key_ref.name == name && target_namespace(&bns, p.key_ref.namespace.as_deref()) == ns
        }) || b
            .spec
            .local_aliases
            .iter()
            .flatten()
            .any(|a| a.key_ref == name && bns == ns);
        if declares {
            out.push(ObjectRef::from_obj(&*b));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// Stores of two watched namespaces, `d` holding `bucket` and `apps` holding `key`.
    fn two_scopes(bucket: serde_json::Value, key: serde_json::Value) -> super::Stores {
        use kube::runtime::reflector::store::Writer;
        use kube::runtime::watcher::Event;
        let mut keys_d = Writer::<super::GarageKey>::default();
        let mut keys_apps = Writer::<super::GarageKey>::default();
        let mut buckets_d = Writer::<super::GarageBucket>::default();
        let buckets_apps = Writer::<super::GarageBucket>::default();
        buckets_d.apply_watcher_event(&Event::Apply(serde_json::from_value(bucket).unwrap()));
        keys_apps.apply_watcher_event(&Event::Apply(serde_json::from_value(key).unwrap()));
        keys_d.apply_watcher_event(&Event::InitDone);
        super::Stores {
            keys: vec![keys_d.as_reader(), keys_apps.as_reader()],
            buckets: vec![buckets_d.as_reader(), buckets_apps.as_reader()],
            namespaces: vec![Some("d".into()), Some("apps".into())],
        }
    }

    #[test]
    fn a_key_in_another_watched_namespace_is_seen_by_the_buckets_it_names() {
        let stores = two_scopes(
            json!({"metadata": {"name": "my-bucket", "namespace": "d"},
                   "spec": {"clusterRef": {"name": "garage"}}}),
            json!({"metadata": {"name": "remote-key", "namespace": "apps"},
                   "spec": {"clusterRef": {"name": "garage", "namespace": "d"},
                            "bucketPermissions": [{"bucketRef": {"name": "my-bucket", "namespace": "d"},
                                                   "read": true}]}}),
        );
        // The bucket's pass decides from every key in scope, the other namespace's included.
        let keys: Vec<String> = stores
            .all_keys()
            .iter()
            .map(|k| kube::ResourceExt::name_any(&**k))
            .collect();
        assert_eq!(keys, ["remote-key"]);
        // A change of the bucket reaches the key that names it from the other namespace.
        let bucket = stores.all_buckets().pop().unwrap();
        let refs = super::keys_of_bucket(&bucket, &stores);
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].name, "remote-key");
        assert_eq!(refs[0].namespace.as_deref(), Some("apps"));
    }
}
