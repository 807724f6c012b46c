//! Kubernetes Node label changes, watched once per process and handed to the controllers of
//! every scope: node-local pool membership and `zoneFrom` both follow Node labels. Only
//! metadata is watched, and only label changes pass. A namespace-scoped install watches Nodes
//! too (it already reads them), so neither follows a relabelling late.

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::core::PartialObjectMeta;
use kube::runtime::utils::PredicateConfig;
use kube::runtime::{WatchStreamExt, predicates, watcher};
use kube::{Api, Client};
use tokio::sync::broadcast;

/// A relabelled Node, as every controller hears of it.
pub type Relabelled = PartialObjectMeta<Node>;

/// How many changes a slow controller may fall behind before it misses some; a missed one
/// is caught up by that controller's resync.
const BACKLOG: usize = 256;

/// The sender every controller subscribes to, and the task that feeds it until aborted.
pub fn start(client: &Client) -> (broadcast::Sender<Relabelled>, tokio::task::JoinHandle<()>) {
    let (tx, _) = broadcast::channel(BACKLOG);
    let sender = tx.clone();
    let api = Api::<PartialObjectMeta<Node>>::all(client.clone());
    let task = tokio::spawn(async move {
        let mut changes = watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .predicate_filter(predicates::labels, PredicateConfig::default())
            .boxed();
        while let Some(change) = changes.next().await {
            if let Ok(node) = change {
                // No subscriber yet is no error: nothing is waiting for this change.
                let _ = sender.send(node);
            }
        }
    });
    (tx, task)
}

/// The changes from now on, as a controller trigger stream.
pub fn subscribe(
    tx: &broadcast::Sender<Relabelled>,
) -> impl Stream<Item = Result<Relabelled, watcher::Error>> + Send + 'static {
    futures::stream::unfold(tx.subscribe(), |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(node) => return Some((Ok(node), rx)),
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
}
