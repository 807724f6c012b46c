//! Feeds arbitrary bodies through the decoding of every answer the `garage-admin` client reads:
//! each endpoint's success body as that endpoint's type (`garage_admin::decode_response`, the
//! path every call takes), each node-local endpoint's envelope for the three targets
//! (`NodeResults::decode`), and the error classification of a non-success answer
//! (`GarageError::from_status`) for every status the client distinguishes.
//!
//! Input: bytes are the body itself, except that a leading 0xFF byte turns the rest into a
//! JSON document built in the answers' shape (`operator_fuzz::json`), which reaches deeper
//! than mutated text, and a leading 0xFE byte plants a secret in a body built from the rest
//! (see the last invariant).
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
//!   names its endpoint, and keeps at most 500 characters of a body that is not JSON;
//! - a secret given as the string value of a secret member (`secretAccessKey`, `secretToken`,
//!   ...) shows in the Display or Debug of no error returned for the body, wherever the
//!   member stands: in an answer-shaped object, in a document cut anywhere, among arbitrary
//!   bytes, with its value cut off at the end of the body. The rest of the body is arbitrary
//!   and may spell the same text by itself (in a JSON escape, as a node ID that the client
//!   lowercases), so the errors of the body are compared with those of its twin, the same body
//!   with another secret of the same shape: the secret may show no more often in the first
//!   than in the second, and the twin's secret likewise.

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

/// The Display and Debug text of every error returned for one body.
#[derive(Default)]
struct Shown(Vec<String>);

impl Shown {
    /// Keeps what `e` shows.
    fn record(&mut self, e: &GarageError) {
        self.0.push(format!("{e}\n{e:?}"));
    }

    /// How many times `text` shows in all of them.
    fn count(&self, text: &str) -> usize {
        self.0.iter().map(|shown| shown.matches(text).count()).sum()
    }
}

/// What a decoded answer must also satisfy.
trait Check {
    fn check(&self);
}

/// Decodes `body` as `endpoint`'s answer and checks what holds for a decoded value.
fn typed<T>(endpoint: &'static str, body: &[u8], shown: &mut Shown)
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
        Err(e) => error_shape(&e, endpoint, shown),
    }
}

/// Decodes `body` as a node-local answer of `endpoint` for every kind of target.
fn node_local<T>(endpoint: &'static str, body: &[u8], shown: &mut Shown)
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
                error_shape(&e, endpoint, shown);
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
                shown.record(&e);
            }
        }
        match r.clone().into_single() {
            Ok((id, _)) => assert!(
                r.is_complete() && r.successes().len() == 1 && r.successes().contains_key(&id)
            ),
            Err(e) => {
                assert!(!r.is_complete() || r.successes().len() != 1);
                shown.record(&e);
            }
        }
        let _ = format!("{r:?}");
    }
}

/// Every error the decoders return names its endpoint and prints.
fn error_shape(e: &GarageError, endpoint: &'static str, shown: &mut Shown) {
    assert_eq!(e.endpoint(), Some(endpoint), "{e:?}");
    assert!(!e.is_not_found(), "a 2xx body decoded as not found: {e:?}");
    shown.record(e);
}

/// Classifies `body` as the answer of every status the client tells apart.
fn error_answers(body: &[u8], shown: &mut Shown) {
    for status in [400, 401, 403, 404, 409, 500, 502, 503] {
        let e = GarageError::from_status("GetBucketInfo", status, body);
        assert_eq!(e.endpoint(), Some("GetBucketInfo"));
        if e.is_not_found() {
            assert_eq!(status, 404, "{e:?}");
        }
        assert_eq!(e.is_retryable(), status == 503, "{e:?}");
        shown.record(&e);
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
fn created_admin_token(body: &[u8], shown: &mut Shown) {
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
        Err(e) => error_shape(&e, ENDPOINT, shown),
    }
}

/// Runs every decoder on `body`; returns what their errors showed.
fn run(body: &[u8]) -> Shown {
    let mut shown = Shown::default();
    typed::<ClusterHealth>("GetClusterHealth", body, &mut shown);
    typed::<ClusterStatus>("GetClusterStatus", body, &mut shown);
    typed::<ClusterStatistics>("GetClusterStatistics", body, &mut shown);
    typed::<Vec<ConnectResult>>("ConnectClusterNodes", body, &mut shown);
    typed::<ClusterLayout>("GetClusterLayout", body, &mut shown);
    typed::<LayoutPreview>("PreviewClusterLayoutChanges", body, &mut shown);
    typed::<AppliedLayout>("ApplyClusterLayout", body, &mut shown);
    typed::<LayoutHistory>("GetClusterLayoutHistory", body, &mut shown);
    typed::<SkipDeadNodesResult>("ClusterLayoutSkipDeadNodes", body, &mut shown);
    typed::<Vec<BucketListItem>>("ListBuckets", body, &mut shown);
    typed::<BucketInfo>("GetBucketInfo", body, &mut shown);
    typed::<Vec<KeyListItem>>("ListKeys", body, &mut shown);
    typed::<KeyInfo>("GetKeyInfo", body, &mut shown);
    typed::<Vec<AdminTokenInfo>>("ListAdminTokens", body, &mut shown);
    typed::<AdminTokenInfo>("GetAdminTokenInfo", body, &mut shown);
    created_admin_token(body, &mut shown);
    node_local::<NodeInfo>("GetNodeInfo", body, &mut shown);
    node_local::<NodeStatistics>("GetNodeStatistics", body, &mut shown);
    node_local::<Value>("CreateMetadataSnapshot", body, &mut shown);
    node_local::<Vec<WorkerInfo>>("ListWorkers", body, &mut shown);
    node_local::<WorkerInfo>("GetWorkerInfo", body, &mut shown);
    node_local::<BTreeMap<String, String>>("GetWorkerVariable", body, &mut shown);
    node_local::<WorkerVariable>("SetWorkerVariable", body, &mut shown);
    node_local::<Vec<BlockError>>("ListBlockErrors", body, &mut shown);
    node_local::<BlockInfo>("GetBlockInfo", body, &mut shown);
    node_local::<RetryCount>("RetryBlockResync", body, &mut shown);
    node_local::<PurgeResult>("PurgeBlocks", body, &mut shown);
    node_local::<Value>("LaunchRepairOperation", body, &mut shown);
    error_answers(body, &mut shown);
    shown
}

/// Names of secret members: those of Garage's answers, and those of its configuration that a
/// misdirected answer could hold.
const SECRET_NAMES: &[&str] = &[
    "secretAccessKey",
    "secretToken",
    "secret_access_key",
    "rpc_secret",
    "admin_token",
    "metrics_token",
];

/// The characters of a planted secret: those of Garage's keys and tokens, and none that JSON
/// would escape, so that the secret is the same text in the body and in its decoded value.
const SECRET_ALPHABET: &[u8] =
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_+/=";

/// JSON blanks around a member's colon.
const BLANKS: &[&str] = &["", " ", "  ", "\t", "\n  ", "\r\n"];

/// A body with a secret planted as the value of a secret member, and its twin: the same body
/// with another secret of the same shape in its place.
struct Planted {
    body: Vec<u8>,
    twin: Vec<u8>,
    secret: String,
    twin_secret: String,
}

/// `secret` with every letter and digit replaced by another of its kind (a hex digit by a hex
/// digit), so that the twin parses exactly as the original does.
fn twin_of(secret: &str) -> String {
    let next = |b: u8| match b {
        b'9' => b'0',
        b'f' => b'a',
        b'F' => b'A',
        b'z' => b'g',
        b'Z' => b'G',
        b'0'..=b'8' | b'a'..=b'e' | b'A'..=b'E' | b'g'..=b'y' | b'G'..=b'Y' => b + 1,
        other => other,
    };
    secret.bytes().map(|b| char::from(next(b))).collect()
}

/// What stands before and after the planted member: an answer-shaped object it is a member of
/// (sometimes inside a node-local envelope), a document cut in two around it, or arbitrary
/// bytes; what follows may be cut short.
fn surroundings(u: &mut Unstructured<'_>) -> arbitrary::Result<(Vec<u8>, Vec<u8>)> {
    let (before, mut after) = match u.int_in_range(0..=2)? {
        0 => {
            let object =
                serde_json::to_vec(&operator_fuzz::json::object(u, 3)?).expect("a Value encodes");
            let rest = match object.as_slice() {
                b"{}" => b"}".to_vec(),
                _ => [b",", &object[1..]].concat(),
            };
            if u.arbitrary()? {
                let node = operator_fuzz::json::NODE_IDS[0];
                let envelope = format!(r#"{{"success":{{"{node}":{{"#);
                (
                    envelope.into_bytes(),
                    [&rest[..], br#"},"error":{}}"#].concat(),
                )
            } else {
                (b"{".to_vec(), rest)
            }
        }
        1 => {
            let doc =
                serde_json::to_vec(&operator_fuzz::json::value(u, 3)?).expect("a Value encodes");
            let at = u.int_in_range(0..=doc.len())?;
            (doc[..at].to_vec(), doc[at..].to_vec())
        }
        _ => {
            let len = u.arbitrary_len::<u8>()?;
            let before = u.bytes(len)?.to_vec();
            let rest = u.len();
            (before, u.bytes(rest)?.to_vec())
        }
    };
    if u.ratio(1, 4)? {
        after.truncate(u.int_in_range(0..=after.len())?);
    }
    Ok((before, after))
}

/// A planted secret and its twin, built from `u`.
fn planted(u: &mut Unstructured<'_>) -> arbitrary::Result<Planted> {
    let name = u.choose(SECRET_NAMES)?;
    let len = u.int_in_range(8..=80)?;
    let secret = (0..len)
        .map(|_| u.choose(SECRET_ALPHABET).map(|&b| char::from(b)))
        .collect::<arbitrary::Result<String>>()?;
    let (blank_before, blank_after) = (u.choose(BLANKS)?, u.choose(BLANKS)?);
    // Closed three times in four; otherwise the body ends inside the value.
    let closed = u.ratio(3, 4)?;
    let (before, after) = surroundings(u)?;
    let body = |secret: &str| {
        let member = format!(r#""{name}"{blank_before}:{blank_after}"{secret}"#);
        let rest: &[u8] = if closed { &after } else { b"" };
        [
            &before[..],
            member.as_bytes(),
            if closed { b"\"" } else { b"" },
            rest,
        ]
        .concat()
    };
    let twin_secret = twin_of(&secret);
    Ok(Planted {
        body: body(&secret),
        twin: body(&twin_secret),
        secret,
        twin_secret,
    })
}

/// The last invariant of the module documentation.
fn secret_stays_hidden(p: &Planted) {
    // A secret without a letter or digit has no twin to tell it from the rest.
    if p.secret == p.twin_secret {
        return;
    }
    let (shown, twin_shown) = (run(&p.body), run(&p.twin));
    for (secret, own, other) in [
        (&p.secret, &shown, &twin_shown),
        (&p.twin_secret, &twin_shown, &shown),
    ] {
        assert!(
            own.count(secret) <= other.count(secret),
            "the secret {secret:?} of {:?} shows in an error:\n{}",
            String::from_utf8_lossy(&p.body),
            own.0.join("\n"),
        );
    }
}

fuzz_target!(|data: &[u8]| {
    match data.split_first() {
        Some((0xFE, rest)) => {
            if let Ok(p) = planted(&mut Unstructured::new(rest)) {
                secret_stays_hidden(&p);
            }
        }
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
        _ => {
            run(data);
        }
    }
});
