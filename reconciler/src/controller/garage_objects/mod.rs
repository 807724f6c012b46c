//! The controllers of the objects that live inside a Garage cluster: GarageKey, GarageBucket,
//! GarageAdminToken and GarageReferenceGrant. Keys and buckets declare grants on each other,
//! so their controllers share reflector stores of both kinds and compute permissions from the
//! same view ([`access`]).

pub mod access;
pub mod admin_token;
pub mod bucket;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod key;
pub mod outcome;
pub mod pass;
pub mod reach;
pub mod reference_grant;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::ListParams;
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

/// Requeue while a prerequisite (the cluster, a referenced object) is missing.
pub const WAITING: Duration = Duration::from_secs(10);

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

/// What one pass decides permissions from.
pub struct Snapshot {
    /// Every key, the reconciled one as [`Me`] says.
    pub keys: Vec<Arc<GarageKey>>,
    /// Every bucket, the reconciled one as [`Me`] says.
    pub buckets: Vec<Arc<GarageBucket>>,
    /// The buckets Garage has.
    pub garage_buckets: Vec<crate::garage::BucketListItem>,
    /// The grants.
    pub grants: access::Grants,
    /// The namespace of the GarageCluster the pass reached.
    pub cluster_namespace: String,
    /// Its name.
    pub cluster_name: String,
}

impl Snapshot {
    /// The view of the cluster the pass reached.
    pub fn view(&self) -> access::Cluster<'_> {
        access::Cluster {
            namespace: &self.cluster_namespace,
            name: &self.cluster_name,
            keys: &self.keys,
            buckets: &self.buckets,
            garage_buckets: &self.garage_buckets,
            grants: &self.grants,
        }
    }
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
            reach::leads_to(k, &target.settings.namespace, &target.settings.name)
                && access::reads_garage_buckets(k)
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
            cluster_namespace: target.settings.namespace.clone(),
            cluster_name: target.settings.name.clone(),
        })
    }
}

/// When a converged key or bucket is looked at again: the drift resync, stretched by up to a
/// tenth according to its UID, so that objects created together do not all ask Garage in the
/// same second ever after.
pub fn drift_check(base: Duration, uid: Option<&str>) -> Duration {
    let spread = uid
        .unwrap_or_default()
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)))
        % 1000;
    base + base / 10 * spread / 1000
}

/// A status that reports readiness: a `Ready` condition among its conditions, and the
/// generation it was decided from.
pub trait ReadyStatus: Clone + Default + Serialize + PartialEq {
    /// Its conditions.
    fn conditions_mut(&mut self) -> &mut Option<Vec<Condition>>;
    /// The generation it was decided from.
    fn observed_generation_mut(&mut self) -> &mut Option<i64>;
}

macro_rules! ready_status {
    ($($status:ty),*) => {$(
        impl ReadyStatus for $status {
            fn conditions_mut(&mut self) -> &mut Option<Vec<Condition>> {
                &mut self.conditions
            }
            fn observed_generation_mut(&mut self) -> &mut Option<i64> {
                &mut self.observed_generation
            }
        }
    )*};
}

ready_status!(
    shared_types::garage_key::GarageKeyStatus,
    shared_types::garage_bucket::GarageBucketStatus,
    shared_types::garage_admin_token::GarageAdminTokenStatus
);

/// `current` with its `Ready` condition set (and nothing else of ours changed).
pub fn with_ready(
    current: Option<&[Condition]>,
    ready: bool,
    reason: &'static str,
    message: String,
    generation: Option<i64>,
) -> Vec<Condition> {
    use shared_types::conditions::common::CONDITION_READY;
    super::conditions::merge(
        current,
        &[super::conditions::Desired {
            type_: CONDITION_READY,
            status: ready,
            reason,
            message,
        }],
        &[CONDITION_READY],
        generation,
    )
}

/// Parses an RFC 3339 time as Garage writes it, cut to whole seconds: the API server keeps
/// status times to the second, and a finer one would never compare equal to what it stored,
/// so the status would be written again at every pass.
pub fn timestamp(s: &str) -> Option<k8s_openapi::jiff::Timestamp> {
    let t: k8s_openapi::jiff::Timestamp = s.parse().ok()?;
    k8s_openapi::jiff::Timestamp::from_second(t.as_second()).ok()
}

/// True when the GarageCluster `reference` leads to (from `from_ns`) is being deleted or gone.
pub async fn cluster_deleting(
    ctx: &Context,
    from_ns: &str,
    reference: &ClusterReference,
) -> Result<bool, Error> {
    let ns = reach::target_namespace(from_ns, reference.namespace.as_deref());
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

/// The JSON merge patch (RFC 7386) that turns `before` into `after`: a field `after` no longer
/// has is sent as `null`, so that clearing an optional status field really clears it.
pub fn merge_patch(before: &serde_json::Value, after: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let mut out = serde_json::Map::new();
            for (k, v) in a {
                match b.get(k) {
                    Some(old) if old == v => {}
                    Some(old) => {
                        out.insert(k.clone(), merge_patch(old, v));
                    }
                    None => {
                        out.insert(k.clone(), v.clone());
                    }
                }
            }
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                out.insert(k.clone(), Value::Null);
            }
            Value::Object(out)
        }
        _ => after.clone(),
    }
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
                .within(reach::target_namespace(&ns, p.key_ref.namespace.as_deref()))
        })
        .collect();
    for k in stores.all_keys() {
        let kns = k.namespace().unwrap_or_default();
        let names_it = k.spec.bucket_permissions.iter().flatten().any(|p| {
            p.bucket_ref.as_ref().is_some_and(|r| {
                r.name == name && reach::target_namespace(&kns, r.namespace.as_deref()) == ns
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
        .map(|r| {
            ObjectRef::new(&r.name).within(reach::target_namespace(&ns, r.namespace.as_deref()))
        })
        .collect();
    for b in stores.all_buckets() {
        let bns = b.namespace().unwrap_or_default();
        let declares = b.spec.key_permissions.iter().flatten().any(|p| {
            p.key_ref.name == name
                && reach::target_namespace(&bns, p.key_ref.namespace.as_deref()) == ns
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
    use super::merge_patch;
    use serde_json::json;
    use std::time::Duration;

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

    #[test]
    fn drift_checks_are_spread_over_a_tenth_of_the_interval() {
        let base = Duration::from_secs(300);
        let spread: std::collections::BTreeSet<Duration> = (0..100)
            .map(|i| super::drift_check(base, Some(&format!("0e4f6a2c-{i:04}"))))
            .collect();
        assert!(spread.iter().all(|d| *d >= base && *d < base + base / 10));
        assert!(spread.len() > 50, "{} distinct delays of 100", spread.len());
        assert_eq!(
            super::drift_check(base, Some("u")),
            super::drift_check(base, Some("u"))
        );
    }

    #[test]
    fn garage_times_are_kept_to_the_second_as_the_api_server_stores_them() {
        let t = super::timestamp("2026-12-02T07:54:47.123456789Z").unwrap();
        assert_eq!(t.to_string(), "2026-12-02T07:54:47Z");
    }

    #[test]
    fn a_merge_patch_clears_what_is_gone_and_sends_only_what_changed() {
        let before = json!({"a": 1, "gone": "x", "nested": {"keep": 1, "drop": 2}, "list": [1, 2]});
        let after = json!({"a": 1, "nested": {"keep": 1, "new": 3}, "list": [2], "added": true});
        assert_eq!(
            merge_patch(&before, &after),
            json!({"gone": null, "nested": {"drop": null, "new": 3}, "list": [2], "added": true})
        );
        assert_eq!(merge_patch(&serde_json::Value::Null, &after), after);
    }
}
