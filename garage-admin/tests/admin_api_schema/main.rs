//! Every DTO of the Admin API client checked against the OpenAPI document of the pinned
//! `garage` binary (`garage admin-api-schema`).
//!
//! For each response type: every field name it declares must be a property of the schema
//! component it models, and an example built from that component (every optional property
//! present) must deserialize into it, which checks the field types. For each request type: a
//! fully populated value is serialized and every key and JSON type is checked against the
//! schema.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod schema;

use std::collections::BTreeMap;

use garage_admin::*;
use schema::{NODE, Schema, declared_fields};
use serde::Deserialize;
use serde_json::{Value, json};

/// Field names kept for older Garage versions, absent from the 2.5.0 schema on purpose.
const OLDER_GARAGE_ALIASES: &[&str] = &["storageNodesOk"];

fn check_response<T: for<'de> Deserialize<'de>>(
    schema: &Schema,
    component: &str,
    problems: &mut Vec<String>,
) {
    let (name, fields) = declared_fields::<T>();
    let props = schema.properties(schema.component(component));
    for f in fields {
        if !props.contains_key(*f) && !OLDER_GARAGE_ALIASES.contains(f) {
            problems.push(format!("{name}.{f}: no such property in {component}"));
        }
    }
    check_parses::<T>(schema, component, problems);
}

fn check_parses<T: for<'de> Deserialize<'de>>(
    schema: &Schema,
    component: &str,
    problems: &mut Vec<String>,
) {
    let example = schema.example(schema.component(component), &mut Vec::new());
    if let Err(e) = serde_json::from_value::<T>(example.clone()) {
        problems.push(format!(
            "{}: an example of {component} does not parse: {e}\n  example: {example}",
            std::any::type_name::<T>()
        ));
    }
}

fn check_request<T: serde::Serialize>(
    schema: &Schema,
    value: &T,
    component: &str,
    problems: &mut Vec<String>,
) {
    let v = serde_json::to_value(value).unwrap();
    problems.extend(schema.check_json(component, &v, schema.component(component)));
}

#[test]
fn response_types_match_the_pinned_schema() {
    let schema = Schema::load();
    let mut p = Vec::new();
    check_response::<ClusterHealth>(&schema, "GetClusterHealthResponse", &mut p);
    check_response::<ClusterStatus>(&schema, "GetClusterStatusResponse", &mut p);
    check_response::<NodeStatus>(&schema, "NodeResp", &mut p);
    check_response::<NodeRole>(&schema, "NodeAssignedRole", &mut p);
    check_response::<FreeSpace>(&schema, "FreeSpaceResp", &mut p);
    check_response::<ClusterStatistics>(&schema, "GetClusterStatisticsResponse", &mut p);
    check_response::<NodeInfo>(&schema, "LocalGetNodeInfoResponse", &mut p);
    check_response::<ConnectionParameters>(&schema, "ConnectionParameters", &mut p);
    check_response::<NodeStatistics>(&schema, "LocalGetNodeStatisticsResponse", &mut p);
    check_response::<BlockManagerStats>(&schema, "NodeBlockManagerStats", &mut p);
    check_response::<TableStats>(&schema, "NodeTableStats", &mut p);
    check_response::<ConnectResult>(&schema, "ConnectNodeResponse", &mut p);
    check_response::<ClusterLayout>(&schema, "GetClusterLayoutResponse", &mut p);
    check_response::<LayoutRole>(&schema, "LayoutNodeRole", &mut p);
    check_response::<LayoutParameters>(&schema, "LayoutParameters", &mut p);
    check_parses::<StagedRoleChange>(&schema, "NodeRoleChange", &mut p);
    check_parses::<ZoneRedundancy>(&schema, "ZoneRedundancy", &mut p);
    check_response::<AppliedLayout>(&schema, "ApplyClusterLayoutResponse", &mut p);
    check_parses::<LayoutPreview>(&schema, "PreviewClusterLayoutChangesResponse", &mut p);
    check_response::<LayoutHistory>(&schema, "GetClusterLayoutHistoryResponse", &mut p);
    check_response::<LayoutVersion>(&schema, "ClusterLayoutVersion", &mut p);
    check_response::<UpdateTrackers>(&schema, "NodeUpdateTrackers", &mut p);
    check_response::<SkipDeadNodesResult>(&schema, "ClusterLayoutSkipDeadNodesResponse", &mut p);
    check_response::<WorkerInfo>(&schema, "WorkerInfoResp", &mut p);
    check_response::<WorkerLastError>(&schema, "WorkerLastError", &mut p);
    check_parses::<WorkerState>(&schema, "WorkerStateResp", &mut p);
    check_response::<WorkerVariable>(&schema, "LocalSetWorkerVariableResponse", &mut p);
    check_parses::<BTreeMap<String, String>>(&schema, "LocalGetWorkerVariableResponse", &mut p);
    check_response::<BlockError>(&schema, "BlockError", &mut p);
    check_response::<BlockInfo>(&schema, "LocalGetBlockInfoResponse", &mut p);
    check_response::<BlockVersion>(&schema, "BlockVersion", &mut p);
    check_response::<RetryCount>(&schema, "LocalRetryBlockResyncResponse", &mut p);
    check_response::<PurgeResult>(&schema, "LocalPurgeBlocksResponse", &mut p);
    check_response::<AdminTokenInfo>(&schema, "GetAdminTokenInfoResponse", &mut p);
    // Flattened (no field list of its own): the example must parse, and the one field it
    // adds must exist.
    check_parses::<CreatedAdminToken>(&schema, "CreateAdminTokenResponse", &mut p);
    if !schema
        .properties(schema.component("CreateAdminTokenResponse"))
        .contains_key("secretToken")
    {
        p.push("CreatedAdminToken.secretToken: no such property".into());
    }
    check_response::<KeyListItem>(&schema, "ListKeysResponseItem", &mut p);
    check_response::<KeyInfo>(&schema, "GetKeyInfoResponse", &mut p);
    check_response::<KeyPermissions>(&schema, "KeyPerm", &mut p);
    check_response::<KeyBucket>(&schema, "KeyInfoBucketResponse", &mut p);
    check_response::<BucketListItem>(&schema, "ListBucketsResponseItem", &mut p);
    check_response::<LocalAlias>(&schema, "BucketLocalAlias", &mut p);
    check_response::<BucketInfo>(&schema, "GetBucketInfoResponse", &mut p);
    check_response::<BucketKey>(&schema, "GetBucketInfoKey", &mut p);
    check_response::<BucketPermissions>(&schema, "ApiBucketKeyPerm", &mut p);
    check_response::<BucketQuotas>(&schema, "ApiBucketQuotas", &mut p);
    check_response::<WebsiteConfig>(&schema, "GetBucketInfoWebsiteResponse", &mut p);
    check_response::<RoutingRule>(&schema, "website.RoutingRule", &mut p);
    check_response::<RoutingCondition>(&schema, "website.Condition", &mut p);
    check_response::<Redirect>(&schema, "website.Redirect", &mut p);
    check_response::<CorsRule>(&schema, "cors.Rule", &mut p);
    check_response::<LifecycleRule>(&schema, "lifecycle.Rule", &mut p);
    check_response::<LifecycleFilter>(&schema, "lifecycle.Filter", &mut p);
    check_response::<LifecycleExpiration>(&schema, "lifecycle.Expiration", &mut p);
    check_response::<AbortIncompleteMultipartUpload>(
        &schema,
        "lifecycle.AbortIncompleteMpu",
        &mut p,
    );
    assert!(
        p.is_empty(),
        "DTOs drift from the schema:\n{}",
        p.join("\n")
    );
}

#[test]
fn request_types_match_the_pinned_schema() {
    let schema = Schema::load();
    let mut p = Vec::new();
    let id: NodeId = NODE.parse().unwrap();
    for change in [
        RoleChange::storage(id.clone(), "dc1", 1 << 30, vec!["t".into()]),
        RoleChange::gateway(id.clone(), "dc1", vec![]),
        RoleChange::remove(id),
    ] {
        check_request(&schema, &change, "NodeRoleChangeRequest", &mut p);
    }
    for zr in [ZoneRedundancy::Maximum, ZoneRedundancy::AtLeast(2)] {
        let params = LayoutParameters {
            zone_redundancy: zr,
        };
        check_request(&schema, &params, "LayoutParameters", &mut p);
    }
    let filter = WorkerFilter {
        busy_only: true,
        error_only: true,
    };
    check_request(&schema, &filter, "LocalListWorkersRequest", &mut p);
    for repair in [
        RepairType::Tables,
        RepairType::Blocks,
        RepairType::Versions,
        RepairType::MultipartUploads,
        RepairType::BlockRefs,
        RepairType::BlockRc,
        RepairType::Rebalance,
        RepairType::Scrub(ScrubCommand::Start),
        RepairType::Scrub(ScrubCommand::Pause),
        RepairType::Scrub(ScrubCommand::Resume),
        RepairType::Scrub(ScrubCommand::Cancel),
        RepairType::Aliases,
        RepairType::ClearResyncQueue,
    ] {
        check_request(&schema, &repair, "RepairType", &mut p);
    }
    for sel in [
        RetrySelection::all(),
        RetrySelection::Hashes {
            block_hashes: vec![NODE.into()],
        },
    ] {
        check_request(&schema, &sel, "LocalRetryBlockResyncRequest", &mut p);
    }
    let token = AdminTokenSpec {
        name: Some("n".into()),
        expiration: Some("2030-01-01T00:00:00Z".into()),
        never_expires: true,
        scope: Some(vec!["*".into()]),
    };
    check_request(&schema, &token, "UpdateAdminTokenRequestBody", &mut p);
    let perm = KeyPermissions {
        create_bucket: true,
    };
    let key = KeySpec {
        name: Some("n".into()),
        expiration: Some("2030-01-01T00:00:00Z".into()),
        never_expires: true,
        allow: Some(perm),
        deny: Some(perm),
    };
    check_request(&schema, &key, "UpdateKeyRequestBody", &mut p);
    let all = BucketPermissions {
        read: true,
        write: true,
        owner: true,
    };
    let create = CreateBucket {
        global_alias: Some("b".into()),
        local_alias: Some(CreateLocalAlias {
            access_key_id: "GK1".into(),
            alias: "b".into(),
            allow: Some(all),
        }),
    };
    check_request(&schema, &create, "CreateBucketRequest", &mut p);
    check_request(
        &schema,
        &full_bucket_update(),
        "UpdateBucketRequestBody",
        &mut p,
    );
    for alias in [
        BucketAlias::Global {
            bucket_id: NODE.into(),
            global_alias: "a".into(),
        },
        BucketAlias::Local {
            bucket_id: NODE.into(),
            access_key_id: "GK1".into(),
            local_alias: "a".into(),
        },
    ] {
        check_request(&schema, &alias, "BucketAliasEnum", &mut p);
    }
    assert!(
        p.is_empty(),
        "requests drift from the schema:\n{}",
        p.join("\n")
    );
}

fn full_bucket_update() -> BucketUpdate {
    let filter = LifecycleFilter {
        and: Some(Box::new(LifecycleFilter {
            prefix: Some("p/".into()),
            object_size_greater_than: Some(1),
            object_size_less_than: Some(10),
            and: None,
        })),
        prefix: Some("p/".into()),
        object_size_greater_than: Some(1),
        object_size_less_than: Some(10),
    };
    BucketUpdate {
        website_access: Some(WebsiteAccess {
            enabled: true,
            index_document: Some("index.html".into()),
            error_document: Some("error.html".into()),
            routing_rules: Some(vec![RoutingRule {
                condition: Some(RoutingCondition {
                    http_error_code_returned_equals: Some(404),
                    key_prefix_equals: Some("old/".into()),
                }),
                redirect: Redirect {
                    host_name: Some("example.com".into()),
                    protocol: Some("https".into()),
                    http_redirect_code: Some(301),
                    replace_key_prefix_with: Some("new/".into()),
                    replace_key_with: None,
                },
            }]),
        }),
        quotas: Some(BucketQuotas {
            max_size: Some(1 << 30),
            max_objects: Some(1000),
        }),
        cors_rules: Some(vec![CorsRule {
            id: Some("c".into()),
            max_age_seconds: Some(60),
            allowed_origins: vec!["*".into()],
            allowed_methods: vec!["GET".into()],
            allowed_headers: vec!["*".into()],
            expose_headers: vec!["ETag".into()],
        }]),
        lifecycle_rules: Some(vec![LifecycleRule {
            id: Some("l".into()),
            status: "Enabled".into(),
            filter: Some(filter),
            expiration: Some(LifecycleExpiration {
                days: Some(30),
                date: None,
            }),
            abort_incomplete_multipart_upload: Some(AbortIncompleteMultipartUpload {
                days_after_initiation: 2,
            }),
        }]),
    }
}

/// The checker itself: a field the schema lacks, and a type it contradicts, are reported.
#[test]
fn the_checker_catches_drift() {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Drifted {
        layout_version: u64,
        nodes: Vec<Value>,
        no_such_field: Option<u64>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct WrongType {
        layout_version: String,
    }
    let schema = Schema::load();
    let mut p = Vec::new();
    check_response::<Drifted>(&schema, "GetClusterStatusResponse", &mut p);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].contains("noSuchField"), "{p:?}");
    p.clear();
    check_response::<WrongType>(&schema, "GetClusterStatusResponse", &mut p);
    assert_eq!(p.len(), 1, "{p:?}");
    let mut p = Vec::new();
    check_request(
        &schema,
        &json!({"roles": [{"id": NODE, "zone": "z", "capacity": 1}]}),
        "UpdateClusterLayoutRequest",
        &mut p,
    );
    assert!(!p.is_empty(), "a role without tags must be reported");
}
