//! SH-25: the shape of an operator-managed volume (cluster `VolumeConfig`
//! and data-path volumes), plus the VolumeAttributesClass defence-in-depth
//! checks that duplicate CRD CEL.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PersistentVolumeClaimSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use shared_types::common::VolumeType;
use shared_types::garage_cluster::common::{DataPathVolumeConfig, VolumeConfig};

use super::Problem;
use super::selector::conversion_error;

/// The claim-shape fields shared by [`VolumeConfig`] and
/// [`DataPathVolumeConfig`].
#[derive(Clone, Copy, Debug)]
pub struct VolumeShape<'a> {
    /// `type`.
    pub type_: Option<VolumeType>,
    /// `storageClassName`.
    pub storage_class_name: Option<&'a String>,
    /// `selector`.
    pub selector: Option<&'a LabelSelector>,
    /// `accessModes`.
    pub access_modes: Option<&'a Vec<String>>,
    /// `labels`.
    pub labels: Option<&'a BTreeMap<String, String>>,
    /// `annotations`.
    pub annotations: Option<&'a BTreeMap<String, String>>,
    /// `volumeAttributesClassName`.
    pub vac: Option<&'a String>,
    /// `volumeClaimTemplateSpec`.
    pub claim_template: Option<&'a PersistentVolumeClaimSpec>,
    /// `size`.
    pub size: Option<&'a Quantity>,
}

impl<'a> From<&'a VolumeConfig> for VolumeShape<'a> {
    fn from(v: &'a VolumeConfig) -> Self {
        VolumeShape {
            type_: v.type_,
            storage_class_name: v.storage_class_name.as_ref(),
            selector: v.selector.as_ref(),
            access_modes: v.access_modes.as_ref(),
            labels: v.labels.as_ref(),
            annotations: v.annotations.as_ref(),
            vac: v.volume_attributes_class_name.as_ref(),
            claim_template: v.volume_claim_template_spec.as_ref(),
            size: v.size.as_ref(),
        }
    }
}

impl<'a> From<&'a DataPathVolumeConfig> for VolumeShape<'a> {
    fn from(v: &'a DataPathVolumeConfig) -> Self {
        VolumeShape {
            type_: v.type_,
            storage_class_name: v.storage_class_name.as_ref(),
            selector: v.selector.as_ref(),
            access_modes: v.access_modes.as_ref(),
            labels: v.labels.as_ref(),
            annotations: v.annotations.as_ref(),
            vac: v.volume_attributes_class_name.as_ref(),
            claim_template: v.volume_claim_template_spec.as_ref(),
            size: v.size.as_ref(),
        }
    }
}

impl VolumeShape<'_> {
    /// Whether the volume is an EmptyDir.
    pub fn is_empty_dir(&self) -> bool {
        self.type_ == Some(VolumeType::EmptyDir)
    }
}

/// Message fragment of the claim-template rule (GC-C11, SH-25).
pub const CLAIM_TEMPLATE_MESSAGE: &str = "unsupported for operator-managed storage because arbitrary claim templates can violate Garage identity isolation; use size, storageClassName, accessModes, selector, labels, annotations, and volumeAttributesClassName, or an ordinary GarageNode existingClaim";

/// SH-25 on the volume at `field`: EmptyDir takes no PVC fields (including
/// a VolumeAttributesClass), selectors must convert, and claim
/// templates are refused.
pub fn check_volume_shape(field: &str, v: VolumeShape<'_>) -> Vec<Problem> {
    let mut out = Vec::new();
    if v.is_empty_dir() {
        let not_allowed = |sub: &str| {
            Problem::new(
                format!("{field}.{sub}"),
                "not allowed with EmptyDir type; remove it or use type PersistentVolumeClaim",
            )
        };
        if v.storage_class_name.is_some() {
            out.push(not_allowed("storageClassName"));
        }
        if v.selector.is_some() {
            out.push(not_allowed("selector"));
        }
        if v.claim_template.is_some() {
            out.push(not_allowed("volumeClaimTemplateSpec"));
        }
        if v.access_modes.is_some_and(|m| !m.is_empty()) {
            out.push(not_allowed("accessModes"));
        }
        if v.labels.is_some() {
            out.push(not_allowed("labels"));
        }
        if v.annotations.is_some() {
            out.push(not_allowed("annotations"));
        }
        if v.vac.is_some() {
            out.push(Problem::new(
                format!("{field}.volumeAttributesClassName"),
                "volumeAttributesClassName is only valid for PersistentVolumeClaim volumes; remove it or use type PersistentVolumeClaim",
            ));
        }
    }
    if let Some(e) = v.selector.and_then(conversion_error) {
        out.push(Problem::new(
            format!("{field}.selector"),
            format!("invalid PersistentVolume label selector: {e}"),
        ));
    }
    if v.claim_template.is_some() && !v.is_empty_dir() {
        out.push(Problem::new(
            format!("{field}.volumeClaimTemplateSpec"),
            CLAIM_TEMPLATE_MESSAGE,
        ));
    }
    out
}

/// The class-with-selector warning: a statically bound PV must carry the same class, or
/// the claim will not bind.
pub fn vac_selector_warning(field: &str, v: VolumeShape<'_>) -> Option<String> {
    (v.vac.is_some() && v.selector.is_some()).then(|| {
        format!(
            "{field}: volumeAttributesClassName is set together with selector; a statically provisioned PersistentVolume must carry the same spec.volumeAttributesClassName or the claim will not bind"
        )
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vol(v: serde_json::Value) -> VolumeConfig {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn empty_dir_takes_no_claim_fields() {
        for sub in [
            json!({"storageClassName": "x"}),
            json!({"selector": {"matchLabels": {"a": "b"}}}),
            json!({"accessModes": ["ReadWriteOnce"]}),
            json!({"labels": {"a": "b"}}),
            json!({"annotations": {"a": "b"}}),
            json!({"volumeAttributesClassName": "fast"}),
        ] {
            let mut v = sub.clone();
            v["type"] = json!("EmptyDir");
            let p = check_volume_shape("spec.storage.data", (&vol(v)).into());
            assert_eq!(p.len(), 1, "{sub}");
        }
        assert!(check_volume_shape("f", (&vol(json!({"type": "EmptyDir"}))).into()).is_empty());
    }

    #[test]
    fn invalid_selectors_and_claim_templates_are_rejected() {
        let p = check_volume_shape(
            "f",
            (&vol(json!({"selector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]}})))
                .into(),
        );
        assert!(
            p[0].message
                .contains("invalid PersistentVolume label selector")
        );
        let p = check_volume_shape(
            "f",
            (&vol(json!({"volumeClaimTemplateSpec": {"volumeAttributesClassName": "x"}}))).into(),
        );
        assert!(p[0].message.contains("identity isolation"));
        let w = vac_selector_warning(
            "f",
            (&vol(json!({"volumeAttributesClassName": "a", "selector": {}}))).into(),
        );
        assert!(w.is_some());
    }
}
