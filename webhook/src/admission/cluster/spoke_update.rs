//! The v1beta1 UPDATE pipeline: transport, released values, then the rules
//! shared with the hub on the converted objects, and the spoke volume rules
//! G1-S1 with the VolumeAttributesClass carve-outs.

use shared_types::garage_cluster::common::{LayoutPolicy, VolumeConfig};
use shared_types::garage_cluster::v1beta1::{self, GarageClusterSpec};

use super::spoke::{
    Spoke, addressed_v1beta1, check_transport_update, claim_templates, hub, ignored_gateway_fields,
    shape_rules,
};
use super::tiers::MAX_REPLICAS;
use super::{immutability, legacy, network, topology, volumes};
use crate::admission::shared::replication::check_factor_change;
use crate::admission::shared::volume::CLAIM_TEMPLATE_MESSAGE;
use crate::admission::{Context, Verdict};

pub(super) fn update(
    old: &v1beta1::GarageCluster,
    new: &v1beta1::GarageCluster,
    ctx: &Context,
    verdict: &mut Verdict,
) {
    let (o, n) = (Spoke(old), Spoke(new));
    if addressed_v1beta1(ctx) {
        check_transport_update(&o, &n, verdict);
    }
    let mut copy = new.clone();
    if super::spoke_names::check_update(old, new, verdict) {
        copy.metadata.name = Some("grandfathered".into());
    }
    // G1-U2: released claim templates may stay unchanged or go.
    let old_templates = claim_templates(&old.spec);
    for (f, t) in claim_templates(&new.spec) {
        if !old_templates.iter().any(|(of, ot)| *of == f && *ot == t) {
            verdict.deny("G1-U2", f, CLAIM_TEMPLATE_MESSAGE);
        }
    }
    if let Some(s) = copy.spec.storage.as_mut() {
        for v in [s.metadata.as_mut(), s.data.as_mut()].into_iter().flatten() {
            v.volume_claim_template_spec = None;
            for p in v.paths.iter_mut().flatten() {
                if let Some(pv) = p.volume.as_mut() {
                    pv.volume_claim_template_spec = None;
                }
            }
        }
    }
    // G1-U3: ignored gateway fields may stay unchanged (warning G1-W1) or be removed.
    if n.gateway() {
        let ov = serde_json::to_value(&old.spec).unwrap_or_default();
        let nv = serde_json::to_value(&new.spec).unwrap_or_default();
        let pointer = |f: &str| format!("/{}", f.trim_start_matches("spec.").replace('.', "/"));
        let fields = ignored_gateway_fields(&new.spec);
        let mut tolerated = Vec::new();
        for f in &fields {
            if ov.pointer(&pointer(f)) == nv.pointer(&pointer(f)) {
                tolerated.push(*f);
            } else {
                verdict.deny("G1-U3", *f, format!("{f} is not represented on a v1beta1 gateway and would be discarded during conversion; use the v1beta2 API and configure gateway-specific fields under spec.gateway"));
            }
        }
        if !tolerated.is_empty() {
            verdict.warn("G1-W1", format!("legacy ignored v1beta1 gateway fields {} were never applied to the gateway workload; unchanged values are temporarily tolerated only so they can be removed", tolerated.join(", ")));
        }
        copy.spec.capacity_reserve_percent = None;
        if let Some(s) = copy.spec.storage.as_mut() {
            s.data = None;
            s.data_fsync = None;
            s.env = None;
            s.env_from = None;
            s.layout_policy = None;
            s.metadata_auto_snapshot_interval = None;
            s.metadata_fsync = None;
            s.metadata_snapshots_dir = None;
            s.rpc_public_addr = None;
        }
    }
    if let Some(s) = copy.spec.storage.as_mut() {
        legacy::grandfather_storage("G1-C7", old.spec.storage.as_ref(), s, verdict);
    }
    // G1-U5: a released replica count above the bound may stay or shrink (warning G1-W2).
    let (or, nr) = (o.replicas(), n.replicas());
    if or > MAX_REPLICAS && nr > MAX_REPLICAS {
        if nr > or {
            verdict.deny("G1-U5", "spec.replicas", format!("spec.replicas exceeds the supported maximum {MAX_REPLICAS} and may only remain unchanged or decrease until it is within the bound"));
        } else {
            verdict.warn("G1-W2", format!("spec.replicas exceeds the supported maximum {MAX_REPLICAS}; this non-expanding update is temporarily tolerated so replicas can be retired"));
        }
        copy.spec.replicas = Some(MAX_REPLICAS);
    }
    let legacy = old.spec == new.spec;
    shape_rules(&Spoke(&copy), legacy, false, verdict);
    super::spoke_payload::check(Some(old), new, verdict);
    let (Some(ho), Some(hn)) = (hub(old, verdict), hub(new, verdict)) else {
        return;
    };
    network::check_admin_port(&ho.spec, &hn.spec, verdict);
    network::check_rpc_identity(&ho, &hn, verdict);
    immutability::check_drain_freeze(&ho, &hn, verdict);
    immutability::check_rollout_freeze(&ho, &hn, verdict);
    topology::check_ownership(
        hn.metadata.namespace.as_deref().unwrap_or_default(),
        hn.metadata.name.as_deref().unwrap_or_default(),
        &ho.spec,
        &hn.spec,
        verdict,
    );
    check_volumes(&o, &n, verdict);
    if old.spec.layout_policy == Some(LayoutPolicy::Manual)
        && new.spec.layout_policy == Some(LayoutPolicy::Auto)
    {
        verdict.deny("GC-U13", "spec.layoutPolicy", "layoutPolicy transition from Manual to Auto is not supported (the change is one-way: Auto to Manual only); keep Manual");
    }
    let factor = |s: &GarageClusterSpec| s.replication.as_ref().and_then(|r| r.factor).unwrap_or(3);
    let ann = n
        .annotation(shared_types::keys::annotation::ANNOTATION_PURGE_CLUSTER_LAYOUT)
        .map(String::as_str);
    match check_factor_change(factor(&old.spec), factor(&new.spec), ann) {
        Ok(Some(w)) => verdict.warn("GC-W31", w),
        Ok(None) => {}
        Err(p) => verdict.deny("GC-S11", p.field, p.message),
    }
    super::removal::check(&ho, &hn.spec, verdict);
}

/// G1-S1 with the VolumeAttributesClass carve-outs: the class may change while live,
/// is never unset while live, and the edge-gateway rule ignores it.
fn check_volumes(o: &Spoke<'_>, n: &Spoke<'_>, verdict: &mut Verdict) {
    let meta = |s: &Spoke<'_>| s.spec().storage.as_ref().and_then(|st| st.metadata.clone());
    let data = |s: &Spoke<'_>| s.spec().storage.as_ref().and_then(|st| st.data.clone());
    if o.gateway() && n.gateway() && (o.replicas() > 0 || n.replicas() > 0) {
        let (om, nm) = (meta(o), meta(n));
        if volumes::edge_metadata_changed(om.as_ref(), nm.as_ref()) {
            verdict.deny("G1-S1", "spec.storage.metadata", "spec.storage.metadata cannot change while an edge gateway has live replicas: scale spec.replicas to 0, wait for its capacity-less roles to retire, then change the metadata PVC/EmptyDir configuration");
        }
        let vac = |v: &Option<VolumeConfig>| {
            v.as_ref()
                .and_then(|v| v.volume_attributes_class_name.clone())
        };
        if vac(&om).is_some() && vac(&nm).is_none() {
            verdict.deny("GC-VAC-1", "spec.storage.metadata.volumeAttributesClassName", "cannot unset volumeAttributesClassName while the edge gateway has live replicas; set an explicit \"default\" VolumeAttributesClass instead, or scale to zero first");
        }
    }
    if o.managed_default_pool() || n.managed_default_pool() {
        volumes::compare_volume(
            "spec.storage.metadata",
            meta(o).as_ref(),
            meta(n).as_ref(),
            verdict,
        );
        if !o.gateway() && !n.gateway() {
            volumes::compare_volume(
                "spec.storage.data",
                data(o).as_ref(),
                data(n).as_ref(),
                verdict,
            );
        }
    }
}
