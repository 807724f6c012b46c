//! Replication helpers: SH-18 zone redundancy, SH-23 effective consistency
//! and peer policy, SH-24 the factor-change purge request.

use shared_types::garage_cluster::common::{
    ConsistencyMode, LayoutManagementConfig, ReplicationConfig, UnverifiedPeersPolicy,
    ZoneRedundancyMode,
};

use shared_types::keys::annotation::ANNOTATION_PURGE_CLUSTER_LAYOUT;

use super::Problem;

/// SH-18: zone redundancy settings against the replication factor.
pub fn check_zone_redundancy(r: Option<&ReplicationConfig>) -> Option<Problem> {
    let r = r?;
    let factor = r.factor.filter(|f| *f != 0).unwrap_or(3);
    let field = "spec.replication.zoneRedundancyMinZones";
    match r.zone_redundancy_mode {
        None | Some(ZoneRedundancyMode::Maximum) => r.zone_redundancy_min_zones.map(|_| {
            Problem::new(
                field,
                "only valid when zoneRedundancyMode is AtLeast; remove it or set the mode",
            )
        }),
        Some(ZoneRedundancyMode::AtLeast) => match r.zone_redundancy_min_zones {
            None => Some(Problem::new(
                field,
                "required when zoneRedundancyMode is AtLeast",
            )),
            Some(n) if n > factor => Some(Problem::new(
                field,
                format!("{n} cannot exceed replication factor {factor}"),
            )),
            Some(_) => None,
        },
    }
}

/// SH-23: the consistency mode in effect (`consistent` when unset).
pub fn effective_consistency(r: Option<&ReplicationConfig>) -> ConsistencyMode {
    r.and_then(|r| r.consistency_mode)
        .unwrap_or(ConsistencyMode::Consistent)
}

/// SH-23: the unverified-peers policy in effect (`Block` when unset).
pub fn effective_peer_policy(l: Option<&LayoutManagementConfig>) -> UnverifiedPeersPolicy {
    l.and_then(|l| l.drain.as_ref())
        .and_then(|d| d.unverified_peers_policy)
        .unwrap_or(UnverifiedPeersPolicy::Block)
}

/// A parsed `garage.rajsingh.info/purge-cluster-layout` request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PurgeRequest {
    /// Requested factor.
    pub factor: i64,
    /// Whether `force` was given.
    pub force: bool,
}

/// Parses `factor=N[,force]` (components in any order, whitespace-trimmed).
pub fn parse_purge_request(value: &str) -> Result<PurgeRequest, String> {
    let (mut factor, mut force) = (None, false);
    for part in value.split(',').map(str::trim) {
        if part == "force" {
            if force {
                return Err("duplicate force component".into());
            }
            force = true;
        } else if let Some(n) = part.strip_prefix("factor=") {
            if factor.is_some() {
                return Err("duplicate factor component".into());
            }
            match n.trim().parse::<i64>() {
                Ok(n) if n > 0 => factor = Some(n),
                _ => return Err(format!("factor {n:?} must be a positive integer")),
            }
        } else {
            return Err(format!(
                "unexpected component {part:?}; expected \"factor=N[,force]\""
            ));
        }
    }
    factor
        .map(|factor| PurgeRequest { factor, force })
        .ok_or_else(|| "missing factor component; expected \"factor=N[,force]\"".to_string())
}

/// SH-24: a changed replication factor must be requested in the same
/// update with the purge annotation naming the new factor.
pub fn check_factor_change(
    old_factor: i64,
    new_factor: i64,
    annotation: Option<&str>,
) -> Result<Option<String>, Problem> {
    if old_factor == 0 || new_factor == old_factor {
        return Ok(None);
    }
    let field = "spec.replication.factor";
    let Some(value) = annotation else {
        return Err(Problem::new(
            field,
            format!(
                "changing the replication factor from {old_factor} to {new_factor} requires setting {ANNOTATION_PURGE_CLUSTER_LAYOUT}=\"factor={new_factor}\" in the same API update"
            ),
        ));
    };
    let annotation_field = format!("metadata.annotations[{ANNOTATION_PURGE_CLUSTER_LAYOUT}]");
    let req = parse_purge_request(value)
        .map_err(|e| Problem::new(&annotation_field, format!("{value:?} is invalid: {e}")))?;
    if req.factor != new_factor {
        return Err(Problem::new(
            annotation_field,
            format!(
                "requests factor={} but spec.replication.factor is {new_factor}; make them agree",
                req.factor
            ),
        ));
    }
    Ok(Some(
        "Changing replication factor on an existing cluster requires careful data migration".into(),
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn r(v: serde_json::Value) -> ReplicationConfig {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn sh18_zone_redundancy_table() {
        let cases = [
            (json!({"factor": 3}), true),
            (json!({"factor": 3, "zoneRedundancyMode": "Maximum"}), true),
            (
                json!({"factor": 3, "zoneRedundancyMode": "AtLeast", "zoneRedundancyMinZones": 1}),
                true,
            ),
            (
                json!({"factor": 3, "zoneRedundancyMode": "AtLeast", "zoneRedundancyMinZones": 3}),
                true,
            ),
            (
                json!({"factor": 3, "zoneRedundancyMode": "AtLeast", "zoneRedundancyMinZones": 4}),
                false,
            ),
            (json!({"factor": 3, "zoneRedundancyMode": "AtLeast"}), false),
            (
                json!({"factor": 3, "zoneRedundancyMode": "Maximum", "zoneRedundancyMinZones": 2}),
                false,
            ),
        ];
        for (v, ok) in cases {
            assert_eq!(
                check_zone_redundancy(Some(&r(v.clone()))).is_none(),
                ok,
                "{v}"
            );
        }
    }

    #[test]
    fn sh24_purge_requests() {
        assert!(check_factor_change(1, 2, None).is_err());
        assert!(check_factor_change(1, 2, Some("factor=3")).is_err());
        assert!(check_factor_change(1, 2, Some("factor=2,factor=2")).is_err());
        assert!(check_factor_change(1, 2, Some("factor=2")).is_ok_and(|w| w.is_some()));
        assert!(check_factor_change(1, 2, Some("force, factor=2")).is_ok());
        assert!(check_factor_change(1, 2, Some("force,force,factor=2")).is_err());
        assert!(check_factor_change(1, 2, Some("factor=0")).is_err());
        assert!(check_factor_change(0, 2, None).is_ok());
        assert!(check_factor_change(3, 3, None).is_ok_and(|w| w.is_none()));
    }
}
