//! Buckets, keys, permissions, aliases, website, quotas, CORS and lifecycle rules, admin
//! tokens, and the typed errors they produce.

use garage_admin::{
    AdminClient, AdminToken, AdminTokenSpec, BucketAlias, BucketLookup, BucketPermissions,
    BucketQuotas, BucketUpdate, CorsRule, CreateBucket, GarageError, KeyPermissions, KeySpec,
    LifecycleExpiration, LifecycleFilter, LifecycleRule, Lookup, WebsiteAccess,
};

use crate::common::{S3Access, client, single_node};

const MISSING_ID: &str = "00000000000000000000000000000000000000000000000000000000000000ff";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_and_key_lifecycle() {
    let cluster = single_node();
    let admin = client(&cluster, 0);

    // Keys.
    let key = admin
        .create_key(&KeySpec {
            name: Some("app".into()),
            ..KeySpec::default()
        })
        .await
        .unwrap();
    assert!(key.secret_access_key.is_some());
    assert!(!format!("{key:?}").contains(key.secret_access_key.as_deref().unwrap()));
    let shown = admin
        .key_info(Lookup::Id(&key.access_key_id), false)
        .await
        .unwrap();
    assert_eq!(shown.secret_access_key, None);
    let with_secret = admin.key_info(Lookup::Search("app"), true).await.unwrap();
    assert_eq!(with_secret.secret_access_key, key.secret_access_key);
    assert!(
        admin
            .list_keys()
            .await
            .unwrap()
            .iter()
            .any(|k| k.id == key.access_key_id)
    );
    let updated = admin
        .update_key(
            &key.access_key_id,
            &KeySpec {
                allow: Some(KeyPermissions {
                    create_bucket: true,
                }),
                ..KeySpec::default()
            },
        )
        .await
        .unwrap();
    assert!(updated.permissions.create_bucket);

    // Buckets: create, duplicate alias, lookups.
    let bucket = admin
        .create_bucket(&CreateBucket {
            global_alias: Some("photos".into()),
            ..CreateBucket::default()
        })
        .await
        .unwrap();
    assert_eq!(bucket.global_aliases, vec!["photos".to_string()]);
    match admin
        .create_bucket(&CreateBucket {
            global_alias: Some("photos".into()),
            ..CreateBucket::default()
        })
        .await
    {
        Err(GarageError::AlreadyExists { .. }) => {}
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    let by_alias = admin
        .bucket_info(BucketLookup::GlobalAlias("photos"))
        .await
        .unwrap();
    assert_eq!(by_alias.id, bucket.id);
    assert!(
        admin
            .list_buckets()
            .await
            .unwrap()
            .iter()
            .any(|b| b.id == bucket.id)
    );

    // Permissions and aliases.
    let all = BucketPermissions {
        read: true,
        write: true,
        owner: true,
    };
    let granted = admin
        .allow_bucket_key(&bucket.id, &key.access_key_id, all)
        .await
        .unwrap();
    assert_eq!(granted.keys[0].permissions, all);
    let denied = admin
        .deny_bucket_key(
            &bucket.id,
            &key.access_key_id,
            BucketPermissions {
                owner: true,
                ..BucketPermissions::default()
            },
        )
        .await
        .unwrap();
    assert!(!denied.keys[0].permissions.owner && denied.keys[0].permissions.read);
    let local = BucketAlias::Local {
        bucket_id: bucket.id.clone(),
        access_key_id: key.access_key_id.clone(),
        local_alias: "my-photos".into(),
    };
    let aliased = admin.add_bucket_alias(&local).await.unwrap();
    assert_eq!(
        aliased.keys[0].bucket_local_aliases,
        vec!["my-photos".to_string()]
    );
    let global = BucketAlias::Global {
        bucket_id: bucket.id.clone(),
        global_alias: "pictures".into(),
    };
    let aliased = admin.add_bucket_alias(&global).await.unwrap();
    assert_eq!(aliased.global_aliases.len(), 2);
    admin.remove_bucket_alias(&global).await.unwrap();
    let unaliased = admin.remove_bucket_alias(&local).await.unwrap();
    assert!(unaliased.keys[0].bucket_local_aliases.is_empty());

    // Website, quotas, CORS and lifecycle rules round-trip.
    let cors = CorsRule {
        id: Some("web".into()),
        max_age_seconds: Some(300),
        allowed_origins: vec!["https://example.com".into()],
        allowed_methods: vec!["GET".into(), "PUT".into()],
        allowed_headers: vec!["*".into()],
        expose_headers: vec!["ETag".into()],
    };
    let lifecycle = LifecycleRule {
        id: Some("expire-tmp".into()),
        status: "Enabled".into(),
        filter: Some(LifecycleFilter {
            prefix: Some("tmp/".into()),
            ..LifecycleFilter::default()
        }),
        expiration: Some(LifecycleExpiration {
            days: Some(7),
            date: None,
        }),
        abort_incomplete_multipart_upload: None,
    };
    let quotas = BucketQuotas {
        max_size: Some(1 << 30),
        max_objects: Some(1000),
    };
    let configured = admin
        .update_bucket(
            &bucket.id,
            &BucketUpdate {
                website_access: Some(WebsiteAccess {
                    enabled: true,
                    index_document: Some("index.html".into()),
                    error_document: Some("404.html".into()),
                    routing_rules: None,
                }),
                quotas: Some(quotas),
                cors_rules: Some(vec![cors.clone()]),
                lifecycle_rules: Some(vec![lifecycle.clone()]),
            },
        )
        .await
        .unwrap();
    assert!(configured.website_access);
    let website = configured.website_config.as_ref().unwrap();
    assert_eq!(website.index_document, "index.html");
    assert_eq!(website.error_document.as_deref(), Some("404.html"));
    assert_eq!(configured.quotas, quotas);
    assert_eq!(configured.cors_rules, Some(vec![cors]));
    assert_eq!(configured.lifecycle_rules, Some(vec![lifecycle]));
    // Empty lists clear the rules; `None` leaves the website alone.
    let cleared = admin
        .update_bucket(
            &bucket.id,
            &BucketUpdate {
                quotas: Some(BucketQuotas::default()),
                cors_rules: Some(vec![]),
                lifecycle_rules: Some(vec![]),
                ..BucketUpdate::default()
            },
        )
        .await
        .unwrap();
    assert!(cleared.website_access);
    assert_eq!(cleared.quotas, BucketQuotas::default());
    assert!(cleared.cors_rules.unwrap_or_default().is_empty());
    assert!(cleared.lifecycle_rules.unwrap_or_default().is_empty());

    // A bucket with an object cannot be deleted; once empty it can, and is then absent.
    let s3 = S3Access::create(&cluster, &admin, "full-bucket").await;
    s3.put("hello.txt", b"hello".to_vec()).await;
    match admin.delete_bucket(&s3.bucket_id).await {
        Err(GarageError::BucketNotEmpty { .. }) => {}
        other => panic!("expected BucketNotEmpty, got {other:?}"),
    }
    s3.delete("hello.txt").await;
    admin.delete_bucket(&s3.bucket_id).await.unwrap();
    let gone = admin
        .bucket_info(BucketLookup::Id(&s3.bucket_id))
        .await
        .unwrap_err();
    assert!(gone.is_not_found(), "{gone:?}");
    assert_eq!(
        admin
            .cleanup_incomplete_uploads(&bucket.id, 0)
            .await
            .unwrap(),
        0
    );
    admin.delete_bucket(&bucket.id).await.unwrap();

    // Deleted keys are absent, and their id can never be imported again.
    let secret = key.secret_access_key.clone().unwrap();
    admin.delete_key(&key.access_key_id).await.unwrap();
    let gone = admin
        .key_info(Lookup::Id(&key.access_key_id), false)
        .await
        .unwrap_err();
    assert!(gone.is_not_found(), "{gone:?}");
    match admin
        .import_key(&key.access_key_id, &secret, Some("again"))
        .await
    {
        Err(GarageError::AlreadyExists { .. }) => {}
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    let imported = admin
        .import_key(
            "GK0123456789abcdef01234567",
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            Some("imported"),
        )
        .await
        .unwrap();
    assert_eq!(imported.name, "imported");

    // Unknown ids are typed absences.
    for err in [
        admin
            .bucket_info(BucketLookup::Id(MISSING_ID))
            .await
            .unwrap_err(),
        admin.delete_bucket(MISSING_ID).await.unwrap_err(),
        admin
            .key_info(Lookup::Id("GK000000000000000000000000"), false)
            .await
            .unwrap_err(),
        admin
            .admin_token_info(Lookup::Id("nonexistent"))
            .await
            .unwrap_err(),
    ] {
        assert!(err.is_not_found(), "{err:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_tokens_are_scoped_and_revocable() {
    let cluster = single_node();
    let admin = client(&cluster, 0);

    let current = admin.current_admin_token_info().await.unwrap();
    assert!(
        current.id.is_none(),
        "the config token has no id: {current:?}"
    );

    let created = admin
        .create_admin_token(&AdminTokenSpec {
            name: Some("status-reader".into()),
            scope: Some(vec!["GetClusterStatus".into()]),
            never_expires: true,
            ..AdminTokenSpec::default()
        })
        .await
        .unwrap();
    let secret = created.secret_token.expose().to_string();
    assert!(!format!("{created:?}").contains(&secret));
    let id = created.info.id.clone().unwrap();
    assert_eq!(created.info.scope, vec!["GetClusterStatus".to_string()]);

    let scoped = AdminClient::new(&cluster.admin_endpoint(0), &AdminToken::new(&secret)).unwrap();
    scoped.cluster_status().await.unwrap();
    match scoped.list_buckets().await {
        Err(e @ GarageError::Forbidden { .. }) => assert!(!e.to_string().contains(&secret)),
        other => panic!("expected Forbidden, got {other:?}"),
    }
    assert_eq!(
        scoped.current_admin_token_info().await.unwrap().name,
        "status-reader"
    );

    let updated = admin
        .update_admin_token(
            &id,
            &AdminTokenSpec {
                scope: Some(vec!["GetClusterStatus".into(), "ListBuckets".into()]),
                ..AdminTokenSpec::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(updated.scope.len(), 2);
    scoped.list_buckets().await.unwrap();
    assert!(
        admin
            .list_admin_tokens()
            .await
            .unwrap()
            .iter()
            .any(|t| t.id.as_deref() == Some(id.as_str()))
    );
    assert_eq!(
        admin
            .admin_token_info(Lookup::Search("status-reader"))
            .await
            .unwrap()
            .id,
        Some(id.clone())
    );

    admin.delete_admin_token(&id).await.unwrap();
    let refused = scoped.cluster_status().await.unwrap_err();
    assert!(
        matches!(refused, GarageError::Forbidden { .. }),
        "{refused:?}"
    );
    assert!(!refused.is_not_found() && !refused.is_retryable());
}
