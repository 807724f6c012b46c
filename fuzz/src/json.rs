//! JSON documents built from fuzz bytes in the shape of Garage's answers. Object keys come
//! from the field names of the Admin API's responses and strings are often node IDs or the
//! words Garage uses for states, so that a structured input gets past the first field check
//! far more often than mutated text does.

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Number, Value};

/// Field names of every response type `garage-admin` decodes (and of Garage's error body).
const KEYS: &[&str] = &[
    "status",
    "knownNodes",
    "connectedNodes",
    "storageNodes",
    "storageNodesUp",
    "storageNodesOk",
    "partitions",
    "partitionsQuorum",
    "partitionsAllOk",
    "layoutVersion",
    "nodes",
    "id",
    "garageVersion",
    "addr",
    "hostname",
    "isUp",
    "lastSeenSecsAgo",
    "role",
    "draining",
    "dataPartition",
    "metadataPartition",
    "resyncQueueLen",
    "zone",
    "tags",
    "capacity",
    "available",
    "total",
    "freeform",
    "bucketCount",
    "totalObjectCount",
    "totalObjectBytes",
    "dataAvail",
    "metadataAvail",
    "incompleteAvailInfo",
    "nodeId",
    "garageFeatures",
    "rustVersion",
    "dbEngine",
    "connectionParameters",
    "region",
    "s3Endpoint",
    "s3UsePathStyle",
    "k2vEndpoint",
    "blockManagerStats",
    "tableStats",
    "rcEntries",
    "resyncErrors",
    "tableName",
    "items",
    "merkleItems",
    "merkleQueueLen",
    "insertQueueLen",
    "gcQueueLen",
    "success",
    "error",
    "version",
    "roles",
    "parameters",
    "partitionSize",
    "stagedRoleChanges",
    "stagedParameters",
    "storedPartitions",
    "usableCapacity",
    "zoneRedundancy",
    "atLeast",
    "remove",
    "message",
    "layout",
    "newLayout",
    "currentVersion",
    "minAck",
    "versions",
    "updateTrackers",
    "gatewayNodes",
    "ack",
    "sync",
    "syncAck",
    "ackUpdated",
    "syncUpdated",
    "created",
    "globalAliases",
    "localAliases",
    "accessKeyId",
    "alias",
    "websiteAccess",
    "websiteConfig",
    "keys",
    "objects",
    "bytes",
    "unfinishedUploads",
    "unfinishedMultipartUploads",
    "unfinishedMultipartUploadParts",
    "unfinishedMultipartUploadBytes",
    "quotas",
    "corsRules",
    "lifecycleRules",
    "name",
    "permissions",
    "bucketLocalAliases",
    "read",
    "write",
    "owner",
    "maxSize",
    "maxObjects",
    "indexDocument",
    "errorDocument",
    "routingRules",
    "Condition",
    "Redirect",
    "HttpErrorCodeReturnedEquals",
    "KeyPrefixEquals",
    "HostName",
    "Protocol",
    "HttpRedirectCode",
    "ReplaceKeyPrefixWith",
    "ReplaceKeyWith",
    "ID",
    "MaxAgeSeconds",
    "AllowedOrigin",
    "AllowedMethod",
    "AllowedHeader",
    "ExposeHeader",
    "Status",
    "Filter",
    "Expiration",
    "AbortIncompleteMultipartUpload",
    "And",
    "Prefix",
    "ObjectSizeGreaterThan",
    "ObjectSizeLessThan",
    "Days",
    "Date",
    "DaysAfterInitiation",
    "expiration",
    "expired",
    "secretAccessKey",
    "buckets",
    "createBucket",
    "scope",
    "secretToken",
    "state",
    "errors",
    "consecutiveErrors",
    "lastError",
    "tranquility",
    "progress",
    "queueLength",
    "persistentErrors",
    "secsAgo",
    "throttled",
    "durationSecs",
    "variable",
    "value",
    "blockHash",
    "refcount",
    "errorCount",
    "lastTrySecsAgo",
    "nextTryInSecs",
    "versionId",
    "refDeleted",
    "versionDeleted",
    "garbageCollected",
    "backlink",
    "count",
    "blocksPurged",
    "blockRefsPurged",
    "versionsDeleted",
    "objectsDeleted",
    "uploadsDeleted",
    "code",
    "path",
];

/// Node IDs: canonical, upper case with blanks (which the client canonicalises), and near
/// misses (63 digits, a non-hex digit).
pub const NODE_IDS: &[&str] = &[
    "aa00000000000000000000000000000000000000000000000000000000000000",
    "bb00000000000000000000000000000000000000000000000000000000000000",
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    " CC00000000000000000000000000000000000000000000000000000000000000 ",
    "dd0000000000000000000000000000000000000000000000000000000000000",
    "gg00000000000000000000000000000000000000000000000000000000000000",
];

/// Words with a meaning somewhere in the answers (states, codes, enum spellings).
const WORDS: &[&str] = &[
    "healthy",
    "degraded",
    "unavailable",
    "Current",
    "Draining",
    "Historical",
    "busy",
    "idle",
    "done",
    "maximum",
    "Enabled",
    "Disabled",
    "NoSuchBucket",
    "NoSuchKey",
    "NoSuchAdminToken",
    "BucketNotEmpty",
    "BucketAlreadyExists",
    "KeyAlreadyExists",
    "BucketAlreadyOwnedByYou",
    "ServiceUnavailable",
    "InternalError",
    "Invalid new layout version",
    "Block repair worker",
    "Block resync worker #1",
    "disabled",
    "lmdb",
    "2026-01-01T00:00:00Z",
    "*",
    "",
    // Multi-byte text, for the excerpts that cut bodies at a character count.
    "é日本語🦀",
];

/// A JSON value of at most `depth` levels of nesting.
pub fn value(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let kind: u8 = if depth == 0 {
        u.int_in_range(0..=4)?
    } else {
        u.int_in_range(0..=6)?
    };
    Ok(match kind {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => number(u)?,
        3 => Value::String(string(u)?),
        4 => Value::String(u.choose(NODE_IDS)?.to_string()),
        5 => {
            let len = u.int_in_range(0..=4)?;
            let mut items = Vec::with_capacity(len);
            for _ in 0..len {
                items.push(value(u, depth - 1)?);
            }
            Value::Array(items)
        }
        _ => Value::Object(object(u, depth - 1)?),
    })
}

/// A JSON object whose keys are response field names (sometimes node IDs: the envelope of a
/// node-local answer is keyed by them) and whose values are at most `depth` levels deep.
pub fn object(u: &mut Unstructured<'_>, depth: u32) -> Result<Map<String, Value>> {
    let len = u.int_in_range(0..=8)?;
    let mut map = Map::new();
    for _ in 0..len {
        let key = if u.ratio(1, 8)? {
            u.choose(NODE_IDS)?.to_string()
        } else {
            u.choose(KEYS)?.to_string()
        };
        map.insert(key, value(u, depth)?);
    }
    Ok(map)
}

fn number(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=7)? {
        0 => Value::from(u.int_in_range(0u64..=300)?),
        1 => Value::from(u.arbitrary::<u64>()?),
        2 => Value::from(u.arbitrary::<i64>()?),
        3 => Value::from(u64::MAX),
        4 => Value::from(i64::MIN),
        5 => Value::from(-1),
        6 => Number::from_f64(u.arbitrary::<f64>()?).map_or(Value::Null, Value::Number),
        _ => Value::from(0.5),
    })
}

fn string(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=3)? {
        0 => u.arbitrary::<String>()?,
        1 => u.choose(WORDS)?.to_string(),
        // A long text: the error excerpts must cut it at a character boundary.
        2 => u
            .choose(WORDS)?
            .repeat(usize::from(u.arbitrary::<u8>()?) * 4),
        _ => u.choose(KEYS)?.to_string(),
    })
}
