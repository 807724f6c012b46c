//! The GarageKey decision: a pure function of what a pass observed ([`Observed`],
//! [`ObservedDeletion`]) giving, in order, the operations that pass runs — the key imported or
//! its settings changed in Garage, the status that records the grants the key manages (written
//! before the first grant, so a crash never leaves a grant the operator would not know to
//! revoke), each permission change, the credentials Secret, the replaced key retired — with
//! the status to publish and the [`Outcome`].

use std::collections::{BTreeMap, BTreeSet};

use garage_api_types::{BucketPermissions, KeyInfo, KeyPermissions, KeySpec};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use shared_types::common::{KeyPhase, SecretReference};
use shared_types::conditions::common::CONDITION_READY;
use shared_types::conditions::reason;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_key::{
    GarageKey, GarageKeyStatus, ImportKey, KeyBucketStatus, KeyCapabilities,
};
use shared_types::keys::{annotation, finalizer as finalizers};

use super::material::Material;
use super::secret::{self, Endpoint};
use crate::conditions::{self, Desired};
use crate::desired::{DesiredError, Settings, is_controlled_by};
use crate::finalizers as finalizer;
use crate::garage_objects::access::{self, Pair};
use crate::garage_objects::outcome::{self, Outcome, Refused};
use crate::garage_objects::{Snapshot, pass, reach, timestamp};

/// What a pass over a live GarageKey observed.
pub struct Observed {
    /// The key.
    pub key: GarageKey,
    /// What Garage and Kubernetes hold for its material, or why the material cannot be known
    /// now.
    pub facts: Result<Facts, String>,
}

/// The facts of a key whose material is known.
pub struct Facts {
    /// The key pair it should have.
    pub material: Material,
    /// Garage's key of that access key ID, with its secret; `None` when Garage has none.
    pub in_garage: Option<KeyInfo>,
    /// Every key, bucket and grant, with this key holding the material's ID.
    pub snapshot: Snapshot,
    /// Where clients reach the cluster's S3 API.
    pub endpoint: Endpoint,
    /// The credentials Secret of the name the key renders, as it is.
    pub secret: Option<Secret>,
    /// The Secret the status names when that is another name (a renamed template), as it is.
    pub old_secret: Option<(String, Option<Secret>)>,
}

/// The credentials Secret write.
#[derive(Debug, Clone, PartialEq)]
pub enum SecretWrite {
    /// Create it.
    Create(Box<Secret>),
    /// Replace the live one (carries its resourceVersion).
    Replace(Box<Secret>),
    /// Delete the live one and create this: the type of a Secret cannot change.
    Recreate(Box<Secret>),
    /// A Secret of that name this key does not control: never overwritten; the pass fails.
    Foreign {
        /// Its name.
        name: String,
    },
}

/// One operation of a pass, run in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Import the material into Garage under `name`. Garage refuses an ID it once held; the
    /// pass then ends as `refused` says.
    Import {
        /// The key pair.
        material: Material,
        /// The key's name in Garage.
        name: String,
        /// How the pass ends when Garage refuses.
        refused: Box<Refused<GarageKeyStatus>>,
    },
    /// Change the key's name, expiry or create-bucket permission.
    Update {
        /// The access key ID.
        id: String,
        /// The changes.
        spec: KeySpec,
    },
    /// Write this status (against the one the pass started from): a write-ahead record.
    Record(Box<GarageKeyStatus>),
    /// Allow and/or deny on one pair.
    Permission(access::Change),
    /// Read the key back for the status, after permissions changed.
    ReadBack(String),
    /// Write the credentials Secret.
    Secret(SecretWrite),
    /// Delete a Secret this key controls.
    DeleteSecret(String),
    /// Delete from Garage the key a replacement nonce replaced (gone already is done).
    RetireKey(String),
    /// Revoke every permission of the key on a bucket (bucket ID, access key ID).
    Revoke(Pair),
    /// Delete the key from Garage (gone already is done).
    DeleteKey(String),
    /// Leave the key in Garage: nothing proves it is this object's own.
    LeaveInGarage(String),
    /// Remove the finalizer.
    RemoveFinalizer,
}

/// What the status of a key in Garage says besides Garage's own answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    /// The bucket IDs whose grants the key manages.
    pub managed: Vec<String>,
    /// Whether it holds a cluster-wide baseline.
    pub cluster_wide: bool,
    /// The credentials Secret's name.
    pub secret_name: String,
}

/// Everything one pass over a key does.
pub type Plan = pass::Plan<Step, KeyInfo, GarageKeyStatus, Ready>;

/// The status a key's pass publishes: a [`Ready`] one is made by [`ready_status`].
pub type Publish = pass::Publish<GarageKeyStatus, Ready>;

/// The status of a key that waits: `Ready=False` with the outcome's reason and message, phase
/// Pending.
pub fn waiting_status(key: &GarageKey, reason: &'static str, message: String) -> GarageKeyStatus {
    outcome::reported(
        key.status.as_ref(),
        key.metadata.generation,
        false,
        reason,
        message,
        |s| s.phase = Some(KeyPhase::Pending),
    )
}

/// The plan of a key that cannot be made ready now: its status says why.
pub fn waiting(key: &GarageKey, reason: &'static str, message: String) -> Plan {
    Plan::ending(
        Vec::new(),
        Publish::Status(Box::new(waiting_status(key, reason, message.clone()))),
        Outcome::waiting(reason, message),
    )
}

/// The key's name in Garage.
pub fn display_name(key: &GarageKey) -> String {
    key.spec
        .name
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| key.name_any())
}

/// Where clients reach the S3 API of `cluster`, and as what region.
pub fn endpoint(cluster: &GarageCluster, s: &Settings) -> Endpoint {
    let region = region(cluster);
    Endpoint {
        scheme: "http".into(),
        host: Some(format!(
            "{}.{}.svc:{}",
            crate::names::api_service(&s.name),
            s.namespace,
            s.s3_port
        )),
        region,
    }
}

/// The S3 endpoint of a management handle reached through its Admin API URL: the region
/// its spec names, and no address (the operator cannot know where that cluster serves S3).
pub fn handle_endpoint(handle: &GarageCluster) -> Endpoint {
    Endpoint {
        scheme: "http".into(),
        host: None,
        region: region(handle),
    }
}

/// `spec.s3Api.region`, `garage` by default.
fn region(cluster: &GarageCluster) -> String {
    cluster
        .spec
        .s3_api
        .as_ref()
        .and_then(|a| a.region.clone())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| "garage".into())
}

/// The material `spec.importKey` names through the Secret `ns`/`name` (`source`, as it is),
/// or why it gives none.
pub fn imported_material(
    import: &ImportKey,
    ns: &str,
    name: &str,
    source: Option<&Secret>,
) -> Result<Material, String> {
    let Some(source) = source else {
        return Err(format!(
            "spec.importKey.secretRef: Secret {ns}/{name} does not exist; create it"
        ));
    };
    let read = |k: &Option<String>, default: &str| {
        let k = k
            .clone()
            .filter(|k| !k.is_empty())
            .unwrap_or_else(|| default.into());
        source
            .data
            .as_ref()
            .and_then(|d| d.get(&k))
            .map(|b| String::from_utf8_lossy(&b.0).trim().to_owned())
            .filter(|v| !v.is_empty())
            .ok_or(k)
    };
    match (
        read(&import.access_key_id_key, "access-key-id"),
        read(&import.secret_access_key_key, "secret-access-key"),
    ) {
        (Ok(id), Ok(secret)) => Ok(Material {
            access_key_id: id,
            secret_access_key: secret,
        }),
        (Err(k), _) | (_, Err(k)) => Err(format!(
            "spec.importKey.secretRef: Secret {ns}/{name} has no value under {k}"
        )),
    }
}

/// The pass of a key whose spec cannot be carried out: its status says why (the reason
/// [`DesiredError::reported_as`] gives), and nothing is written.
fn refused(key: &GarageKey, e: &DesiredError) -> Plan {
    waiting(key, e.reported_as().0, e.to_string())
}

/// The pass over a live key.
pub fn plan(o: &Observed) -> Result<Plan, DesiredError> {
    let key = &o.key;
    let f = match &o.facts {
        Ok(f) => f,
        Err(message) => {
            return Ok(waiting(
                key,
                reason::REASON_WAITING_FOR_DEPENDENCY,
                message.clone(),
            ));
        }
    };
    // Refused before anything is written to Garage: the key would exist without its Secret.
    if let Some(e) = secret::endpoint_problem(key, &f.endpoint) {
        return Ok(refused(key, &e));
    }
    let m = &f.material;
    let mut steps = Vec::new();
    let info = match &f.in_garage {
        Some(info) if info.secret_access_key.as_deref() == Some(m.secret_access_key.as_str()) => {
            info.clone()
        }
        Some(_) => {
            return Ok(waiting(
                key,
                reason::REASON_GARAGE_API_ERROR,
                format!(
                    "access key {} exists in Garage with another secret; it is not taken over (import its real secret, or remove the other key)",
                    m.access_key_id
                ),
            ));
        }
        None => {
            // Garage keeps a deleted key's ID and never lets it be imported again.
            let message = format!(
                "access key {} was deleted from Garage outside the operator and cannot be recreated; set the annotation {} to any new value to mint new credentials",
                m.access_key_id,
                annotation::ANNOTATION_KEY_REPLACEMENT_NONCE
            );
            let why = reason::REASON_GARAGE_API_ERROR;
            steps.push(Step::Import {
                material: m.clone(),
                name: display_name(key),
                refused: Box::new(Refused {
                    status: waiting_status(key, why, message.clone()),
                    outcome: Outcome::waiting(why, message),
                }),
            });
            imported(key, m)
        }
    };
    if let Some(spec) = settings_update(key, &info) {
        steps.push(Step::Update {
            id: m.access_key_id.clone(),
            spec,
        });
    }
    let (managed, cluster_wide) = grants(key, m, &info, &f.snapshot, &mut steps);
    let desired = match secret::render(
        key,
        &m.access_key_id,
        &m.secret_access_key,
        &f.endpoint,
        single_bucket_name(key, &f.snapshot).as_deref(),
    ) {
        Ok(s) => s,
        Err(e) => return Ok(refused(key, &e)),
    };
    let secret_name = desired.name_any();
    let uid = key.uid().unwrap_or_default();
    steps.extend(secret_write(desired, f.secret.as_ref(), &uid).map(Step::Secret));
    // A renamed template leaves the old Secret behind; it goes once the new one exists.
    if let Some((old, Some(live))) = &f.old_secret
        && is_controlled_by(live, &uid)
    {
        steps.push(Step::DeleteSecret(old.clone()));
    }
    // After a replacement nonce gave the key new material, the old key is deleted from Garage
    // once the new one and its Secret exist.
    if let Some(old) = key.status.as_ref().and_then(|s| s.access_key_id.clone())
        && old != m.access_key_id
    {
        steps.push(Step::RetireKey(old));
    }
    Ok(Plan {
        steps,
        garage: Some(info),
        publish: Publish::Ready(Ready {
            managed,
            cluster_wide,
            secret_name,
        }),
        outcome: Outcome::Converged,
    })
}

/// The key as Garage's `ImportKey` creates it: named, no expiry, no permission.
fn imported(key: &GarageKey, m: &Material) -> KeyInfo {
    KeyInfo {
        access_key_id: m.access_key_id.clone(),
        name: display_name(key),
        created: None,
        expiration: None,
        expired: false,
        secret_access_key: Some(m.secret_access_key.clone()),
        permissions: KeyPermissions::default(),
        buckets: Vec::new(),
    }
}

/// Name, expiry and the create-bucket permission where Garage differs; `None` when it does
/// not.
pub fn settings_update(key: &GarageKey, info: &KeyInfo) -> Option<KeySpec> {
    let mut spec = KeySpec::default();
    let name = display_name(key);
    if info.name != name {
        spec.name = Some(name);
    }
    if let Some(at) = &key.spec.expires_at {
        if info.expiration.as_deref().and_then(timestamp) != Some(at.0) {
            spec.expiration = Some(at.0.to_string());
        }
    } else if key.spec.never_expires == Some(true) && info.expiration.is_some() {
        spec.never_expires = true;
    }
    let create = key
        .spec
        .permissions
        .as_ref()
        .and_then(|p| p.create_bucket)
        .unwrap_or(false);
    if create != info.permissions.create_bucket {
        let p = KeyPermissions {
            create_bucket: true,
        };
        if create {
            spec.allow = Some(p);
        } else {
            spec.deny = Some(p);
        }
    }
    (spec != KeySpec::default()).then_some(spec)
}

/// The steps that bring every pair this key acts on to its declared permission; returns the
/// managed bucket IDs and whether the key holds a cluster-wide baseline.
fn grants(
    key: &GarageKey,
    m: &Material,
    info: &KeyInfo,
    snapshot: &Snapshot,
    steps: &mut Vec<Step>,
) -> (Vec<String>, bool) {
    // This key as the other objects see it: with the access key it now has.
    let mut me = key.clone();
    me.status.get_or_insert_with(Default::default).access_key_id = Some(m.access_key_id.clone());
    let view = snapshot.view();
    let own: BTreeSet<String> = view.key_declares(&me).into_keys().collect();
    let baseline = access::Cluster::key_baseline(key).is_some();
    let status = key.status.clone().unwrap_or_default();
    let was_wide = status.cluster_wide.unwrap_or(false);
    let was: BTreeSet<String> = status
        .managed_bucket_grants
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    let mut scope_buckets: BTreeSet<String> = own.union(&was).cloned().collect();
    if baseline || was_wide {
        scope_buckets.extend(snapshot.garage_buckets.iter().map(|b| b.id.clone()));
    }
    let scope: BTreeSet<Pair> = scope_buckets
        .iter()
        .map(|b| (b.clone(), m.access_key_id.clone()))
        .collect();
    let current: BTreeMap<Pair, BucketPermissions> = info
        .buckets
        .iter()
        .map(|b| ((b.id.clone(), m.access_key_id.clone()), b.permissions))
        .collect();
    let changes = access::changes(&scope, &current, |p| view.declared(p));
    if changes.is_empty() && was == own && was_wide == baseline {
        return (own.into_iter().collect(), baseline);
    }
    // Ownership is recorded before the first grant, so a crash never leaves a grant the
    // operator would not know to revoke.
    let before: Vec<String> = was.union(&own).cloned().collect();
    if before != status.managed_bucket_grants.clone().unwrap_or_default() || (baseline && !was_wide)
    {
        let mut recorded = status.clone();
        recorded.managed_bucket_grants = Some(before);
        recorded.cluster_wide = Some(was_wide || baseline);
        recorded.access_key_id = Some(m.access_key_id.clone());
        recorded.key_id = Some(m.access_key_id.clone());
        steps.push(Step::Record(Box::new(recorded)));
    }
    let changed = !changes.is_empty();
    steps.extend(changes.into_iter().map(Step::Permission));
    if changed {
        steps.push(Step::ReadBack(m.access_key_id.clone()));
    }
    (own.into_iter().collect(), baseline)
}

/// The write that makes the live Secret `desired`, if any.
fn secret_write(desired: Secret, live: Option<&Secret>, uid: &str) -> Option<SecretWrite> {
    let Some(live) = live else {
        return Some(SecretWrite::Create(Box::new(desired)));
    };
    if !is_controlled_by(live, uid) {
        return Some(SecretWrite::Foreign {
            name: desired.name_any(),
        });
    }
    let hash = |s: &Secret| {
        s.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(annotation::ANNOTATION_RENDERED_HASH).cloned())
    };
    if hash(live) == hash(&desired) {
        return None;
    }
    let mut replacement = desired;
    // The type of a Secret cannot change; a template that changes it replaces the Secret.
    if live.type_ != replacement.type_ {
        return Some(SecretWrite::Recreate(Box::new(replacement)));
    }
    replacement.metadata.resource_version = live.metadata.resource_version.clone();
    Some(SecretWrite::Replace(Box::new(replacement)))
}

/// The bucket name for `includeBucketName`: only when the key references exactly one bucket.
fn single_bucket_name(key: &GarageKey, snapshot: &Snapshot) -> Option<String> {
    let perms = key.spec.bucket_permissions.as_deref().unwrap_or_default();
    let [only] = perms else {
        return None;
    };
    if let Some(alias) = only.global_alias.clone().filter(|a| !a.is_empty()) {
        return Some(alias);
    }
    let r = only.bucket_ref.as_ref()?;
    let ns = key.namespace().unwrap_or_default();
    let bns = reach::target_namespace(&ns, r.namespace.as_deref()).to_owned();
    let bucket = snapshot
        .buckets
        .iter()
        .find(|b| b.namespace().as_deref() == Some(bns.as_str()) && b.name_any() == r.name)?;
    Some(
        bucket
            .spec
            .global_alias
            .clone()
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| bucket.name_any()),
    )
}

/// The status of a key in Garage as `info` says, Ready unless Garage says it has expired.
pub fn ready_status(key: &GarageKey, ready: &Ready, info: &KeyInfo) -> GarageKeyStatus {
    let expired = info.expired;
    GarageKeyStatus {
        access_key_id: Some(info.access_key_id.clone()),
        key_id: Some(info.access_key_id.clone()),
        buckets: Some(bucket_statuses(info)),
        cluster_wide: Some(ready.cluster_wide),
        conditions: Some(ready_conditions(key, info, &ready.secret_name)),
        created_at: info.created.as_deref().and_then(timestamp).map(Time),
        expires_at: info.expiration.as_deref().and_then(timestamp).map(Time),
        managed_bucket_grants: Some(ready.managed.clone()),
        observed_generation: key.metadata.generation,
        permissions: Some(KeyCapabilities {
            create_bucket: Some(info.permissions.create_bucket),
        }),
        phase: Some(if expired {
            KeyPhase::Expired
        } else {
            KeyPhase::Ready
        }),
        secret_ref: Some(SecretReference {
            name: Some(ready.secret_name.clone()),
            namespace: Some(key.namespace().unwrap_or_default()),
        }),
        effective_permissions: key
            .status
            .as_ref()
            .and_then(|s| s.effective_permissions.clone()),
    }
}

/// The conditions of a key that is in Garage: Ready unless Garage says it has expired.
fn ready_conditions(
    key: &GarageKey,
    info: &KeyInfo,
    secret_name: &str,
) -> Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    let expired = info.expired;
    conditions::merge(
        key.status.as_ref().and_then(|s| s.conditions.as_deref()),
        &[Desired {
            type_: CONDITION_READY,
            status: !expired,
            reason: if expired {
                reason::REASON_EXPIRED
            } else {
                reason::REASON_KEY_READY
            },
            message: if expired {
                "the key has expired in Garage; it is not rotated or deleted automatically".into()
            } else {
                format!(
                    "key {} is ready; credentials in Secret {secret_name}",
                    info.access_key_id
                )
            },
        }],
        &[CONDITION_READY],
        key.metadata.generation,
    )
}

/// Sorted by bucket ID: Garage lists them in no stable order, and an unchanged key must
/// produce an unchanged status.
fn bucket_statuses(info: &KeyInfo) -> Vec<KeyBucketStatus> {
    let mut buckets: Vec<_> = info.buckets.iter().collect();
    buckets.sort_by(|a, b| a.id.cmp(&b.id));
    buckets
        .into_iter()
        .map(|b| KeyBucketStatus {
            bucket_id: Some(b.id.clone()),
            global_alias: b.global_aliases.first().cloned(),
            local_alias: b.local_aliases.first().cloned(),
            read: Some(b.permissions.read),
            write: Some(b.permissions.write),
            owner: Some(b.permissions.owner),
        })
        .collect()
}

/// What a pass over a deleted GarageKey observed.
pub struct ObservedDeletion {
    /// The key.
    pub key: GarageKey,
    /// Its cluster.
    pub cluster: Cleanup,
    /// The Secrets the key may have written, by name, as they are: the one its status names,
    /// then the one it renders.
    pub secrets: Vec<(String, Option<Secret>)>,
}

/// The cluster of a deleted key, as far as cleaning up in Garage goes.
pub enum Cleanup {
    /// It answers.
    Reached {
        /// The access key ID this object may delete ([`deletable`]).
        id: Option<String>,
        /// Garage's key of that ID; `None` when it has none.
        in_garage: Option<KeyInfo>,
    },
    /// The cluster object does not exist: nothing left to clean in Garage.
    Gone,
    /// It cannot be reached now.
    Unreachable {
        /// The condition reason of why.
        reason: &'static str,
        /// Why.
        message: String,
        /// The cluster is being deleted or gone: its Garage goes with it.
        cluster_deleting: bool,
    },
}

/// The access key ID a deleted key may delete from Garage: the status's, and without a grant
/// to the cluster only when it is provably this object's own derived key (`derived`, its
/// material as derivable now): a status naming someone else's key must not delete it.
pub fn deletable(
    key: &GarageKey,
    granted: bool,
    derived: Option<&Result<Material, String>>,
) -> Option<String> {
    let id = key.status.as_ref().and_then(|s| s.access_key_id.clone())?;
    if granted {
        return Some(id);
    }
    let own =
        matches!(derived, Some(Ok(m)) if m.access_key_id == id && key.spec.import_key.is_none());
    own.then_some(id)
}

/// Deletion: every grant revoked, the key deleted from Garage, the Secrets removed, then the
/// finalizer. A cluster that no longer exists has nothing left to clean.
pub fn deletion(o: &ObservedDeletion) -> Plan {
    let key = &o.key;
    let mut plan = Plan::ending(Vec::new(), Publish::Nothing, Outcome::Finished);
    if !finalizer::has(key, finalizers::FINALIZER_KEY) {
        return plan;
    }
    match &o.cluster {
        Cleanup::Reached { id, in_garage } => {
            let status_id = key.status.as_ref().and_then(|s| s.access_key_id.clone());
            match (id, status_id) {
                (Some(id), _) => {
                    if let Some(info) = in_garage {
                        for b in &info.buckets {
                            plan.steps.push(Step::Revoke((b.id.clone(), id.clone())));
                        }
                        plan.steps.push(Step::DeleteKey(id.clone()));
                    }
                }
                (None, Some(other)) => plan.steps.push(Step::LeaveInGarage(other)),
                (None, None) => {}
            }
        }
        Cleanup::Gone => {}
        Cleanup::Unreachable {
            reason,
            message,
            cluster_deleting: false,
        } => {
            plan.outcome = Outcome::waiting(reason, message.clone());
            return plan;
        }
        Cleanup::Unreachable { .. } => {}
    }
    let uid = key.uid().unwrap_or_default();
    let mut deleted = BTreeSet::new();
    for (name, live) in &o.secrets {
        if live.as_ref().is_some_and(|s| is_controlled_by(s, &uid)) && deleted.insert(name) {
            plan.steps.push(Step::DeleteSecret(name.clone()));
        }
    }
    plan.steps.push(Step::RemoveFinalizer);
    plan
}

#[cfg(test)]
mod tests;
