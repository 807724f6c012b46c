//! Site D's cross-namespace step, run from [`crate::buckets`] once the site's keys and buckets
//! are Ready: a GarageKey in another namespace ([`APPS_NS`]) reads `my-bucket` through
//! GarageReferenceGrants for the cluster and the bucket, which report it in use; it loses its
//! read when the bucket grant goes; and a key naming a bucket it has no grant for gets nothing.

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::garage_key::GarageKey;
use shared_types::garage_reference_grant::GarageReferenceGrant;

use crate::buckets::{APPS_NS, create, ready, refused, store_of};
use crate::{World, ns};

/// A key in another namespace reads my-bucket through grants; loses it when the bucket grant
/// goes; a key with no bucket grant gets nothing.
pub(crate) async fn cross_namespace(
    w: &World<'_>,
    endpoint: &str,
    objects: &[(String, Vec<u8>)],
) -> anyhow::Result<()> {
    let client = w.client.clone();
    let t = Instant::now();
    match Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": APPS_NS}}))?,
        )
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(e.into()),
    }
    for (name, to) in [
        (
            "apps-cluster",
            json!([{"kind": "GarageCluster", "name": crate::NAME}]),
        ),
        (
            "apps-bucket",
            json!([{"kind": "GarageBucket", "name": "my-bucket"}]),
        ),
    ] {
        create::<GarageReferenceGrant>(
            &client,
            json!({
                "metadata": {"name": name},
                "spec": {"from": [{"kind": "GarageKey", "namespace": APPS_NS}], "to": to},
            }),
        )
        .await?;
    }
    let remote: GarageKey = serde_json::from_value(json!({
        "metadata": {"name": "remote-key", "namespace": APPS_NS},
        "spec": {
            "clusterRef": {"name": crate::NAME, "namespace": ns()},
            "bucketPermissions": [{"bucketRef": {"name": "my-bucket", "namespace": ns()}, "read": true}],
        },
    }))?;
    let apps_keys: Api<GarageKey> = Api::namespaced(client.clone(), APPS_NS);
    apps_keys
        .create(&PostParams::default(), &remote)
        .await
        .context("creating the cross-namespace key")?;
    wait("remote-key Ready", Duration::from_secs(120), || async {
        let k = apps_keys.get("remote-key").await?;
        Ok(ready(
            k.status.as_ref().and_then(|s| s.conditions.as_deref()),
        ))
    })
    .await?;
    let remote_store = store_of(
        &client,
        APPS_NS,
        "remote-key",
        "access-key-id",
        "secret-access-key",
        "my-bucket",
    )
    .await?;
    for (name, body) in objects {
        ensure!(
            &remote_store.get(endpoint, name).await? == body,
            "{name} read through the granted key differs"
        );
    }
    let grants: Api<GarageReferenceGrant> = Api::namespaced(client.clone(), ns());
    wait(
        "apps-bucket in use by remote-key",
        Duration::from_secs(60),
        || async {
            let g = grants.get("apps-bucket").await?;
            Ok(g.status
                .and_then(|s| s.in_use_by)
                .is_some_and(|u| u.iter().any(|u| u.name.as_deref() == Some("remote-key"))))
        },
    )
    .await?;
    println!(
        "buckets: a key in {APPS_NS} reads every object of my-bucket through two grants, which report it in use ({:.1}s)",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    grants
        .delete("apps-bucket", &DeleteParams::default())
        .await?;
    let first = &objects[0].0;
    wait(
        "the key's read revoked with its grant",
        Duration::from_secs(90),
        || async { Ok(refused(remote_store.get(endpoint, first).await)) },
    )
    .await?;
    println!(
        "buckets: removing the bucket grant revoked the key's read ({:.1}s)",
        t.elapsed().as_secs_f64()
    );

    // Without a grant for the bucket the key gets nothing: admission refuses it, or, if a
    // write slips through, the reconciler grants nothing.
    let ungranted: GarageKey = serde_json::from_value(json!({
        "metadata": {"name": "ungranted-key", "namespace": APPS_NS},
        "spec": {
            "clusterRef": {"name": crate::NAME, "namespace": ns()},
            "bucketPermissions": [{"bucketRef": {"name": "metrics-bucket", "namespace": ns()}, "read": true}],
        },
    }))?;
    match apps_keys.create(&PostParams::default(), &ungranted).await {
        Err(kube::Error::Api(e)) if e.code == 400 || e.code == 403 || e.code == 422 => {
            println!(
                "buckets: a key naming a bucket in another namespace without a grant is refused at admission: {}",
                e.message
            );
        }
        Err(e) => return Err(e.into()),
        Ok(_) => {
            wait("ungranted-key Ready", Duration::from_secs(120), || async {
                let k = apps_keys.get("ungranted-key").await?;
                Ok(ready(
                    k.status.as_ref().and_then(|s| s.conditions.as_deref()),
                ))
            })
            .await?;
            let s = store_of(
                &client,
                APPS_NS,
                "ungranted-key",
                "access-key-id",
                "secret-access-key",
                "metrics-bucket",
            )
            .await?;
            ensure!(
                refused(s.get(endpoint, "anything").await),
                "a key with no grant reached metrics-bucket"
            );
            println!(
                "buckets: a key naming a bucket in another namespace without a grant gets no access to it"
            );
        }
    }
    for name in ["remote-key", "ungranted-key"] {
        let _ = apps_keys.delete(name, &DeleteParams::default()).await;
    }
    let _ = grants
        .delete("apps-cluster", &DeleteParams::default())
        .await;
    Ok(())
}
