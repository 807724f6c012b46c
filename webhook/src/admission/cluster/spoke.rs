//! The v1beta1 (spoke) GarageCluster validator (`G1-*`): the rules
//! whose v1beta1 shape differs from the hub's. Rules that mean the same on
//! both versions (admin port, RPC identity, freezes, ownership) run on the
//! hub conversion of the two objects and keep their hub ids.

use shared_types::garage_cluster::common::{DeletionPolicy, LayoutPolicy, VolumeConfig};
use shared_types::garage_cluster::v1beta1::{self, GarageClusterSpec};
use shared_types::keys::annotation::{
    ANNOTATION_DRAIN, ANNOTATION_FORCE_DELETE_UNREVOKED_OPERATOR_TOKENS,
    ANNOTATION_V1BETA2_GATEWAY_TIER, ANNOTATION_V1BETA2_NODE_LOCAL_POOLS, ANNOTATION_V1BETA2_ONLY,
};

use super::federation::check_drain_prerequisites;
use super::network::{check_blocks, check_timeouts};
use super::tiers::MAX_REPLICAS;
use crate::admission::shared::endpoints::{Listeners, check_admin_endpoint, check_listeners};
use crate::admission::shared::env::check_env;
use crate::admission::shared::labels::{check_node_tags, check_pod_labels};
use crate::admission::shared::remote::{
    RemoteView, check_cluster_reference, check_remote_clusters,
};
use crate::admission::shared::replication::check_zone_redundancy;
use crate::admission::shared::services::{check_consul, check_public_endpoint, check_service};
use crate::admission::shared::volume::{CLAIM_TEMPLATE_MESSAGE, VolumeShape, check_volume_shape};
use crate::admission::shared::{deny_all, deny_first};
use crate::admission::{Context, Operation, Review, Verdict};
use crate::convert::annotations::{MARKER_GATEWAY_TIER_PRESENT, MARKER_NODE_LOCAL_POOLS_PRESENT};
use crate::convert::to_v1beta2;

/// The tier predicates of a v1beta1 object (handle, gateway, storage, managed groups).
pub(super) struct Spoke<'a>(pub(super) &'a v1beta1::GarageCluster);

impl Spoke<'_> {
    pub(super) fn spec(&self) -> &GarageClusterSpec {
        &self.0.spec
    }
    pub(super) fn gateway(&self) -> bool {
        self.spec().gateway == Some(true)
    }
    pub(super) fn replicas(&self) -> i32 {
        self.spec().replicas.unwrap_or(3)
    }
    pub(super) fn handle(&self) -> bool {
        let st = self.spec().storage.as_ref();
        !self.gateway()
            && self.spec().connect_to.is_some()
            && self.replicas() == 0
            && st.is_none_or(|s| s.metadata.is_none() && s.data.is_none())
    }
    pub(super) fn storage(&self) -> bool {
        !self.gateway() && !self.handle()
    }
    pub(super) fn cluster_policy(&self) -> LayoutPolicy {
        self.spec().layout_policy.unwrap_or(LayoutPolicy::Auto)
    }
    pub(super) fn storage_manual(&self) -> bool {
        match self
            .spec()
            .storage
            .as_ref()
            .and_then(|s| s.layout_policy.as_deref())
        {
            Some(p) if !p.is_empty() => p == "Manual",
            _ => self.cluster_policy() == LayoutPolicy::Manual,
        }
    }
    pub(super) fn managed_default_pool(&self) -> bool {
        self.storage()
            && self.replicas() > 0
            && self.cluster_policy() != LayoutPolicy::Manual
            && !self.storage_manual()
    }
    pub(super) fn annotation(&self, k: &str) -> Option<&String> {
        self.0.metadata.annotations.as_ref().and_then(|a| a.get(k))
    }
    pub(super) fn markers(&self) -> Vec<&str> {
        self.annotation(ANNOTATION_V1BETA2_ONLY)
            .map(|v| v.split(',').map(str::trim).collect())
            .unwrap_or_default()
    }
    pub(super) fn preserved_pools(&self) -> bool {
        self.annotation(ANNOTATION_V1BETA2_NODE_LOCAL_POOLS)
            .is_some_and(|v| !v.is_empty())
            && self.markers().contains(&MARKER_NODE_LOCAL_POOLS_PRESENT)
    }
}

pub(super) fn addressed_v1beta1(ctx: &Context) -> bool {
    ctx.requested_version
        .as_deref()
        .is_none_or(|v| v == "v1beta1")
}

/// G1-T1: a genuine v1beta1 CREATE may not forge transport data.
fn check_transport_create(c: &Spoke<'_>, verdict: &mut Verdict) {
    let payload = [
        ANNOTATION_V1BETA2_NODE_LOCAL_POOLS,
        ANNOTATION_V1BETA2_GATEWAY_TIER,
    ]
    .iter()
    .any(|k| c.annotation(k).is_some());
    let marker = c
        .markers()
        .iter()
        .any(|m| *m == MARKER_NODE_LOCAL_POOLS_PRESENT || *m == MARKER_GATEWAY_TIER_PRESENT);
    if payload || marker {
        verdict.deny("G1-T1", "metadata.annotations", "v1beta2-only conversion annotations are reserved and cannot be supplied through a v1beta1 create; use the v1beta2 API");
    }
}

/// G1-T2: a v1beta1 UPDATE must carry the transport payloads through.
pub(super) fn check_transport_update(old: &Spoke<'_>, new: &Spoke<'_>, verdict: &mut Verdict) {
    for (key, marker, what) in [
        (
            ANNOTATION_V1BETA2_NODE_LOCAL_POOLS,
            MARKER_NODE_LOCAL_POOLS_PRESENT,
            "v1beta2 storage.nodeLocalPools",
        ),
        (
            ANNOTATION_V1BETA2_GATEWAY_TIER,
            MARKER_GATEWAY_TIER_PRESENT,
            "a v1beta2 gateway tier",
        ),
    ] {
        let (o, n) = (old.annotation(key), new.annotation(key));
        let f = format!("metadata.annotations[{key}]");
        match (o, n) {
            (Some(o), Some(n)) if o != n => verdict.deny("G1-T2", f, format!("{key} is a reserved conversion payload for {what} and must be preserved; use the v1beta2 API to change it")),
            (Some(o), None) if !o.is_empty() => verdict.deny("G1-T2", f, format!("{key} is a reserved conversion payload for {what} and must be preserved; use the v1beta2 API to change it")),
            (None, Some(_)) => verdict.deny("G1-T2", f, format!("{key} is reserved for API conversion and cannot be added through v1beta1")),
            _ => {}
        }
        if o.is_some_and(|o| !o.is_empty()) && !new.markers().contains(&marker) {
            verdict.deny("G1-T2", format!("metadata.annotations[{ANNOTATION_V1BETA2_ONLY}]"), format!("{ANNOTATION_V1BETA2_ONLY} must retain the {marker:?} marker while {key} is present"));
        }
        if !old.markers().contains(&marker) && new.markers().contains(&marker) {
            verdict.deny("G1-T2", format!("metadata.annotations[{ANNOTATION_V1BETA2_ONLY}]"), format!("component {marker:?} is reserved for API conversion and cannot be added through v1beta1"));
        }
    }
}

/// G1-C5: v1beta1 storage fields a gateway would silently lose.
pub(super) fn ignored_gateway_fields(spec: &GarageClusterSpec) -> Vec<&'static str> {
    let mut out = Vec::new();
    if spec.capacity_reserve_percent.is_some_and(|p| p != 0) {
        out.push("spec.capacityReservePercent");
    }
    if let Some(s) = spec.storage.as_ref() {
        let fields: [(&'static str, bool); 9] = [
            ("spec.storage.data", s.data.is_some()),
            ("spec.storage.dataFsync", s.data_fsync == Some(true)),
            (
                "spec.storage.env",
                s.env.as_ref().is_some_and(|e| !e.is_empty()),
            ),
            (
                "spec.storage.envFrom",
                s.env_from.as_ref().is_some_and(|e| !e.is_empty()),
            ),
            ("spec.storage.layoutPolicy", s.layout_policy.is_some()),
            (
                "spec.storage.metadataAutoSnapshotInterval",
                s.metadata_auto_snapshot_interval.is_some(),
            ),
            ("spec.storage.metadataFsync", s.metadata_fsync == Some(true)),
            (
                "spec.storage.metadataSnapshotsDir",
                s.metadata_snapshots_dir.is_some(),
            ),
            ("spec.storage.rpcPublicAddr", s.rpc_public_addr.is_some()),
        ];
        out.extend(fields.iter().filter(|(_, set)| *set).map(|(f, _)| *f));
    }
    out.sort_unstable();
    out
}

pub(super) fn claim_templates(spec: &GarageClusterSpec) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    let to = |v: &k8s_openapi::api::core::v1::PersistentVolumeClaimSpec| {
        serde_json::to_value(v).unwrap_or_default()
    };
    if let Some(s) = spec.storage.as_ref() {
        if let Some(t) = s
            .metadata
            .as_ref()
            .and_then(|m| m.volume_claim_template_spec.as_ref())
        {
            out.push((
                "storage.metadata.volumeClaimTemplateSpec".to_string(),
                to(t),
            ));
        }
        if let Some(d) = s.data.as_ref() {
            if let Some(t) = d.volume_claim_template_spec.as_ref() {
                out.push(("storage.data.volumeClaimTemplateSpec".to_string(), to(t)));
            }
            for (i, p) in d.paths.iter().flatten().enumerate() {
                if let Some(t) = p
                    .volume
                    .as_ref()
                    .and_then(|v| v.volume_claim_template_spec.as_ref())
                {
                    out.push((
                        format!("storage.data.paths[{i}].volume.volumeClaimTemplateSpec"),
                        to(t),
                    ));
                }
            }
        }
    }
    out
}

fn shape_volume(field: &str, v: &VolumeConfig) -> Vec<crate::admission::shared::Problem> {
    check_volume_shape(
        field,
        VolumeShape {
            claim_template: None,
            ..VolumeShape::from(v)
        },
    )
}

/// The v1beta1 shape rules on `c` (CREATE, or the UPDATE copy).
pub(super) fn shape_rules(c: &Spoke<'_>, legacy: bool, strict_labels: bool, verdict: &mut Verdict) {
    let spec = c.spec();
    if !legacy {
        deny_first(
            verdict,
            "G1-C1",
            check_public_endpoint("spec.publicEndpoint", spec.public_endpoint.as_ref()),
        );
        deny_first(
            verdict,
            "G1-C1",
            check_service(
                "spec.network.service",
                spec.network.as_ref().and_then(|n| n.service.as_ref()),
            ),
        );
    }
    super::spoke_names::check(c, verdict);
    match spec.replicas {
        Some(r) if r < 0 => verdict.deny("G1-C3", "spec.replicas", "spec.replicas must be non-negative"),
        Some(r) if r > MAX_REPLICAS => verdict.deny("G1-C3", "spec.replicas", format!("spec.replicas must be at most {MAX_REPLICAS} so every managed Pod and GarageNode name remains a valid label; v1beta2 storage.nodeLocalPools cardinality is selector-driven")),
        _ => {}
    }
    let (p, w) = check_consul(spec.discovery.as_ref());
    deny_all(verdict, "G1-C4", p);
    w.into_iter().for_each(|w| verdict.warn("GC-W4", w));
    let tls = spec.security.as_ref().and_then(|s| s.tls.as_ref());
    if tls.is_some_and(|t| {
        t.enabled == Some(true)
            || t.cert_secret_ref.is_some()
            || t.key_secret_ref.is_some()
            || t.ca_secret_ref.is_some()
    }) {
        verdict.deny(
            "G1-C4",
            "spec.security.tls",
            "spec.security.tls is unsupported: Garage removed the rpc_tls configuration; remove it",
        );
    }
    annotation_rules(c, verdict);
    if c.gateway()
        && let Some(f) = ignored_gateway_fields(spec).first()
    {
        verdict.deny("G1-C5", *f, format!("{f} is not represented on a v1beta1 gateway and would be discarded during conversion; use the v1beta2 API and configure gateway-specific fields under spec.gateway"));
    }
    if strict_labels {
        deny_all(
            verdict,
            "G1-C6",
            check_pod_labels("spec.podLabels", spec.pod_labels.as_ref()),
        );
    }
    let st = spec.storage.as_ref();
    deny_all(
        verdict,
        "G1-C7",
        check_env(
            "spec.storage",
            st.and_then(|s| s.env.as_ref()),
            st.and_then(|s| s.env_from.as_ref()),
        ),
    );
    deny_all(
        verdict,
        "G1-C9",
        check_node_tags("spec.defaultNodeTags", spec.default_node_tags.as_ref()),
    );
    if let Some((f, _)) = claim_templates(spec).first() {
        verdict.deny("G1-C10", f.clone(), CLAIM_TEMPLATE_MESSAGE);
    }
    deny_first(
        verdict,
        "G1-C11",
        check_zone_redundancy(spec.replication.as_ref()),
    );
    remote_and_drain_rules(c, legacy, verdict);
    check_gateway(c, legacy, verdict);
    check_default_storage(c, verdict);
    if !legacy {
        deny_first(
            verdict,
            "G1-C16",
            check_listeners(Listeners {
                network: spec.network.as_ref(),
                s3: spec.s3_api.as_ref(),
                k2v: spec.k2v_api.as_ref(),
                web: spec.web_api.as_ref(),
                admin: spec.admin.as_ref(),
            }),
        );
        check_timeouts(
            "G1-C16",
            spec.network.as_ref(),
            st.and_then(|s| s.metadata_auto_snapshot_interval.as_deref()),
            verdict,
        );
        check_blocks("G1-C16", spec.blocks.as_ref(), verdict);
    }
    min_nodes_healthy_rule(c, verdict);
}

/// G1-C4: the drain and token annotations hold `"true"` when present, and the drain
/// annotation only on a storage cluster that drains on deletion.
fn annotation_rules(c: &Spoke<'_>, verdict: &mut Verdict) {
    let spec = c.spec();
    if let Some(v) = c.annotation(ANNOTATION_DRAIN) {
        if v != "true" {
            verdict.deny(
                "G1-C4",
                format!("metadata.annotations[{ANNOTATION_DRAIN}]"),
                format!("{ANNOTATION_DRAIN} must be \"true\" when present"),
            );
        } else if !c.storage() || spec.deletion_policy != Some(DeletionPolicy::Drain) {
            verdict.deny("G1-C4", format!("metadata.annotations[{ANNOTATION_DRAIN}]"), format!("{ANNOTATION_DRAIN} requires a storage GarageCluster with explicit spec.deletionPolicy: Drain"));
        }
    }
    if c.annotation(ANNOTATION_FORCE_DELETE_UNREVOKED_OPERATOR_TOKENS)
        .is_some_and(|v| v != "true")
    {
        verdict.deny(
            "G1-C4",
            format!("metadata.annotations[{ANNOTATION_FORCE_DELETE_UNREVOKED_OPERATOR_TOKENS}]"),
            "must be \"true\" when present",
        );
    }
}

/// G1-C12 and G1-C13: the remote clusters, and what draining on deletion needs.
fn remote_and_drain_rules(c: &Spoke<'_>, legacy: bool, verdict: &mut Verdict) {
    let spec = c.spec();
    let remotes: Vec<RemoteView<'_>> = spec
        .remote_clusters
        .iter()
        .flatten()
        .map(|r| RemoteView {
            name: &r.name,
            zone: &r.zone,
            has_default_capacity: r.default_capacity.is_some(),
            endpoint: &r.connection.admin_api_endpoint,
        })
        .collect();
    deny_all(verdict, "G1-C12", check_remote_clusters(&remotes, legacy));
    if c.storage() && spec.deletion_policy == Some(DeletionPolicy::Drain) {
        check_drain_prerequisites(
            "G1-C13",
            !remotes.is_empty(),
            spec.replication.as_ref(),
            spec.layout_management.as_ref(),
            verdict,
        );
    }
}

/// G1-C17: `minNodesHealthy` is non-negative and no more than the replicas.
fn min_nodes_healthy_rule(c: &Spoke<'_>, verdict: &mut Verdict) {
    let spec = c.spec();
    if let Some(m) = spec
        .layout_management
        .as_ref()
        .and_then(|l| l.min_nodes_healthy)
    {
        if m < 0 {
            verdict.deny(
                "G1-C17",
                "spec.layoutManagement.minNodesHealthy",
                "minNodesHealthy must be non-negative",
            );
        } else if m > 0 && !c.preserved_pools() && m > i64::from(c.replicas()) {
            verdict.deny(
                "G1-C17",
                "spec.layoutManagement.minNodesHealthy",
                format!(
                    "minNodesHealthy ({m}) cannot exceed replicas ({})",
                    c.replicas()
                ),
            );
        }
    }
}

/// G1-C14.
fn check_gateway(c: &Spoke<'_>, legacy: bool, verdict: &mut Verdict) {
    let spec = c.spec();
    let ns = c.0.metadata.namespace.as_deref().unwrap_or_default();
    let ct = spec.connect_to.as_ref();
    if let Some(rns) = ct
        .and_then(|c| c.cluster_ref.as_ref())
        .and_then(|r| r.namespace.as_deref())
        && !rns.is_empty()
        && rns != ns
    {
        verdict.deny("G1-C14", "spec.connectTo.clusterRef.namespace", "connectTo.clusterRef.namespace must be empty or match metadata.namespace; cross-namespace credential and layout inheritance is not permitted");
    }
    if c.gateway() {
        match ct {
            None => verdict.deny(
                "G1-C14",
                "spec.connectTo",
                "connectTo is required when gateway is true",
            ),
            Some(t) => {
                let net = spec
                    .network
                    .as_ref()
                    .is_some_and(|n| n.rpc_secret_ref.is_some());
                if !net && t.rpc_secret_ref.is_none() && t.cluster_ref.is_none() {
                    verdict.deny("G1-C14", "spec.connectTo", "gateway connectTo requires clusterRef, connectTo.rpcSecretRef, or network.rpcSecretRef; bootstrapPeers and adminApiEndpoint do not provide the shared RPC identity");
                }
            }
        }
        if let Some(m) = spec.storage.as_ref().and_then(|s| s.metadata.as_ref()) {
            if m.paths.as_ref().is_some_and(|p| !p.is_empty()) {
                verdict.deny(
                    "G1-C14",
                    "spec.storage.metadata.paths",
                    "storage.metadata.paths: paths is only valid for storage data volumes",
                );
            }
            deny_all(verdict, "G1-C14", shape_volume("storage.metadata", m));
        }
    } else if ct.is_some() && !c.handle() {
        verdict.deny("G1-C14", "spec.connectTo", "connectTo can only be specified when gateway is true, or on a tier-less management handle");
    }
    if let Some(t) = ct {
        if !legacy {
            if let Some(p) = t
                .cluster_ref
                .as_ref()
                .and_then(|r| check_cluster_reference("spec.connectTo.clusterRef", r))
            {
                verdict.deny("G1-C14", p.field, p.message);
            }
            deny_first(
                verdict,
                "G1-C14",
                check_admin_endpoint(
                    "spec.connectTo.adminApiEndpoint",
                    t.admin_api_endpoint.as_deref().unwrap_or_default(),
                ),
            );
        }
        let peers = t.bootstrap_peers.as_ref().is_some_and(|p| !p.is_empty());
        let ep = t
            .admin_api_endpoint
            .as_deref()
            .is_some_and(|e| !e.is_empty());
        if t.cluster_ref.is_none() && t.rpc_secret_ref.is_none() && !peers && !ep {
            verdict.deny("G1-C14", "spec.connectTo", "connectTo must specify clusterRef, rpcSecretRef, bootstrapPeers, or adminApiEndpoint");
        }
    }
}

/// G1-C15, with L-4 decided: at replicas 0 the default group's volumes
/// may be omitted, exactly as on the hub (a group at zero creates no claims).
fn check_default_storage(c: &Spoke<'_>, verdict: &mut Verdict) {
    if !c.storage() || c.storage_manual() || c.replicas() == 0 {
        return;
    }
    let st = c.spec().storage.as_ref();
    if let Some(m) = st.and_then(|s| s.metadata.as_ref()) {
        deny_all(verdict, "G1-C15", shape_volume("storage.metadata", m));
        if m.paths.as_ref().is_some_and(|p| !p.is_empty()) {
            verdict.deny(
                "G1-C15",
                "spec.storage.metadata.paths",
                "storage.metadata.paths: paths is only valid for data volumes",
            );
        }
    }
    match st.and_then(|s| s.data.as_ref()) {
        None => verdict.deny("G1-C15", "spec.storage.data", "storage.data: must specify data storage configuration while spec.replicas is greater than 0"),
        Some(d) => {
            deny_all(verdict, "G1-C15", shape_volume("storage.data", d));
            let has_paths = d.paths.as_ref().is_some_and(|p| !p.is_empty());
            if d.type_ == Some(shared_types::common::VolumeType::EmptyDir) {
                if has_paths {
                    verdict.deny("G1-C15", "spec.storage.data.paths", "storage.data.paths: not allowed with EmptyDir type");
                }
            } else if d.size.is_none() && !has_paths {
                verdict.deny("G1-C15", "spec.storage.data.size", "storage.data.size: must specify size for persistent data storage (or use storage.data.paths for multi-disk)");
            }
        }
    }
}

pub(super) fn hub(
    c: &v1beta1::GarageCluster,
    verdict: &mut Verdict,
) -> Option<shared_types::garage_cluster::v1beta2::GarageCluster> {
    match to_v1beta2(c.clone()) {
        Ok(h) => Some(h),
        Err(e) => {
            verdict.deny(
                "G1-CONV",
                "metadata.annotations",
                format!("the v1beta1 object cannot be converted to v1beta2: {e}"),
            );
            None
        }
    }
}

/// Validates the v1beta1 projection of a GarageCluster write (`G1-*`).
///
/// Transport rules G1-T1/T2 apply only when the client addressed v1beta1
/// ([`Context::requested_version`]); every other rule runs for both.
pub fn validate_cluster_v1beta1(
    review: Review<'_, v1beta1::GarageCluster>,
    ctx: &Context,
) -> Verdict {
    let mut verdict = Verdict::new();
    match (review.operation, review.old, review.new) {
        (Operation::Create, _, Some(new)) => {
            let c = Spoke(new);
            shape_rules(&c, false, true, &mut verdict);
            super::spoke_payload::check(None, new, &mut verdict);
            if addressed_v1beta1(ctx) {
                check_transport_create(&c, &mut verdict);
            }
        }
        (Operation::Update, Some(old), Some(new)) => {
            super::spoke_update::update(old, new, ctx, &mut verdict)
        }
        (Operation::Delete, Some(old), _) => {
            if let Some(h) = hub(old, &mut verdict) {
                super::deletion::check(Some(&h), ctx, &mut verdict);
            }
        }
        (Operation::Delete, None, _) => {}
        _ => verdict.deny(
            "G1-REQ",
            "request",
            "the admission request lacks the object its operation needs",
        ),
    }
    verdict
}
