//! Feeds arbitrary bytes through the admission path the server and `garage-webhook review`
//! share: the server's body decoder, every endpoint's rule set (GarageCluster, GarageNode,
//! GarageBucket, GarageKey, GarageAdminToken, GarageReferenceGrant and the PVC guard) and the
//! response encoding, then the CLI's mutate-then-validate chain. The cross-object rules read a
//! static context (a `--state` directory built from the recorded fixtures and the sample
//! manifests: clusters, nodes, grants and namespaces), so nothing touches the network. Any panic is a finding; a denial is the expected answer to
//! junk.

#![no_main]

use std::future::Future;
use std::path::Path;
use std::pin::pin;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

use libfuzzer_sys::fuzz_target;
use webhook::cli::review::review_request;
use webhook::cli::state::StateDir;
use webhook::server::dispatch::{self, Endpoint, Settings};
use webhook::server::router::decode_review;

/// The reconciler's username as `garage-webhook serve` derives it for the PVC guard, so that
/// inputs naming it reach the guard's "controller removed the finalizer" branch.
const CONTROLLER: &str = "system:serviceaccount:garage-operator-system:garage-operator";

/// Runs a review to completion without a runtime.
fn block_on<F: Future>(future: F) -> F::Output {
    // A static context answers without waiting, so the first poll finishes. A pending poll
    // would mean the review reached for I/O, which the harness must never do.
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("an admission review waited on I/O with a static context"),
    }
}

/// Existing objects for the cross-object rules, loaded once: the state directory of the
/// recorded fixtures plus every sample manifest, the way `--state DIR` loads them.
fn state() -> &'static StateDir {
    static STATE: OnceLock<StateDir> = OnceLock::new();
    STATE.get_or_init(|| {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
        let mut state = StateDir::default();
        for dir in ["admission/state", "upstream-samples"] {
            let loaded = StateDir::load(&fixtures.join(dir))
                .unwrap_or_else(|e| panic!("the fuzz context cannot load {dir}: {e}"));
            state.garage_clusters.extend(loaded.garage_clusters);
            state.garage_nodes.extend(loaded.garage_nodes);
            state.nodes.extend(loaded.nodes);
            state.pods.extend(loaded.pods);
            state.reference_grants.extend(loaded.reference_grants);
            state.namespaces.extend(loaded.namespaces);
        }
        state
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(request) = decode_review(data) else {
        return;
    };
    let settings = Settings {
        controller_username: CONTROLLER.to_owned(),
        ..Settings::default()
    };
    let state = state();
    // The API server may send any request to any path; each endpoint must answer it.
    for endpoint in Endpoint::ALL {
        let answer = block_on(dispatch::review(endpoint, &request, state, &settings));
        let _ = serde_json::to_vec(&answer.response.into_review());
    }
    // The CLI picks endpoints by resource, applies the defaulting patch and validates both
    // GarageCluster versions; an empty state is what a user without --state gets.
    let _ = block_on(review_request(request, &StateDir::default(), &settings));
});
