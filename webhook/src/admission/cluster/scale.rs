//! The `/scale` subresource (SC-1..SC-7).
//!
//! The adapter decodes the `autoscaling/v1` Scale (SC-2, HTTP 400 on
//! failure) and reads the live GarageCluster with an uncached GET (SC-3,
//! SC-4, HTTP 500 on failure); everything after that is decided here. A
//! verdict that broke `SC-5` must be answered with HTTP 409 (stale
//! resourceVersion), any other denial with 403.

use shared_types::garage_cluster::common::LayoutPolicy;
use shared_types::garage_cluster::v1beta2::GarageCluster;

use super::tiers::Shape;
use super::validate_cluster;
use crate::admission::{Context, Operation, Review, Verdict};

/// What the scale request asks for.
#[derive(Clone, Copy, Debug)]
pub struct ScaleRequest<'a> {
    /// The admission operation (only UPDATE is valid).
    pub operation: Operation,
    /// `AdmissionRequest.subResource` (must be `scale`).
    pub sub_resource: Option<&'a str>,
    /// `requestResource.version`, else `resource.version`.
    pub version: &'a str,
    /// `Scale.spec.replicas`.
    pub replicas: i32,
    /// `Scale.metadata.resourceVersion`.
    pub resource_version: Option<&'a str>,
}

/// The candidate object a scale request produces (SC-6), or why the
/// request cannot be projected.
pub fn project(live: &GarageCluster, req: &ScaleRequest<'_>) -> Result<GarageCluster, String> {
    let shape = Shape::of(&live.spec);
    let mut candidate = live.clone();
    match req.version {
        "v1beta2" => {
            if shape.storage().is_none() {
                return Err("v1beta2 Scale is available only for the Auto default storage group; gateway-only clusters must change spec.gateway.replicas directly".into());
            }
            if shape.storage_policy() == LayoutPolicy::Manual {
                return Err("scale is unsupported when spec.storage.layoutPolicy is Manual because ordinary GarageNodes are individually owned".into());
            }
        }
        "v1beta1" => {
            if shape.storage().is_some() {
                if shape.storage_policy() == LayoutPolicy::Manual {
                    return Err("scale is unsupported for Manual storage because ordinary GarageNodes are individually owned".into());
                }
            } else if shape.has_gateway() {
                if shape.cluster_policy() == LayoutPolicy::Manual {
                    return Err("scale is unsupported for Manual gateways because gateway GarageNodes are individually owned".into());
                }
                if let Some(g) = candidate.spec.gateway.as_mut() {
                    g.replicas = Some(req.replicas);
                }
                return Ok(candidate);
            } else {
                return Err("scale is unavailable for a management-handle GarageCluster".into());
            }
        }
        other => {
            return Err(format!(
                "unsupported GarageCluster scale API version {other:?}"
            ));
        }
    }
    if let Some(s) = candidate.spec.storage.as_mut() {
        s.replicas = Some(req.replicas);
    }
    Ok(candidate)
}

/// Validates a scale UPDATE against the live object: SC-1 operation,
/// SC-5 optimistic concurrency, SC-6 projection and SC-7 the full hub
/// UPDATE validation of the projected object.
pub fn validate_scale(live: &GarageCluster, req: &ScaleRequest<'_>, ctx: &Context) -> Verdict {
    let mut verdict = Verdict::new();
    if req.operation != Operation::Update || req.sub_resource != Some("scale") {
        verdict.deny(
            "SC-1",
            "request",
            "GarageCluster scale webhook accepts only UPDATE requests to the scale subresource",
        );
        return verdict;
    }
    let current = live
        .metadata
        .resource_version
        .as_deref()
        .unwrap_or_default();
    let asked = req.resource_version.unwrap_or_default();
    if asked.is_empty() || asked != current {
        verdict.deny("SC-5", "metadata.resourceVersion", format!("stale GarageCluster scale resourceVersion {asked:?}; current resourceVersion is {current:?}; re-read the Scale and retry"));
        return verdict;
    }
    match project(live, req) {
        Err(e) => verdict.deny("SC-6", "spec.replicas", e),
        Ok(candidate) => verdict.merge(validate_cluster(Review::update(live, &candidate), ctx)),
    }
    verdict
}
