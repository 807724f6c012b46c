//! Feeds arbitrary bodies through the decoding of every answer the `garage-admin` client reads:
//! each endpoint's success body as that endpoint's type (`garage_admin::decode_response`, the
//! path every call takes), each node-local endpoint's envelope for the three targets
//! (`NodeResults::decode`), and the error classification of a non-success answer
//! (`GarageError::from_status`) for every status the client distinguishes.
//!
//! Input: bytes are the body itself, except that a leading 0xFF byte turns the rest into a
//! JSON document built in the answers' shape (`operator_fuzz::json`), which reaches deeper
//! than mutated text.
//!
//! Beyond "no panic", for every body that decodes:
//! - the two routes the client decodes by agree: straight from the bytes (every call) and
//!   through a `serde_json::Value` first (the node-local envelope) give the same value, for
//!   every body a Value can hold (serde_json does not check the text of a field the type
//!   lacks, so invalid UTF-8 or an out-of-range number there decodes only the direct way);
//! - the parts of an answer that are also sent (roles, layout parameters, quotas, permissions,
//!   CORS and lifecycle rules, routing rules, aliases, node IDs) re-encode and decode to the
//!   same value, and a staged role change re-encoded as the client would stage it reads back
//!   as the same staged change (what verifying a staged layout relies on);
//! - a node-local answer holds at least one node and, for `self` or one node, exactly that
//!   one; its completeness accessors agree with its failures;
//! - a layout history whose migration is settled is settled, and a layout that reports no
//!   staged changes has none;
//! - an error built from any body is "not found" only for a 404, retryable only for a 503,
//!   names its endpoint, and keeps at most 500 characters of a body that is not JSON.

#![no_main]

use std::collections::BTreeMap;
use std::fmt::Debug;

use arbitrary::Unstructured;
use garage_admin::{
    AdminTokenInfo, AppliedLayout, BlockError, BlockInfo, BucketInfo, BucketListItem,
    ClusterHealth, ClusterLayout, ClusterStatistics, ClusterStatus, ConnectResult,
    CreatedAdminToken, GarageError, KeyInfo, KeyListItem, LayoutHistory, LayoutPreview, NodeId,
    NodeInfo, NodeResults, NodeStatistics, NodeTarget, PurgeResult, RetryCount, RoleChange,
    SkipDeadNodesResult, StagedRoleChange, WorkerInfo, WorkerVariable, decode_response,
};
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// What a decoded answer must also satisfy.
trait Check {
    fn check(&self);
}

/// Decodes `body` as `endpoint`'s answer and checks what holds for a decoded value.
fn typed<T>(endpoint: &'static str, body: &[u8])
where
    T: DeserializeOwned + PartialEq + Debug + Check,
{
    match decode_response::<T>(endpoint, body) {
        Ok(v) => {
            // serde_json skips a field the type does not have without checking its text (its
            // UTF-8, the range of its numbers), so only a body a Value can hold is compared.
            if let Ok(value) = decode_response::<Value>(endpoint, body) {
                let via_value = serde_json::from_value::<T>(value)
                    .unwrap_or_else(|e| panic!("{endpoint}: decoded, but not from its Value: {e}"));
                assert_eq!(v, via_value, "{endpoint}: the two decoding routes disagree");
            }
            let _ = format!("{v:?}");
            v.check();
        }
        Err(e) => error_shape(&e, endpoint),
    }
}

/// Decodes `body` as a node-local answer of `endpoint` for every kind of target.
fn node_local<T>(endpoint: &'static str, body: &[u8])
where
    T: DeserializeOwned + Clone + Debug + Check,
{
    let one: NodeId = "aa00000000000000000000000000000000000000000000000000000000000000"
        .parse()
        .expect("a valid node ID");
    for target in [NodeTarget::Local, NodeTarget::All, NodeTarget::Node(one)] {
        let r = match NodeResults::<T>::decode(endpoint, &target, body) {
            Ok(r) => r,
            Err(e) => {
                error_shape(&e, endpoint);
                continue;
            }
        };
        let answered = r.successes().len() + r.failures().len();
        assert!(answered >= 1, "{endpoint}: an envelope with no node passed");
        match &target {
            NodeTarget::Local => assert_eq!(answered, 1, "{endpoint}: self answered for several"),
            NodeTarget::Node(id) => assert!(
                answered == 1 && (r.successes().contains_key(id) || r.failures().contains_key(id)),
                "{endpoint}: asked one node, the answer is about another"
            ),
            NodeTarget::All => {}
        }
        for (id, v) in r.successes() {
            round_trip(id);
            v.check();
        }
        assert_eq!(r.is_complete(), r.failures().is_empty());
        match r.clone().into_complete() {
            Ok(all) => assert!(r.is_complete() && all.len() == r.successes().len()),
            Err(e) => {
                assert!(!r.is_complete() && matches!(e, GarageError::PartialFailure { .. }));
                let _ = e.to_string();
            }
        }
        match r.clone().into_single() {
            Ok((id, _)) => assert!(
                r.is_complete() && r.successes().len() == 1 && r.successes().contains_key(&id)
            ),
            Err(e) => {
                assert!(!r.is_complete() || r.successes().len() != 1);
                let _ = e.to_string();
            }
        }
        let _ = format!("{r:?}");
    }
}

/// Every error the decoders return names its endpoint and prints.
fn error_shape(e: &GarageError, endpoint: &'static str) {
    assert_eq!(e.endpoint(), Some(endpoint), "{e:?}");
    assert!(!e.is_not_found(), "a 2xx body decoded as not found: {e:?}");
    let _ = (e.to_string(), format!("{e:?}"));
}

/// Classifies `body` as the answer of every status the client tells apart.
fn error_answers(body: &[u8]) {
    for status in [400, 401, 403, 404, 409, 500, 502, 503] {
        let e = GarageError::from_status("GetBucketInfo", status, body);
        assert_eq!(e.endpoint(), Some("GetBucketInfo"));
        if e.is_not_found() {
            assert_eq!(status, 404, "{e:?}");
        }
        assert_eq!(e.is_retryable(), status == 503, "{e:?}");
        let text = e.to_string();
        // A body that is not Garage's error JSON has no code: the error keeps the endpoint,
        // the status and 500 characters of the body (and the ellipsis that marks the cut).
        if serde_json::from_slice::<Value>(body).is_err() {
            let kept = text.chars().count();
            assert!(
                kept <= 560,
                "status {status} kept {kept} characters of the body"
            );
        }
    }
}

/// `v` encodes and decodes back to itself.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(v: &T) {
    let bytes = serde_json::to_vec(v).unwrap_or_else(|e| panic!("{v:?} does not encode: {e}"));
    let back: T = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{v:?} encoded as {bytes:?} does not decode: {e}"));
    assert_eq!(
        &back,
        v,
        "a round trip through {:?} changed it",
        String::from_utf8_lossy(&bytes)
    );
}

/// A staged change, staged again as the client stages changes, reads back as itself.
fn restage(staged: &StagedRoleChange) {
    let change = RoleChange::from(staged.clone());
    let bytes = serde_json::to_vec(&change).expect("a role change encodes");
    let back: StagedRoleChange =
        serde_json::from_slice(&bytes).expect("a staged role change decodes");
    assert_eq!(&back, staged, "restaging changed the change");
}

/// Answers whose every field is a plain value: decoding them is the whole check.
macro_rules! decoded_is_checked {
    ($($t:ty),*) => {
        $(impl Check for $t {
            fn check(&self) {}
        })*
    };
}

decoded_is_checked!(
    ClusterHealth,
    ClusterStatistics,
    NodeStatistics,
    ConnectResult,
    KeyListItem,
    AdminTokenInfo,
    WorkerInfo,
    WorkerVariable,
    BlockError,
    BlockInfo,
    RetryCount,
    PurgeResult,
    Value,
    BTreeMap<String, String>
);

impl Check for ClusterStatus {
    fn check(&self) {
        for n in &self.nodes {
            round_trip(&n.id);
            if let Some(role) = &n.role {
                round_trip(role);
            }
        }
    }
}

impl Check for NodeInfo {
    fn check(&self) {
        round_trip(&self.node_id);
        if let Some(role) = &self.role {
            round_trip(role);
        }
    }
}

impl Check for ClusterLayout {
    fn check(&self) {
        round_trip(&self.parameters);
        if let Some(p) = &self.staged_parameters {
            round_trip(p);
        }
        for r in &self.roles {
            round_trip(&r.id);
            assert!(self.role(&r.id).is_some());
        }
        for s in &self.staged_role_changes {
            restage(s);
        }
        if !self.has_staged_changes() {
            assert!(self.staged_role_changes.is_empty());
        }
    }
}

impl Check for LayoutPreview {
    fn check(&self) {
        if let LayoutPreview::Success { new_layout, .. } = self {
            new_layout.check();
        }
    }
}

impl Check for AppliedLayout {
    fn check(&self) {
        self.layout.check();
    }
}

impl Check for LayoutHistory {
    fn check(&self) {
        if self.data_migration_settled() {
            assert!(
                self.is_settled(),
                "migration settled but history not settled"
            );
        }
        assert!(self.draining_versions().count() <= self.versions.len());
        for id in self.update_trackers.iter().flat_map(BTreeMap::keys) {
            round_trip(id);
        }
    }
}

impl Check for SkipDeadNodesResult {
    fn check(&self) {
        for id in self.ack_updated.iter().chain(&self.sync_updated) {
            round_trip(id);
        }
    }
}

impl Check for BucketListItem {
    fn check(&self) {
        for a in &self.local_aliases {
            round_trip(a);
        }
    }
}

impl Check for BucketInfo {
    fn check(&self) {
        round_trip(&self.quotas);
        for k in &self.keys {
            round_trip(&k.permissions);
        }
        for r in self.cors_rules.iter().flatten() {
            round_trip(r);
        }
        for r in self.lifecycle_rules.iter().flatten() {
            round_trip(r);
        }
        for r in self
            .website_config
            .iter()
            .flat_map(|w| w.routing_rules.iter().flatten())
        {
            round_trip(r);
        }
    }
}

impl Check for KeyInfo {
    fn check(&self) {
        round_trip(&self.permissions);
        for b in &self.buckets {
            round_trip(&b.permissions);
        }
        // The secret never shows in Debug output.
        if let Some(secret) = self.secret_access_key.as_ref().filter(|s| s.len() >= 8) {
            assert!(!format!("{self:?}").contains(secret.as_str()));
        }
    }
}

impl<T: Check> Check for Vec<T> {
    fn check(&self) {
        self.iter().for_each(Check::check);
    }
}

/// `CreateAdminToken`'s answer holds a secret and so has no `PartialEq`: its parts are
/// compared instead, and the secret must not show in Debug output.
fn created_admin_token(body: &[u8]) {
    const ENDPOINT: &str = "CreateAdminToken";
    match decode_response::<CreatedAdminToken>(ENDPOINT, body) {
        Ok(t) => {
            if let Ok(value) = decode_response::<Value>(ENDPOINT, body) {
                let via_value: CreatedAdminToken =
                    serde_json::from_value(value).expect("decoded, so from its Value");
                assert_eq!(t.info, via_value.info);
                assert_eq!(t.secret_token.expose(), via_value.secret_token.expose());
            }
            let secret = t.secret_token.expose();
            if secret.len() >= 8 {
                assert!(
                    !format!("{t:?}").contains(secret),
                    "the token shows in Debug"
                );
            }
        }
        Err(e) => error_shape(&e, ENDPOINT),
    }
}

fn run(body: &[u8]) {
    typed::<ClusterHealth>("GetClusterHealth", body);
    typed::<ClusterStatus>("GetClusterStatus", body);
    typed::<ClusterStatistics>("GetClusterStatistics", body);
    typed::<Vec<ConnectResult>>("ConnectClusterNodes", body);
    typed::<ClusterLayout>("GetClusterLayout", body);
    typed::<LayoutPreview>("PreviewClusterLayoutChanges", body);
    typed::<AppliedLayout>("ApplyClusterLayout", body);
    typed::<LayoutHistory>("GetClusterLayoutHistory", body);
    typed::<SkipDeadNodesResult>("ClusterLayoutSkipDeadNodes", body);
    typed::<Vec<BucketListItem>>("ListBuckets", body);
    typed::<BucketInfo>("GetBucketInfo", body);
    typed::<Vec<KeyListItem>>("ListKeys", body);
    typed::<KeyInfo>("GetKeyInfo", body);
    typed::<Vec<AdminTokenInfo>>("ListAdminTokens", body);
    typed::<AdminTokenInfo>("GetAdminTokenInfo", body);
    created_admin_token(body);
    node_local::<NodeInfo>("GetNodeInfo", body);
    node_local::<NodeStatistics>("GetNodeStatistics", body);
    node_local::<Value>("CreateMetadataSnapshot", body);
    node_local::<Vec<WorkerInfo>>("ListWorkers", body);
    node_local::<WorkerInfo>("GetWorkerInfo", body);
    node_local::<BTreeMap<String, String>>("GetWorkerVariable", body);
    node_local::<WorkerVariable>("SetWorkerVariable", body);
    node_local::<Vec<BlockError>>("ListBlockErrors", body);
    node_local::<BlockInfo>("GetBlockInfo", body);
    node_local::<RetryCount>("RetryBlockResync", body);
    node_local::<PurgeResult>("PurgeBlocks", body);
    node_local::<Value>("LaunchRepairOperation", body);
    error_answers(body);
}

fuzz_target!(|data: &[u8]| {
    match data.split_first() {
        Some((0xFF, rest)) => {
            let mut u = Unstructured::new(rest);
            // Most answers are objects; lists and bare values are the rest.
            let doc = match u.ratio(3, 4) {
                Ok(true) => operator_fuzz::json::object(&mut u, 5).map(Value::Object),
                _ => operator_fuzz::json::value(&mut u, 5),
            };
            let Ok(doc) = doc else {
                return;
            };
            let body = serde_json::to_vec(&doc).expect("a Value encodes");
            run(&body);
        }
        _ => run(data),
    }
});
