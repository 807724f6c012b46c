//! Site D, after the volume classes: GarageBuckets, GarageKeys, GarageReferenceGrants and a
//! GarageAdminToken on the site's 3-member cluster, through real Garage.
//!
//! The upstream bucket and key samples apply unchanged (but for their namespace) and become
//! Ready. A key's generated Secret works with an ordinary S3 client on the bucket it is granted
//! (checksummed objects read back) and is refused on one it is not; a bucket quota is enforced
//! by Garage; nothing is rewritten at steady state. A key in another namespace uses a bucket
//! through a grant, and loses it when the grant goes; without a grant it gets nothing. A
//! non-empty bucket is not deleted until emptied. A deleted key stops authenticating and its
//! Secret goes. An admin token gets its immutable Secret. The cross-namespace part, keys using
//! a bucket through GarageReferenceGrants, is in [`crate::grants`].

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, ensure};
use garage_fixture::s3::{Objects, S3Error};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, DynamicObject, ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use localcluster::wait_until as wait;
use serde_json::{Value, json};
use shared_types::garage_admin_token::GarageAdminToken;
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_key::GarageKey;
use shared_types::garage_reference_grant::GarageReferenceGrant;

use crate::grants::cross_namespace;
use crate::support::*;
use crate::{World, ns};

/// The namespace of the cross-namespace key.
pub(crate) const APPS_NS: &str = "e2e-apps";

pub(crate) fn samples(file: &str) -> anyhow::Result<Vec<Value>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/upstream-samples")
        .join(file);
    let text = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// Creates `doc` in the site's namespace (its own namespace replaced).
pub(crate) async fn create<K>(client: &Client, mut doc: Value) -> anyhow::Result<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    doc["metadata"]["namespace"] = json!(ns());
    // The samples keep an imported key's source Secret beside the key.
    if doc["spec"]["importKey"]["secretRef"]["namespace"].is_string() {
        doc["spec"]["importKey"]["secretRef"]["namespace"] = json!(ns());
    }
    let name = doc["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let object: K = serde_json::from_value(doc)?;
    Api::<K>::namespaced(client.clone(), ns())
        .create(&PostParams::default(), &object)
        .await
        .with_context(|| format!("creating {} {name}", K::kind(&())))
}

pub(crate) fn ready(
    conditions: Option<&[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition]>,
) -> bool {
    condition_in(conditions, "Ready") == Some("True".into())
}

async fn wait_all_ready(client: &Client, buckets: &[&str], keys: &[&str]) -> anyhow::Result<()> {
    let b: Api<GarageBucket> = Api::namespaced(client.clone(), ns());
    let k: Api<GarageKey> = Api::namespaced(client.clone(), ns());
    let r = wait(
        "every bucket and key Ready",
        Duration::from_secs(180),
        || async {
            for name in buckets {
                let o = b.get(name).await?;
                if !ready(o.status.as_ref().and_then(|s| s.conditions.as_deref())) {
                    return Ok(false);
                }
            }
            for name in keys {
                let o = k.get(name).await?;
                if !ready(o.status.as_ref().and_then(|s| s.conditions.as_deref())) {
                    return Ok(false);
                }
            }
            Ok(true)
        },
    )
    .await;
    if let Err(e) = r {
        let mut report = String::new();
        for o in b.list(&ListParams::default()).await?.items {
            report.push_str(&format!(
                "\n bucket {}: {}",
                o.name_any(),
                serde_json::to_string(&o.status)?
            ));
        }
        for o in k.list(&ListParams::default()).await?.items {
            report.push_str(&format!(
                "\n key {}: {}",
                o.name_any(),
                serde_json::to_string(&o.status)?
            ));
        }
        return Err(anyhow!("{e:#}{report}"));
    }
    Ok(())
}

/// The S3 client of the credentials in Secret `ns/name`, for bucket `bucket`.
pub(crate) async fn store_of(
    client: &Client,
    ns: &str,
    name: &str,
    id_key: &str,
    secret_key: &str,
    bucket: &str,
) -> anyhow::Result<Objects> {
    let s = Api::<Secret>::namespaced(client.clone(), ns)
        .get(name)
        .await?;
    let data = s.data.context("credentials Secret has no data")?;
    let text = |k: &str| -> anyhow::Result<String> {
        Ok(String::from_utf8(
            data.get(k)
                .with_context(|| format!("Secret {name} has no {k}"))?
                .0
                .clone(),
        )?)
    };
    Ok(Objects::new(bucket, &text(id_key)?, &text(secret_key)?)?)
}

pub(crate) fn refused(r: Result<Vec<u8>, S3Error>) -> bool {
    matches!(
        r,
        Err(S3Error::Status {
            status: 403 | 404,
            ..
        })
    )
}

pub(crate) async fn run(w: &mut World<'_>) -> anyhow::Result<()> {
    let client = w.client.clone();
    let endpoint = s3(w.sim, "garage-storage-0-0")?;
    let other = s3(w.sim, "garage-storage-1-0")?;
    let t = Instant::now();

    // The samples, as a user would apply them.
    let imported = json!({
        "metadata": {"name": "existing-credentials"},
        "stringData": {
            "access-key-id": "GK0123456789abcdef01234567",
            "secret-access-key": "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        },
    });
    create::<Secret>(&client, imported).await?;
    let mut bucket_names = Vec::new();
    for doc in samples("garage_v1beta1_garagebucket.yaml")? {
        bucket_names.push(
            doc["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        create::<GarageBucket>(&client, doc).await?;
    }
    let mut key_names = Vec::new();
    for doc in samples("garage_v1beta1_garagekey.yaml")? {
        key_names.push(
            doc["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        create::<GarageKey>(&client, doc).await?;
    }
    let quota = json!({
        "metadata": {"name": "quota-bucket"},
        "spec": {
            "clusterRef": {"name": crate::NAME},
            "quotas": {"maxObjects": 2},
            "keyPermissions": [{"keyRef": {"name": "app-key"}, "read": true, "write": true}],
        },
    });
    create::<GarageBucket>(&client, quota).await?;
    bucket_names.push("quota-bucket".into());
    let b: Vec<&str> = bucket_names.iter().map(String::as_str).collect();
    let k: Vec<&str> = key_names.iter().map(String::as_str).collect();
    wait_all_ready(&client, &b, &k).await?;
    let buckets: Api<GarageBucket> = Api::namespaced(client.clone(), ns());
    let logs = buckets.get("logs-bucket").await?;
    ensure!(
        condition_in(
            logs.status.as_ref().and_then(|s| s.conditions.as_deref()),
            "LifecycleConfigured"
        ) == Some("True".into()),
        "the lifecycle rules of logs-bucket are not reported configured"
    );
    println!(
        "buckets: the upstream samples ({} buckets, {} keys) and a quota bucket are Ready ({:.1}s)",
        b.len(),
        k.len(),
        t.elapsed().as_secs_f64()
    );

    // The sample key's Secret, with the sample template's data keys, works on its bucket.
    let t = Instant::now();
    let app = store_of(
        &client,
        ns(),
        "app-s3-credentials",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "my-bucket",
    )
    .await?;
    let secret = Api::<Secret>::namespaced(client.clone(), ns())
        .get("app-s3-credentials")
        .await?;
    let data = secret.data.clone().unwrap_or_default();
    for k in [
        "S3_ENDPOINT",
        "S3_HOST",
        "S3_SCHEME",
        "AWS_REGION",
        "bucket",
        "credentials",
    ] {
        ensure!(data.contains_key(k), "app-s3-credentials lacks {k}");
    }
    ensure!(
        data["bucket"].0 == b"my-bucket",
        "the bucket name in the Secret is not my-bucket"
    );
    let objects = random_objects(20, 7);
    for (name, body) in &objects {
        app.put(&endpoint, name, body.clone()).await?;
    }
    for (name, body) in &objects {
        ensure!(
            &app.get(&other, name).await? == body,
            "{name} read back different"
        );
    }
    let on_metrics = store_of(
        &client,
        ns(),
        "app-s3-credentials",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "metrics-bucket",
    )
    .await?;
    ensure!(
        refused(on_metrics.get(&endpoint, "anything").await),
        "app-key reached metrics-bucket, which grants it nothing"
    );
    ensure!(
        on_metrics.put(&endpoint, "x", b"x".to_vec()).await.is_err(),
        "app-key wrote to metrics-bucket, which grants it nothing"
    );
    let quota_store = store_of(
        &client,
        ns(),
        "app-s3-credentials",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "quota-bucket",
    )
    .await?;
    quota_store.put(&endpoint, "q1", b"1".to_vec()).await?;
    quota_store.put(&endpoint, "q2", b"2".to_vec()).await?;
    ensure!(
        quota_store
            .put(&endpoint, "q3", b"3".to_vec())
            .await
            .is_err(),
        "Garage accepted a third object in a bucket with maxObjects 2"
    );
    println!(
        "buckets: app-key's Secret reads back 20 checksummed objects on my-bucket, is refused on metrics-bucket, and quota-bucket refuses its third object ({:.1}s)",
        t.elapsed().as_secs_f64()
    );

    // Steady state: nothing the controllers own is rewritten. Garage updates a bucket's
    // object counters shortly after the writes, and the status follows them once first.
    tokio::time::sleep(crate::RESYNC * 3).await;
    let before = versions(&client).await?;
    tokio::time::sleep(crate::RESYNC * 4).await;
    let after = versions(&client).await?;
    ensure!(
        before == after,
        "steady state rewrote {:?}",
        changed(&before, &after)
    );
    println!("buckets: four resyncs rewrote no bucket, key, Secret or grant");

    crate::bucket_uploads::abort_uploads(&buckets, &app, &endpoint).await?;
    cross_namespace(w, &endpoint, &objects).await?;

    // A non-empty bucket stays until it is emptied.
    let t = Instant::now();
    buckets
        .delete("quota-bucket", &DeleteParams::default())
        .await?;
    tokio::time::sleep(crate::RESYNC * 3).await;
    let held = buckets
        .get_opt("quota-bucket")
        .await?
        .context("quota-bucket was deleted with two objects in it")?;
    let message = held
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .map(|c| c.message.clone())
        .unwrap_or_default();
    ensure!(
        message.contains("empty it"),
        "a held bucket does not say what to do: {message}"
    );
    let blocked = held
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "DeletionBlocked"))
        .map(|c| c.status.clone());
    ensure!(
        blocked.as_deref() == Some("True"),
        "a held bucket does not report DeletionBlocked=True: {blocked:?}"
    );
    quota_store.delete(&endpoint, "q1").await?;
    quota_store.delete(&endpoint, "q2").await?;
    wait(
        "quota-bucket gone once empty",
        Duration::from_secs(90),
        || async { Ok(buckets.get_opt("quota-bucket").await?.is_none()) },
    )
    .await?;
    println!(
        "buckets: a bucket with objects is kept (DeletionBlocked, and says so) until emptied, then deleted ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    retained(w, &buckets).await?;

    // A deleted key stops authenticating and its Secret goes.
    let t = Instant::now();
    for (name, _) in &objects {
        app.delete(&endpoint, name).await?;
    }
    app.put(&endpoint, "last", b"last".to_vec()).await?;
    let keys: Api<GarageKey> = Api::namespaced(client.clone(), ns());
    keys.delete("app-key", &DeleteParams::default()).await?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns());
    wait(
        "app-key and its Secret gone",
        Duration::from_secs(90),
        || async {
            Ok(keys.get_opt("app-key").await?.is_none()
                && secrets.get_opt("app-s3-credentials").await?.is_none())
        },
    )
    .await?;
    ensure!(
        refused(app.get(&endpoint, "last").await),
        "the deleted key still reads"
    );
    println!(
        "buckets: a deleted key stops authenticating and its Secret is gone ({:.1}s)",
        t.elapsed().as_secs_f64()
    );

    admin_token(w).await?;
    rotate_admin_token(w).await?;
    // The rollout gave every pod a new address.
    cleanup(w, &s3(w.sim, "garage-storage-0-0")?).await
}

/// The admin token Secret the sample GarageAdminToken writes, as the teardown lists it.
pub(crate) const TOKEN_SECRET: &str = "Secret/garage-admin-bootstrap";

/// The cluster switches to the GarageAdminToken's Secret: the operator copies it into an
/// immutable Secret, and the storage rollout moves every pod to it one at a time while the
/// reconciler keeps reaching old and new pods with their own tokens. Every object reads back.
async fn rotate_admin_token(w: &World<'_>) -> anyhow::Result<()> {
    use shared_types::keys::annotation::ANNOTATION_STATIC_CREDENTIALS_SECRET;
    let t = Instant::now();
    let client = w.client.clone();
    let before = w.clusters.get(crate::NAME).await?;
    let generation = before.metadata.generation.unwrap_or_default() + 1;
    w.clusters
        .patch(
            crate::NAME,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"admin": {"adminTokenSecretRef": {"name": "garage-admin-bootstrap", "key": "admin-token"}}}})),
        )
        .await
        .context("pointing the cluster at the GarageAdminToken's Secret")?;
    let mounts = |p: &k8s_openapi::api::core::v1::Pod, copy: &str| {
        p.spec
            .as_ref()
            .and_then(|s| s.volumes.as_ref())
            .is_some_and(|vs| {
                vs.iter().any(|v| {
                    v.name == "admin-token"
                        && v.secret.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(copy)
                })
            })
    };
    let by_cluster = ListParams::default().labels(&format!(
        "{}={}",
        shared_types::keys::label::LABEL_CLUSTER,
        crate::NAME
    ));
    let rolled = wait(
        "every pod on the pinned copy, StorageRolloutReady=True at the new generation",
        Duration::from_secs(600),
        || async {
            let c = w.clusters.get(crate::NAME).await?;
            let Some(copy) = c
                .annotations()
                .get(ANNOTATION_STATIC_CREDENTIALS_SECRET)
                .cloned()
            else {
                return Ok(false);
            };
            let done = c
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        c.type_ == "StorageRolloutReady"
                            && c.status == "True"
                            && c.observed_generation == Some(generation)
                    })
                });
            let pods = w.pods.list(&by_cluster).await?.items;
            Ok(done && pods.len() == 3 && pods.iter().all(|p| mounts(p, &copy) && is_ready_pod(p)))
        },
    )
    .await;
    if let Err(e) = rolled {
        let c = w.clusters.get(crate::NAME).await?;
        return Err(anyhow!(
            "{e:#}; status: {}",
            serde_json::to_string(&c.status)?
        ));
    }
    let c = w.clusters.get(crate::NAME).await?;
    let copy = c
        .annotations()
        .get(ANNOTATION_STATIC_CREDENTIALS_SECRET)
        .cloned()
        .context("the cluster names no pinned admin token copy")?;
    ensure!(
        copy.starts_with("garage-credentials-"),
        "unexpected copy name {copy}"
    );
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns());
    let pinned = secrets.get(&copy).await?;
    ensure!(
        pinned.immutable == Some(true),
        "the copy {copy} is not immutable"
    );
    let token = String::from_utf8(
        pinned.data.as_ref().context("no data")?["admin-token"]
            .0
            .clone(),
    )?;
    let source = secrets.get("garage-admin-bootstrap").await?;
    ensure!(
        source.data.as_ref().context("no data")?["admin-token"].0 == token.as_bytes(),
        "the copy does not hold the GarageAdminToken's token"
    );
    // The new token is the one Garage now accepts, and every object reads back through it.
    let ip = w
        .sim
        .pod_ip(ns(), "garage-storage-0-0")
        .context("no pod ip")?;
    let admin = garage_admin::AdminClient::new(
        &format!("http://{ip}:3903"),
        &garage_admin::AdminToken::new(token),
    )?;
    read_back(&admin, w.sim).await?;
    let tokens: Api<GarageAdminToken> = Api::namespaced(client.clone(), ns());
    wait(
        "the GarageAdminToken Ready once the cluster uses it",
        Duration::from_secs(60),
        || async {
            let t = tokens.get("admin-bootstrap").await?;
            Ok(ready(
                t.status.as_ref().and_then(|s| s.conditions.as_deref()),
            ))
        },
    )
    .await?;
    // The bucket and key controllers reach the pods with the tokens they run.
    let keys: Api<GarageKey> = Api::namespaced(client.clone(), ns());
    let probe = json!({"metadata": {"name": "after-rotation"}, "spec": {"clusterRef": {"name": crate::NAME}}});
    create::<GarageKey>(&client, probe).await?;
    // Generous: the other sites' drains and rollouts load the same two cores at this point.
    let made = wait(
        "a key made after the rotation Ready",
        Duration::from_secs(180),
        || async {
            let k = keys.get("after-rotation").await?;
            Ok(ready(
                k.status.as_ref().and_then(|s| s.conditions.as_deref()),
            ))
        },
    )
    .await;
    if let Err(e) = made {
        let k = keys.get("after-rotation").await?;
        return Err(anyhow!(
            "{e:#}; its finalizers {:?}, status {}",
            k.metadata.finalizers,
            serde_json::to_string(&k.status)?
        ));
    }
    println!(
        "buckets: the cluster moved to the GarageAdminToken's token: pinned into immutable copy {copy}, every pod replaced one at a time onto it, the token Ready, every object read back with it ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// After the cluster is gone the GarageAdminToken may go, and its Secret with it.
pub(crate) async fn token_gone(w: &World<'_>) -> anyhow::Result<()> {
    let tokens: Api<GarageAdminToken> = Api::namespaced(w.client.clone(), ns());
    tokens
        .delete("admin-bootstrap", &DeleteParams::default())
        .await?;
    let secrets: Api<Secret> = Api::namespaced(w.client.clone(), ns());
    wait(
        "the GarageAdminToken and its Secret gone",
        Duration::from_secs(60),
        || async {
            Ok(tokens.get_opt("admin-bootstrap").await?.is_none()
                && secrets.get_opt("garage-admin-bootstrap").await?.is_none())
        },
    )
    .await?;
    println!(
        "buckets: with the cluster gone the GarageAdminToken was deleted, and its Secret with it"
    );
    Ok(())
}

/// resourceVersions of the objects the bucket and key controllers write.
async fn versions(client: &Client) -> anyhow::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for n in [ns(), APPS_NS] {
        let lp = ListParams::default();
        for o in Api::<GarageBucket>::namespaced(client.clone(), n)
            .list(&lp)
            .await?
            .items
        {
            out.insert(
                format!("bucket/{n}/{}", o.name_any()),
                o.resource_version().unwrap_or_default(),
            );
        }
        for o in Api::<GarageKey>::namespaced(client.clone(), n)
            .list(&lp)
            .await?
            .items
        {
            out.insert(
                format!("key/{n}/{}", o.name_any()),
                o.resource_version().unwrap_or_default(),
            );
        }
        for o in Api::<GarageReferenceGrant>::namespaced(client.clone(), n)
            .list(&lp)
            .await?
            .items
        {
            out.insert(
                format!("grant/{n}/{}", o.name_any()),
                o.resource_version().unwrap_or_default(),
            );
        }
        for o in Api::<Secret>::namespaced(client.clone(), n)
            .list(&lp.clone().labels(shared_types::keys::label::LABEL_KEY))
            .await?
            .items
        {
            out.insert(
                format!("secret/{n}/{}", o.name_any()),
                o.resource_version().unwrap_or_default(),
            );
        }
    }
    Ok(out)
}

fn changed(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    a.iter()
        .filter(|(k, v)| b.get(*k) != Some(v))
        .map(|(k, _)| k.clone())
        .collect()
}

/// The admin token sample gets an immutable Secret whose digest its status reports, and says
/// the cluster does not use it yet.
async fn admin_token(w: &World<'_>) -> anyhow::Result<()> {
    let client = w.client.clone();
    for doc in samples("garage_v1beta1_garageadmintoken.yaml")? {
        create::<GarageAdminToken>(&client, doc).await?;
    }
    let tokens: Api<GarageAdminToken> = Api::namespaced(client.clone(), ns());
    wait(
        "the admin token's Secret",
        Duration::from_secs(60),
        || async {
            let t = tokens.get("admin-bootstrap").await?;
            Ok(t.status
                .as_ref()
                .and_then(|s| s.token_digest.clone())
                .is_some())
        },
    )
    .await?;
    let t = tokens.get("admin-bootstrap").await?;
    let status = t.status.context("no status")?;
    let s = Api::<Secret>::namespaced(client.clone(), ns())
        .get("garage-admin-bootstrap")
        .await?;
    ensure!(
        s.immutable == Some(true),
        "the admin token Secret is not immutable"
    );
    let token = &s.data.as_ref().context("no data")?["admin-token"].0;
    ensure!(token.len() == 64, "the token is not 32 random bytes in hex");
    let digest = reconciler::names::sha256_hex(token);
    ensure!(
        status.token_digest.as_deref() == Some(digest.as_str()),
        "status.tokenDigest does not match the Secret"
    );
    let message = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.message)
        .unwrap_or_default();
    ensure!(
        message.contains("adminTokenSecretRef"),
        "the token does not say the cluster must reference it: {message}"
    );
    println!(
        "buckets: the admin token sample has an immutable 32-byte token Secret matching status.tokenDigest, and says how the cluster adopts it"
    );
    Ok(())
}

/// Everything this step made goes, through the finalizers, before the cluster's teardown.
async fn cleanup(w: &World<'_>, endpoint: &str) -> anyhow::Result<()> {
    let client = w.client.clone();
    let admin = store_of(
        &client,
        ns(),
        "admin-s3-credentials",
        "access-key-id",
        "secret-access-key",
        "my-bucket",
    )
    .await?;
    admin.delete(endpoint, "last").await?;
    let dp = DeleteParams::default();
    for n in [ns(), APPS_NS] {
        for b in Api::<GarageBucket>::namespaced(client.clone(), n)
            .list(&ListParams::default())
            .await?
            .items
        {
            Api::<GarageBucket>::namespaced(client.clone(), n)
                .delete(&b.name_any(), &dp)
                .await?;
        }
        for k in Api::<GarageKey>::namespaced(client.clone(), n)
            .list(&ListParams::default())
            .await?
            .items
        {
            Api::<GarageKey>::namespaced(client.clone(), n)
                .delete(&k.name_any(), &dp)
                .await?;
        }
        // The admin token stays: the cluster uses it until its teardown.
        for g in Api::<GarageReferenceGrant>::namespaced(client.clone(), n)
            .list(&ListParams::default())
            .await?
            .items
        {
            Api::<GarageReferenceGrant>::namespaced(client.clone(), n)
                .delete(&g.name_any(), &dp)
                .await?;
        }
    }
    wait(
        "every bucket and key gone",
        Duration::from_secs(180),
        || async {
            let mut left = 0;
            for n in [ns(), APPS_NS] {
                left += Api::<DynamicObject>::namespaced_with(
                    client.clone(),
                    n,
                    &kube::api::ApiResource::erase::<GarageBucket>(&()),
                )
                .list(&ListParams::default())
                .await?
                .items
                .len();
                left += Api::<GarageKey>::namespaced(client.clone(), n)
                    .list(&ListParams::default())
                    .await?
                    .items
                    .len();
            }
            Ok(left == 0)
        },
    )
    .await?;
    Api::<Secret>::namespaced(client.clone(), ns())
        .delete("existing-credentials", &dp)
        .await?;
    Ok(())
}

fn is_ready_pod(p: &k8s_openapi::api::core::v1::Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// A GarageBucket with `deletionPolicy: Retain` goes at once when deleted, and its Garage
/// bucket stays.
async fn retained(w: &World<'_>, buckets: &Api<GarageBucket>) -> anyhow::Result<()> {
    let t = Instant::now();
    let manifest: GarageBucket = serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageBucket",
        "metadata": {"name": "retained-bucket"},
        "spec": {"clusterRef": {"name": crate::NAME}, "deletionPolicy": "Retain"},
    }))?;
    buckets.create(&PostParams::default(), &manifest).await?;
    let id_of = || async {
        anyhow::Ok(
            buckets
                .get("retained-bucket")
                .await?
                .status
                .and_then(|s| s.bucket_id),
        )
    };
    wait(
        "retained-bucket created in Garage",
        Duration::from_secs(90),
        || async { Ok(id_of().await?.is_some()) },
    )
    .await?;
    let id = id_of().await?.context("no bucket ID")?;
    buckets
        .delete("retained-bucket", &DeleteParams::default())
        .await?;
    wait("retained-bucket gone", Duration::from_secs(90), || async {
        Ok(buckets.get_opt("retained-bucket").await?.is_none())
    })
    .await?;
    let admin = admin_client_as_mounted(&w.client, w.sim, "garage-storage-0-0").await?;
    let info = admin
        .bucket_info(garage_admin::BucketLookup::Id(&id))
        .await
        .context("the retained bucket is gone from Garage")?;
    ensure!(info.id == id, "another bucket answered: {}", info.id);
    println!(
        "buckets: a GarageBucket with deletionPolicy Retain was deleted at once and its Garage bucket kept ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
