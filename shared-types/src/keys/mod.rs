//! Well-known metadata keys and Garage tag prefixes used by garage-operator.
//!
//! Everything the operator (or a user talking to it) puts into `metadata.annotations`,
//! `metadata.labels`, `metadata.finalizers` or `spec.schedulingGates`, plus the tag prefixes it
//! writes into Garage layout roles, is declared here so no other crate spells these strings.
//!
//! - [`annotation`]: user requests on the custom resources and operator bookkeeping.
//! - [`label`]: labels the operator sets for ownership and selection.
//! - [`finalizer`]: finalizers on custom resources, PVCs and COSI objects.
//! - [`scheduling_gate`]: Pod scheduling gates of node-local pools.
//! - [`generated`]: pieces of the per-cluster, per-pool keys written on Kubernetes Nodes.
//! - [`tag`]: reserved prefixes of Garage layout role tags.
//!
//! A key that is used in two roles (for example as both label and annotation) is declared once
//! and its documentation names both roles.

pub mod annotation;
pub mod label;

/// Finalizers the operator adds so that it can clean up before an object disappears.
pub mod finalizer {
    /// Added by the operator to every `GarageCluster`; removed once the deletion policy (drain or
    /// destroy) has been carried out.
    pub const FINALIZER_CLUSTER: &str = "garagecluster.garage.rajsingh.info/finalizer";
    /// Added by the operator to every `GarageNode`; removed only after the node's layout role is
    /// safely gone.
    pub const FINALIZER_NODE: &str = "garagenode.garage.rajsingh.info/finalizer";
    /// Added by the operator to every `GarageBucket` so the Garage bucket is cleaned up first.
    pub const FINALIZER_BUCKET: &str = "garagebucket.garage.rajsingh.info/finalizer";
    /// Added by the operator to every `GarageKey` so the Garage access key is cleaned up first.
    pub const FINALIZER_KEY: &str = "garagekey.garage.rajsingh.info/finalizer";
    /// Added by the operator to every `GarageAdminToken` so the Garage token is cleaned up
    /// first.
    pub const FINALIZER_ADMIN_TOKEN: &str = "garageadmintoken.garage.rajsingh.info/finalizer";
    /// Added by the operator to the PVCs it reserves for a `GarageNode`; the admission webhook
    /// restricts who may remove it.
    pub const FINALIZER_PVC_RESERVATION: &str = "garagenode.garage.rajsingh.info/pvc-reservation";
    /// Start of the finalizer the operator puts on PVCs while a storage rollout is in flight;
    /// a 16-character hex token follows (see [`storage_rollout_finalizer`]). Its removal is
    /// restricted by the admission webhook.
    pub const FINALIZER_STORAGE_ROLLOUT_PREFIX: &str = "garage.rajsingh.info/storage-rollout-";
    /// Added by the COSI provisioner to COSI `Bucket` and `BucketAccess` objects it serves.
    pub const FINALIZER_COSI_PROTECTION: &str = "garage.rajsingh.info/cosi-protection";

    /// Full storage-rollout finalizer for a 16-character hex `token`.
    pub fn storage_rollout_finalizer(token: &str) -> String {
        format!("{FINALIZER_STORAGE_ROLLOUT_PREFIX}{token}")
    }
}

/// Pod scheduling gates; the operator adds them when it creates the Pod and lifts them itself.
pub mod scheduling_gate {
    /// Gate on every node-local pool Pod. The operator lifts it only for a Pod of the current
    /// pool DaemonSet after re-checking its Node, activation, selector, HostPath claim and all
    /// older pool Pods, so a Pod of a retired DaemonSet stays gated.
    pub const SCHEDULING_GATE_NODE_LOCAL_POOL_ACTIVATION: &str =
        "garage.rajsingh.info/node-local-pool-activation";
    /// Gate on the short-lived probe Pod used to prove that the API server and scheduler honour
    /// scheduling gates before any pool is activated.
    pub const SCHEDULING_GATE_NODE_LOCAL_POOL_CAPABILITY: &str =
        "garage.rajsingh.info/node-local-pool-capability";
}

/// Building blocks of the keys the operator writes on Kubernetes `Node` objects for node-local
/// pools. Each key embeds two 16-character hex digests, one of the cluster and one of the pool.
///
/// Users must not edit keys starting with
/// [`GENERATED_KEY_PREFIX`](crate::keys::generated::GENERATED_KEY_PREFIX); they hold drain
/// state and disk identities, and pool selectors may not use that prefix.
pub mod generated {
    /// Common start of every generated Node key; reserved for the operator.
    pub const GENERATED_KEY_PREFIX: &str = "garage.rajsingh.info/gc-";
    /// Separator between the cluster digest and the pool digest in the activation label and the
    /// node-ID annotation.
    pub const SEGMENT_NODE_LOCAL_POOL: &str = "-node-local-pool-";
    /// Ending of the node-ID annotation (see [`node_id_annotation`]).
    pub const SUFFIX_NODE_ID: &str = "-node-id";
    /// Separator between the cluster digest and the pool digest in the HostPath claim
    /// annotation.
    pub const SEGMENT_NODE_LOCAL: &str = "-node-local-";
    /// Ending of the HostPath claim annotation (see [`hostpath_claim_annotation`]).
    pub const SUFFIX_HOSTPATH_CLAIM: &str = "-hostpath-claim";

    /// Activation label the operator puts on a Node selected for a pool; the pool DaemonSet
    /// schedules on it. `cluster` digests namespace, name and UID of the `GarageCluster`, so a
    /// re-created cluster never inherits it. Values: `true`, `rollout-adoption-fenced`,
    /// `rollout-adoption-quarantine`.
    pub fn activation_label(cluster: &str, pool: &str) -> String {
        format!("{GENERATED_KEY_PREFIX}{cluster}{SEGMENT_NODE_LOCAL_POOL}{pool}")
    }

    /// Node annotation holding the 64-hex Garage node ID committed for a pool's retained
    /// HostPath. `cluster` digests only namespace and name, so the record survives re-creating
    /// the cluster under the same name.
    pub fn node_id_annotation(cluster: &str, pool: &str) -> String {
        format!("{GENERATED_KEY_PREFIX}{cluster}{SEGMENT_NODE_LOCAL_POOL}{pool}{SUFFIX_NODE_ID}")
    }

    /// Node annotation holding the JSON HostPath claim (cluster, pool, paths, node ID) of a
    /// pool; `cluster` digests namespace and name.
    pub fn hostpath_claim_annotation(cluster: &str, pool: &str) -> String {
        format!("{GENERATED_KEY_PREFIX}{cluster}{SEGMENT_NODE_LOCAL}{pool}{SUFFIX_HOSTPATH_CLAIM}")
    }
}

/// Prefixes of the tags the operator writes on Garage layout roles. Users may not use them in
/// `defaultNodeTags` or `GarageNode` tags; other user tags (and, for Auto-mode pods, the bare
/// pod name) are passed through unchanged.
pub mod tag {
    /// `cluster:<name>/<namespace>`: the `GarageCluster` that owns the role.
    pub const TAG_PREFIX_CLUSTER: &str = "cluster:";
    /// `cluster-uid:<uid>`: UID of the owning `GarageCluster`; a site drain only removes roles
    /// carrying its own UID.
    pub const TAG_PREFIX_CLUSTER_UID: &str = "cluster-uid:";
    /// `tier:storage` or `tier:gateway`: the tier of the role.
    pub const TAG_PREFIX_TIER: &str = "tier:";
    /// `rpc-address:<host:port>`: advertised RPC address, used when federated peers reconnect.
    pub const TAG_PREFIX_RPC_ADDRESS: &str = "rpc-address:";
    /// `node-local-pool:<pool>`: node-local pool the role was generated for.
    pub const TAG_PREFIX_NODE_LOCAL_POOL: &str = "node-local-pool:";
    /// `kubernetes-node:<node>`: Kubernetes Node a pool role runs on.
    pub const TAG_PREFIX_KUBERNETES_NODE: &str = "kubernetes-node:";

    /// Every operator-owned tag prefix; user-supplied tags must not start with any of them.
    pub const RESERVED_TAG_PREFIXES: &[&str] = &[
        TAG_PREFIX_CLUSTER,
        TAG_PREFIX_CLUSTER_UID,
        TAG_PREFIX_TIER,
        TAG_PREFIX_RPC_ADDRESS,
        TAG_PREFIX_NODE_LOCAL_POOL,
        TAG_PREFIX_KUBERNETES_NODE,
    ];
}

#[cfg(test)]
mod tests {
    use super::annotation as a;
    use super::finalizer as f;
    use super::generated as g;
    use super::label as l;
    use super::scheduling_gate as sg;
    use super::tag as t;
    use std::collections::HashSet;

    const ANNOTATIONS: &[&str] = &[
        a::ANNOTATION_TRIGGER_SNAPSHOT,
        a::ANNOTATION_TRIGGER_REPAIR,
        a::ANNOTATION_SCRUB_COMMAND,
        a::ANNOTATION_SCRUB_TRANQUILITY,
        a::ANNOTATION_REVERT_LAYOUT,
        a::ANNOTATION_RETRY_BLOCK_RESYNC,
        a::ANNOTATION_PURGE_BLOCKS,
        a::ANNOTATION_FORCE_LAYOUT_APPLY,
        a::ANNOTATION_CONNECT_NODES,
        a::ANNOTATION_SKIP_DEAD_NODES,
        a::ANNOTATION_ALLOW_MISSING_DATA,
        a::ANNOTATION_FORCE_DELETE_UNREVOKED_OPERATOR_TOKENS,
        a::ANNOTATION_MIGRATE_LEGACY_RPC_SECRET,
        a::ANNOTATION_ACKNOWLEDGE_LEGACY_CONFIG_MIGRATION,
        a::ANNOTATION_DRAIN,
        a::ANNOTATION_RECOVER_STORAGE_ROLLOUT,
        a::ANNOTATION_RETRY_MIGRATION,
        a::ANNOTATION_PURGE_CLUSTER_LAYOUT,
        a::ANNOTATION_PURGE_CLUSTER_LAYOUT_ABORT,
        a::ANNOTATION_CONSUL_CREDENTIAL_ROTATION_READY,
        a::ANNOTATION_ACKNOWLEDGE_LOST_SOURCE,
        a::ANNOTATION_CYCLE,
        a::ANNOTATION_SKIP_LAYOUT,
        a::ANNOTATION_PAUSE_RECONCILE,
        a::ANNOTATION_CLEANUP_MPU,
        a::ANNOTATION_CLEANUP_MPU_OLDER_THAN,
        a::ANNOTATION_V1BETA2_ONLY,
        a::ANNOTATION_V1BETA2_GATEWAY_TIER,
        a::ANNOTATION_V1BETA2_NODE_LOCAL_POOLS,
        a::ANNOTATION_RPC_IDENTITY_SHA256,
        a::ANNOTATION_RPC_IDENTITY_SOURCE,
        a::ANNOTATION_STATIC_CREDENTIALS_REVISION,
        a::ANNOTATION_STATIC_CREDENTIALS_SECRET,
        a::ANNOTATION_STATIC_CREDENTIALS_SOURCES,
        a::ANNOTATION_OPERATOR_ADMIN_TOKEN_ID,
        a::ANNOTATION_OPERATOR_METRICS_TOKEN_INTENT,
        a::ANNOTATION_MANAGED_BY_INSTALL,
        a::ANNOTATION_FINALIZATION_RETRIES,
        a::ANNOTATION_OPERATOR_SUSPENDED,
        a::ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID,
        a::ANNOTATION_AUTO_MODE_PVC_HANDOFF_NONCE,
        a::ANNOTATION_BUCKET_LOOKUP_TIMEOUTS,
        a::ANNOTATION_BUCKET_DECODE_ERRORS,
        a::ANNOTATION_BUCKET_RESERVATION_ALIAS,
        a::ANNOTATION_KEY_REPLACEMENT_NONCE,
        a::ANNOTATION_RESOLVED_IMPORT_ACCESS_KEY_ID,
        a::ANNOTATION_KEY_DERIVATION,
        a::ANNOTATION_COSI_PROVISIONING_STATE,
        a::ANNOTATION_COSI_RESERVATION_ALIAS,
        a::ANNOTATION_COSI_RETAIN,
        a::ANNOTATION_COSI_RESERVATION_OWNER,
        a::ANNOTATION_COSI_RESERVATION_READY,
        a::ANNOTATION_COSI_SERVICE_ACCOUNT_NAME,
        a::ANNOTATION_COSI_LEGACY_BUCKET_ACCESS_UID,
        a::ANNOTATION_POD_SPEC_HASH,
        a::ANNOTATION_RENDERED_HASH,
        a::ANNOTATION_CONFIG_HASH,
        a::ANNOTATION_NODE_ID,
        a::ANNOTATION_RETIRED_NODE_ID,
        a::ANNOTATION_STORAGE_DISK_LAYOUT,
        a::ANNOTATION_STORAGE_ROLLOUT_INPUT,
        a::ANNOTATION_ROLLOUT_ADOPTION_FENCE,
        a::ANNOTATION_NODE_LOCAL_POOL_MEMBERSHIP_FENCE,
        a::ANNOTATION_NODE_LOCAL_POOL_ACTIVATION_LABEL,
        a::ANNOTATION_NODE_LOCAL_POOL_ACTIVATION_VALUE,
        a::ANNOTATION_GATEWAY_DATA_MARKER,
        a::ANNOTATION_SEEN_WITHOUT_ROLE,
        a::ANNOTATION_SENSITIVE_GARAGE_CONFIG,
        a::ANNOTATION_GARAGE_CONFIG_BASE_NAME,
        a::ANNOTATION_OPERATOR_ADMIN_TOKEN_READY,
        a::ANNOTATION_OPERATOR_ADMIN_TOKEN_NAME,
        a::ANNOTATION_OPERATOR_ADMIN_TOKEN_POD_SET,
        a::ANNOTATION_OPERATOR_METRICS_TOKEN_READY,
        a::ANNOTATION_OPERATOR_METRICS_TOKEN_NAME,
        a::ANNOTATION_OPERATOR_METRICS_TOKEN_POD_SET,
        a::ANNOTATION_STATIC_BOOTSTRAP_TOKEN_SHA256,
        a::ANNOTATION_CREDENTIAL_KIND,
        a::ANNOTATION_GARAGE_NODE_UID,
        a::ANNOTATION_PVC_RESERVATION_NONCE,
        a::ANNOTATION_NODE_LOCAL_CAPABILITY_CLUSTER_UID,
    ];

    const LABELS: &[&str] = &[
        l::LABEL_APP_NAME,
        l::LABEL_APP_INSTANCE,
        l::LABEL_APP_COMPONENT,
        l::LABEL_APP_MANAGED_BY,
        l::LABEL_CLUSTER,
        l::LABEL_TIER,
        l::LABEL_NODE,
        l::LABEL_STORAGE_GROUP,
        l::LABEL_SCALE_TARGET,
        l::LABEL_NODE_LOCAL_POOL,
        l::LABEL_KUBERNETES_NODE,
        l::LABEL_CYCLE_SIBLING,
        l::LABEL_AUTO_NODE_SLOT,
        l::LABEL_ADMIN_TOKEN,
        l::LABEL_KEY,
        l::LABEL_GENERATED_KEY_SECRET_OWNER,
        l::LABEL_KEY_IMPORT_SNAPSHOT,
        l::LABEL_OPERATOR_ADMIN_TOKEN,
        l::LABEL_OPERATOR_METRICS_TOKEN,
        l::LABEL_STATIC_CREDENTIALS_SNAPSHOT,
        l::LABEL_NODE_LOCAL_CAPABILITY_PROBE,
        l::LABEL_COSI_MANAGED,
        l::LABEL_COSI_BUCKET_CLAIM,
        l::LABEL_COSI_BUCKET_ACCESS,
        l::LABEL_COSI_BUCKET_ID,
        l::LABEL_COSI_ACCOUNT_ID,
    ];

    /// Complete finalizers (the storage-rollout prefix is checked through its builder).
    const FINALIZERS: &[&str] = &[
        f::FINALIZER_CLUSTER,
        f::FINALIZER_NODE,
        f::FINALIZER_BUCKET,
        f::FINALIZER_KEY,
        f::FINALIZER_ADMIN_TOKEN,
        f::FINALIZER_PVC_RESERVATION,
        f::FINALIZER_COSI_PROTECTION,
    ];

    const GATES: &[&str] = &[
        sg::SCHEDULING_GATE_NODE_LOCAL_POOL_ACTIVATION,
        sg::SCHEDULING_GATE_NODE_LOCAL_POOL_CAPABILITY,
    ];

    /// Fragments that only become keys once combined with digests or tokens.
    const FRAGMENTS: &[&str] = &[
        f::FINALIZER_STORAGE_ROLLOUT_PREFIX,
        g::GENERATED_KEY_PREFIX,
        g::SEGMENT_NODE_LOCAL_POOL,
        g::SUFFIX_NODE_ID,
        g::SEGMENT_NODE_LOCAL,
        g::SUFFIX_HOSTPATH_CLAIM,
    ];

    /// Sample 16-character hex digest, the longest form the builders receive.
    const HEX16: &str = "0123456789abcdef";

    fn is_lower_alnum(c: u8) -> bool {
        c.is_ascii_lowercase() || c.is_ascii_digit()
    }

    /// One dot-separated part of a DNS-1123 subdomain: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
    fn is_subdomain_part(part: &str) -> bool {
        let b = part.as_bytes();
        let (Some(&first), Some(&last)) = (b.first(), b.last()) else {
            return false;
        };
        is_lower_alnum(first)
            && is_lower_alnum(last)
            && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
    }

    /// DNS-1123 subdomain of at most 253 characters.
    fn is_dns_subdomain(s: &str) -> bool {
        !s.is_empty() && s.len() <= 253 && s.split('.').all(is_subdomain_part)
    }

    /// Name part of a qualified name: at most 63 characters matching
    /// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`.
    fn is_qualified_name_part(s: &str) -> bool {
        let b = s.as_bytes();
        let (Some(first), Some(last)) = (b.first(), b.last()) else {
            return false;
        };
        b.len() <= 63
            && first.is_ascii_alphanumeric()
            && last.is_ascii_alphanumeric()
            && b.iter()
                .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    }

    /// Kubernetes qualified name: `[prefix/]name` with a DNS-subdomain prefix.
    fn is_qualified_name(s: &str) -> bool {
        match s.split_once('/') {
            Some((prefix, name)) => is_dns_subdomain(prefix) && is_qualified_name_part(name),
            None => is_qualified_name_part(s),
        }
    }

    /// Every complete key, including keys produced by the builders.
    fn all_keys() -> Vec<String> {
        let mut keys: Vec<String> = [ANNOTATIONS, LABELS, FINALIZERS, GATES]
            .concat()
            .into_iter()
            .map(String::from)
            .collect();
        keys.push(f::storage_rollout_finalizer(HEX16));
        keys.push(g::activation_label(HEX16, HEX16));
        keys.push(g::node_id_annotation(HEX16, HEX16));
        keys.push(g::hostpath_claim_annotation(HEX16, HEX16));
        keys
    }

    #[test]
    fn every_string_is_declared_once() {
        let all = [
            ANNOTATIONS,
            LABELS,
            FINALIZERS,
            GATES,
            FRAGMENTS,
            t::RESERVED_TAG_PREFIXES,
        ]
        .concat();
        let unique: HashSet<&str> = all.iter().copied().collect();
        assert_eq!(
            unique.len(),
            all.len(),
            "a string is declared by two constants"
        );
        let built: HashSet<String> = all_keys().into_iter().collect();
        assert_eq!(
            built.len(),
            all_keys().len(),
            "builders collide with a constant"
        );
    }

    #[test]
    fn keys_are_valid_qualified_names() {
        for key in all_keys() {
            assert!(
                is_qualified_name(&key),
                "{key:?} is not a valid qualified name"
            );
        }
    }

    #[test]
    fn keys_use_project_or_well_known_prefixes() {
        for key in all_keys() {
            let prefix = key.split_once('/').map_or("", |(p, _)| p);
            let ours =
                prefix == "garage.rajsingh.info" || prefix.ends_with(".garage.rajsingh.info");
            assert!(
                ours || prefix == "app.kubernetes.io",
                "unexpected prefix on {key:?}"
            );
        }
    }

    #[test]
    fn reserved_pod_labels_are_declared_labels() {
        let labels: HashSet<&str> = LABELS.iter().copied().collect();
        let reserved: HashSet<&str> = l::RESERVED_POD_LABELS.iter().copied().collect();
        assert_eq!(reserved.len(), l::RESERVED_POD_LABELS.len());
        assert!(reserved.is_subset(&labels));
    }

    #[test]
    fn generated_keys_start_with_the_reserved_prefix() {
        for key in [
            g::activation_label(HEX16, HEX16),
            g::node_id_annotation(HEX16, HEX16),
            g::hostpath_claim_annotation(HEX16, HEX16),
        ] {
            assert!(key.starts_with(g::GENERATED_KEY_PREFIX), "{key:?}");
        }
    }

    #[test]
    fn tag_prefixes_are_unambiguous() {
        for p in t::RESERVED_TAG_PREFIXES {
            let Some(body) = p.strip_suffix(':') else {
                panic!("{p:?} must end with ':'");
            };
            assert!(is_subdomain_part(body), "{p:?} has an unexpected shape");
            for other in t::RESERVED_TAG_PREFIXES {
                assert!(
                    p == other || !other.starts_with(*p),
                    "{p:?} is a prefix of {other:?}"
                );
            }
        }
    }

    #[test]
    fn validators_reject_malformed_input() {
        let long_name = format!("garage.rajsingh.info/{}", "a".repeat(64));
        let long_prefix = format!("{}/a", "a".repeat(254));
        for bad in [
            "",
            "garage.rajsingh.info/",
            "/drain",
            "Garage.rajsingh.info/drain",
            "garage..info/drain",
            "garage.rajsingh.info/-drain",
            "garage.rajsingh.info/drain-",
            "a/b/c",
            "garage.rajsingh.info/dr ain",
            long_name.as_str(),
            long_prefix.as_str(),
        ] {
            assert!(!is_qualified_name(bad), "{bad:?} accepted");
        }
        for good in ["a", "x/Y_z.1", "garage.rajsingh.info/a-b.c_D"] {
            assert!(is_qualified_name(good), "{good:?} rejected");
        }
    }
}
