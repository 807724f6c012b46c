//! Released values an UPDATE may keep: SH-12 legacy environment and GC-U5
//! volume fields the released renderer ignored. Both GarageCluster
//! validators build their validation copy with these, so the hub and the
//! v1beta1 projection of one write tolerate exactly the same legacy data
//! (under matchPolicy Equivalent both run, and either could otherwise
//! refuse what the other allows).

use k8s_openapi::api::core::v1::{EnvFromSource, EnvVar};
use shared_types::garage_cluster::common::{DataPathVolumeConfig, VolumeConfig};
use shared_types::garage_cluster::{v1beta1, v1beta2};

use crate::admission::Verdict;
use crate::admission::shared::env;
use crate::admission::shared::selector::conversion_error;
use crate::admission::shared::volume::VolumeShape;
use crate::admission::shared::{Problem, deny_first};

/// SH-12 on the pod template at `field` (reported under `rule`, the create
/// rule SH-11 belongs to there): unchanged released reserved entries and
/// unsafe envFrom sources stay, an overlong env may shrink (both with warning
/// GC-W29, for either API version), and the copy's `env`/`env_from` become
/// what SH-11 should then judge.
pub fn grandfather_env(
    field: &str,
    rule: &'static str,
    old: (Option<&Vec<EnvVar>>, Option<&Vec<EnvFromSource>>),
    copy_env: &mut Option<Vec<EnvVar>>,
    copy_env_from: &mut Option<Vec<EnvFromSource>>,
    verdict: &mut Verdict,
) {
    let judged = env::grandfather_env(
        field,
        old.0.map(Vec::as_slice).unwrap_or_default(),
        old.1.map(Vec::as_slice).unwrap_or_default(),
        copy_env.as_deref().unwrap_or_default(),
        copy_env_from.as_deref().unwrap_or_default(),
    );
    match judged {
        Ok(kept) => {
            kept.warnings
                .into_iter()
                .for_each(|w| verdict.warn("GC-W29", w));
            if copy_env.is_some() {
                *copy_env = Some(kept.env);
            }
            if copy_env_from.is_some() {
                *copy_env_from = Some(kept.env_from);
            }
        }
        Err(problem) => deny_first(verdict, rule, Some(problem)),
    }
}

/// A storage tier of either API version: the carriers of released values.
pub trait StorageTier {
    /// `env` and `envFrom`.
    fn env(&self) -> (Option<&Vec<EnvVar>>, Option<&Vec<EnvFromSource>>);
    /// `metadata` and `data`.
    fn volumes(&self) -> (Option<&VolumeConfig>, Option<&VolumeConfig>);
    /// The same four, to rewrite on the validation copy.
    fn carriers_mut(&mut self) -> StorageCarriers<'_>;
}

/// The mutable carriers of a storage tier on the validation copy.
pub type StorageCarriers<'a> = (
    &'a mut Option<Vec<EnvVar>>,
    &'a mut Option<Vec<EnvFromSource>>,
    Option<&'a mut VolumeConfig>,
    Option<&'a mut VolumeConfig>,
);

macro_rules! storage_tier {
    ($($tier:ty),*) => {$(
        impl StorageTier for $tier {
            fn env(&self) -> (Option<&Vec<EnvVar>>, Option<&Vec<EnvFromSource>>) {
                (self.env.as_ref(), self.env_from.as_ref())
            }
            fn volumes(&self) -> (Option<&VolumeConfig>, Option<&VolumeConfig>) {
                (self.metadata.as_ref(), self.data.as_ref())
            }
            fn carriers_mut(&mut self) -> StorageCarriers<'_> {
                (
                    &mut self.env,
                    &mut self.env_from,
                    self.metadata.as_mut(),
                    self.data.as_mut(),
                )
            }
        }
    )*};
}

storage_tier!(v1beta1::StorageConfig, v1beta2::StorageSpec);

/// SH-12 (reported under `rule`) and GC-U5 on `spec.storage` of the copy.
pub fn grandfather_storage<S: StorageTier>(
    rule: &'static str,
    old: Option<&S>,
    copy: &mut S,
    verdict: &mut Verdict,
) {
    let (env, env_from, metadata, data) = copy.carriers_mut();
    neutralise_storage(
        "spec.storage",
        old.map(S::volumes).unwrap_or_default(),
        (metadata, data),
        verdict,
    );
    grandfather_env(
        "spec.storage",
        rule,
        old.map(S::env).unwrap_or_default(),
        env,
        env_from,
        verdict,
    );
}

/// The PVC-shaping fields of a cluster volume: what an EmptyDir never
/// rendered, and what GC-U5 lets a released object keep unchanged.
pub trait PvcFields {
    /// A read-only view of the volume's fields.
    fn view(&self) -> VolumeShape<'_>;
    /// Clears storageClassName, selector, accessModes, labels, annotations.
    fn clear_pvc_fields(&mut self);
    /// Clears the selector.
    fn clear_selector(&mut self);
}

macro_rules! pvc_fields {
    ($($volume:ty),*) => {$(
        impl PvcFields for $volume {
            fn view(&self) -> VolumeShape<'_> {
                self.into()
            }
            fn clear_pvc_fields(&mut self) {
                self.storage_class_name = None;
                self.selector = None;
                self.access_modes = None;
                self.labels = None;
                self.annotations = None;
            }
            fn clear_selector(&mut self) {
                self.selector = None;
            }
        }
    )*};
}

pvc_fields!(VolumeConfig, DataPathVolumeConfig);

/// What the released renderer ignored on an old volume.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ignored {
    /// Nothing: every field was rendered.
    Nothing,
    /// PVC fields on an EmptyDir.
    PvcFields,
    /// A selector that does not convert to a label query.
    Selector,
}

fn carries_pvc_fields(v: &VolumeShape<'_>) -> bool {
    v.storage_class_name.is_some()
        || v.selector.is_some()
        || v.access_modes.is_some_and(|m| !m.is_empty())
        || v.labels.is_some_and(|l| !l.is_empty())
        || v.annotations.is_some_and(|a| !a.is_empty())
}

fn malformed_selector(v: &VolumeShape<'_>) -> bool {
    v.selector.is_some_and(|s| conversion_error(s).is_some())
}

fn ignored(old: &VolumeShape<'_>) -> Ignored {
    if old.is_empty_dir() {
        if carries_pvc_fields(old) {
            Ignored::PvcFields
        } else {
            Ignored::Nothing
        }
    } else if malformed_selector(old) {
        Ignored::Selector
    } else {
        Ignored::Nothing
    }
}

/// The first ignored field of `old` that `new` neither keeps nor removes.
fn first_changed(old: &VolumeShape<'_>, new: &VolumeShape<'_>, all: bool) -> Option<&'static str> {
    let selector = old.selector == new.selector || new.selector.is_none();
    if !all {
        return (!selector).then_some("selector");
    }
    [
        (
            "storageClassName",
            old.storage_class_name == new.storage_class_name || new.storage_class_name.is_none(),
        ),
        ("selector", selector),
        (
            "accessModes",
            old.access_modes == new.access_modes || new.access_modes.is_none_or(Vec::is_empty),
        ),
        (
            "labels",
            old.labels == new.labels || new.labels.is_none_or(|l| l.is_empty()),
        ),
        (
            "annotations",
            old.annotations == new.annotations || new.annotations.is_none_or(|a| a.is_empty()),
        ),
    ]
    .into_iter()
    .find(|(_, kept_or_removed)| !kept_or_removed)
    .map(|(name, _)| name)
}

/// GC-U5 on one volume: the ignored fields of `old` may only stay unchanged
/// or go, and the copy loses them. Returns whether something was ignored.
pub fn neutralise<V: PvcFields>(field: &str, old: &V, copy: &mut V) -> Result<bool, Problem> {
    let kind = ignored(&old.view());
    if kind == Ignored::Nothing {
        return Ok(false);
    }
    if let Some(sub) = first_changed(&old.view(), &copy.view(), kind == Ignored::PvcFields) {
        return Err(Problem::new(
            format!("{field}.{sub}"),
            format!(
                "{field}.{sub} was ignored by the released renderer and may only remain unchanged or be removed"
            ),
        ));
    }
    match kind {
        Ignored::PvcFields => copy.clear_pvc_fields(),
        _ => copy.clear_selector(),
    }
    Ok(true)
}

/// GC-U5 on an optional pair, reporting under `GC-U5` with warning GC-W21.
pub fn neutralise_pair<V: PvcFields>(
    field: &str,
    old: Option<&V>,
    copy: Option<&mut V>,
    verdict: &mut Verdict,
) {
    let (Some(old), Some(copy)) = (old, copy) else {
        return;
    };
    match neutralise(field, old, copy) {
        Ok(true) => verdict.warn("GC-W21", format!(
            "{field} contains unchanged released PVC fields that never affected its rendered volume; the operator ignores them and they should be removed"
        )),
        Ok(false) => {}
        Err(problem) => deny_first(verdict, "GC-U5", Some(problem)),
    }
}

/// GC-U5 on a storage tier's metadata, data and (when the counts match)
/// data-path volumes; `prefix` is the tier's field path.
pub fn neutralise_storage(
    prefix: &str,
    old: (Option<&VolumeConfig>, Option<&VolumeConfig>),
    copy: (Option<&mut VolumeConfig>, Option<&mut VolumeConfig>),
    verdict: &mut Verdict,
) {
    neutralise_pair(&format!("{prefix}.metadata"), old.0, copy.0, verdict);
    let (Some(old_data), Some(copy_data)) = (old.1, copy.1) else {
        return;
    };
    neutralise_pair(
        &format!("{prefix}.data"),
        Some(old_data),
        Some(&mut *copy_data),
        verdict,
    );
    let old_paths = old_data.paths.as_deref().unwrap_or_default();
    let Some(copy_paths) = copy_data.paths.as_mut() else {
        return;
    };
    if old_paths.len() != copy_paths.len() {
        return;
    }
    for (i, (o, c)) in old_paths.iter().zip(copy_paths.iter_mut()).enumerate() {
        neutralise_pair(
            &format!("{prefix}.data.paths[{i}].volume"),
            o.volume.as_ref(),
            c.volume.as_mut(),
            verdict,
        );
    }
}

/// GC-S5's comparison of two volume shapes ignores what GC-U5 neutralised,
/// judged by the OLD volume: the PVC fields of an EmptyDir, a malformed
/// selector. Unlike GC-U5 this does not depend on the old volume carrying
/// any: a field an EmptyDir never rendered is no live topology either way.
pub fn normalise<V: PvcFields>(old: &V, old_shape: &mut V, new_shape: &mut V) {
    let view = old.view();
    if view.is_empty_dir() {
        old_shape.clear_pvc_fields();
        new_shape.clear_pvc_fields();
    } else if malformed_selector(&view) {
        old_shape.clear_selector();
        new_shape.clear_selector();
    }
}
