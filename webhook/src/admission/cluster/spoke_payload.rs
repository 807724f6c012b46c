//! G1-C8: the environment of the v1beta2 tiers that a v1beta1 object carries
//! only in its conversion payloads (node-local pools, a gateway tier).
//!
//! Conversion restores those tiers as they are, so an operator-reserved
//! variable kept there reaches the pods as surely as one in
//! `spec.storage.env`. The v1beta1 validator therefore judges each preserved
//! environment as the hub judges the same tier: SH-11 on pool templates
//! (GC-C8, which no released version had, so nothing is grandfathered), and
//! on the gateway tier SH-11 after SH-12 on update (GC-C9). Under matchPolicy
//! Equivalent both validators see every write, and either one refusing what
//! the other allows would make the verdict depend on the version a client
//! happens to use.

use shared_types::garage_cluster::v1beta1::GarageCluster;
use shared_types::garage_cluster::v1beta2::{GatewaySpec, NodeLocalPoolSpec};

use super::legacy;
use crate::admission::Verdict;
use crate::admission::shared::env::check_env;
use crate::admission::shared::{Problem, deny_all};
use crate::convert::annotations::{
    ANNOTATION_V1BETA2_GATEWAY_TIER, ANNOTATION_V1BETA2_NODE_LOCAL_POOLS, decode_gateway,
    decode_pools, peek_transport,
};

const RULE: &str = "G1-C8";

/// What to do about an entry found in a payload: only conversion writes the
/// payloads (G1-T1, G1-T2), so the tier is changed through the v1beta2 API.
const REMEDY: &str =
    "this tier is preserved from v1beta2 by API conversion; change it through the v1beta2 API";

/// The tiers an object's payloads preserve, decoded as conversion restores them.
struct Preserved {
    pools: Vec<NodeLocalPoolSpec>,
    gateway: Option<GatewaySpec>,
}

/// The refusal of a payload under `key` that does not decode as `what`.
/// The decoder's own text can quote the offending value (an env value may be
/// a secret), so only the kind and the position of the error are reported.
fn undecodable(key: &str, what: &str, e: &serde_json::Error) -> Problem {
    Problem::new(
        format!("metadata.annotations[{key}]"),
        format!(
            "does not decode as the {what} that API conversion preserves ({:?} error at line {}, column {}); only conversion writes this annotation: write the object through the v1beta2 API",
            e.classify(),
            e.line(),
            e.column()
        ),
    )
}

/// The preserved tiers of `c`, found and decoded exactly as conversion to
/// v1beta2 finds and decodes them; a payload that does not decode is refused.
fn preserved(c: &GarageCluster) -> Result<Preserved, Problem> {
    let payloads = peek_transport(c.metadata.annotations.as_ref());
    let pools = match payloads.pools.as_deref().map(decode_pools) {
        Some(Err(e)) => {
            return Err(undecodable(
                ANNOTATION_V1BETA2_NODE_LOCAL_POOLS,
                "v1beta2 node-local pools",
                &e,
            ));
        }
        Some(Ok(pools)) => pools,
        None => Vec::new(),
    };
    let gateway = match payloads.gateway.as_deref().map(decode_gateway) {
        Some(Err(e)) => {
            return Err(undecodable(
                ANNOTATION_V1BETA2_GATEWAY_TIER,
                "v1beta2 gateway tier",
                &e,
            ));
        }
        Some(Ok(gateway)) => Some(gateway),
        None => None,
    };
    Ok(Preserved { pools, gateway })
}

/// SH-11 findings with the remedy that applies to a payload.
fn with_remedy(problems: Vec<Problem>) -> Vec<Problem> {
    problems
        .into_iter()
        .map(|p| Problem::new(p.field, format!("{}; {REMEDY}", p.message)))
        .collect()
}

/// G1-C8 on `new`, the object of a CREATE, or of an UPDATE whose stored
/// object is `old`.
pub(super) fn check(old: Option<&GarageCluster>, new: &GarageCluster, verdict: &mut Verdict) {
    let tiers = match preserved(new) {
        Ok(tiers) => tiers,
        Err(problem) => {
            verdict.deny(RULE, problem.field, problem.message);
            return;
        }
    };
    for pool in &tiers.pools {
        if let Some(t) = pool.pod_template.as_ref() {
            let field = format!(
                "metadata.annotations[{ANNOTATION_V1BETA2_NODE_LOCAL_POOLS}][{:?}].podTemplate",
                pool.name
            );
            let problems = check_env(&field, t.env.as_ref(), t.env_from.as_ref());
            deny_all(verdict, RULE, with_remedy(problems));
        }
    }
    let Some(mut gateway) = tiers.gateway else {
        return;
    };
    let field = format!("metadata.annotations[{ANNOTATION_V1BETA2_GATEWAY_TIER}]");
    if let Some(old) = old {
        // The stored tier's entries are the released ones SH-12 may keep. A
        // stored payload that does not decode releases nothing: the new one
        // is then judged as on CREATE.
        let released = preserved(old).ok().and_then(|t| t.gateway);
        let released = released.as_ref();
        legacy::grandfather_env(
            &field,
            RULE,
            (
                released.and_then(|g| g.env.as_ref()),
                released.and_then(|g| g.env_from.as_ref()),
            ),
            &mut gateway.env,
            &mut gateway.env_from,
            verdict,
        );
    }
    let problems = check_env(&field, gateway.env.as_ref(), gateway.env_from.as_ref());
    deny_all(verdict, RULE, with_remedy(problems));
}
