//! The watches that wake the controllers, each with a back-off of its own.
//!
//! kube-runtime's `Controller::new`, `owns` and `watches` merge every watch of a controller
//! into one stream and back that stream off as a whole: each failed watch pauses all of them,
//! and the pause grows with every failure until two quiet minutes reset it. After an API
//! server restart every watch fails once (its resource version is older than the new watch
//! cache), so a controller with a few dozen watches stopped seeing any change for minutes: a
//! change made 2 s after the restart was still unseen 3 minutes later. Here each watch backs
//! off alone (client-go's per-reflector rule) and the merged stream never pauses, so a watch
//! that recovers is heard at once whatever the others do.

use std::time::{Duration, Instant};

use futures::Stream;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector;
use kube::runtime::utils::Backoff;
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Client, Resource};

/// The merged stream's back-off: none, since every watch in it has its own.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPause;

impl Iterator for NoPause {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        Some(Duration::ZERO)
    }
}

impl Backoff for NoPause {
    fn reset(&mut self) {}
}

/// A controller of `K`, woken by its own watch (with its own back-off) and kept in a store.
pub fn controller<K>(api: Api<K>, config: watcher::Config) -> Controller<K>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
    K: Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let trigger = reflector(writer, watcher(api, config).default_backoff()).applied_objects();
    Controller::for_stream(trigger, reader).trigger_backoff(NoPause)
}

/// Every object of `K` that changes or goes, for [`Controller::watches_stream`].
pub fn touched<K>(
    api: Api<K>,
    config: watcher::Config,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    watcher(api, config).default_backoff().touched_objects()
}

/// The metadata of every `K` in `namespace` (all of them for `None`) that changes or goes,
/// for [`Controller::owns_stream`]: an owner reference is all it takes to find the owner.
pub fn touched_metadata<K>(
    client: &Client,
    namespace: Option<&str>,
    config: watcher::Config,
) -> impl Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned,
    K: Send + Sync + 'static,
{
    let watch = match namespace {
        Some(ns) => watcher(
            Api::<PartialObjectMeta<K>>::namespaced(client.clone(), ns),
            config,
        ),
        None => watcher(Api::<PartialObjectMeta<K>>::all(client.clone()), config),
    };
    watch.default_backoff().touched_objects()
}

/// [`Controller::owns_stream`] over [`touched_metadata`], one line per owned kind.
pub trait OwnsIn: Sized {
    /// Wakes the owner of every `C` in `namespace` that changes or goes.
    fn owns_in<C>(self, client: &Client, namespace: Option<&str>, config: &watcher::Config) -> Self
    where
        C: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope> + Clone,
        C: std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static;
}

impl<K> OwnsIn for Controller<K>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
    K: Send + Sync + 'static,
{
    fn owns_in<C>(self, client: &Client, namespace: Option<&str>, config: &watcher::Config) -> Self
    where
        C: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope> + Clone,
        C: std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    {
        self.owns_stream(touched_metadata::<C>(client, namespace, config.clone()))
    }
}

/// How often a controller logs its failed watches. After an API server restart every watch of
/// every namespace fails at once (hundreds in a second); one line per window, with the count
/// of those not logged, says the same.
pub const FAILURE_LOG_WINDOW: Duration = Duration::from_secs(10);

/// The failed watches of one controller, logged at most once per window.
#[derive(Debug, Default)]
pub struct FailureLog {
    last: Option<Instant>,
    quiet: u64,
}

impl FailureLog {
    /// Counts a failure seen at `now`: `Some(n)` when it is to be logged, `n` being the
    /// failures not logged since the last line; `None` when it is only counted.
    pub fn admit(&mut self, now: Instant) -> Option<u64> {
        match self.last {
            Some(last) if now.duration_since(last) < FAILURE_LOG_WINDOW => {
                self.quiet += 1;
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.quiet))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_failures_is_one_line_per_window_with_the_rest_counted() {
        let mut log = FailureLog::default();
        let t = Instant::now();
        assert_eq!(log.admit(t), Some(0));
        for ms in [1, 200, 9_999] {
            assert_eq!(log.admit(t + Duration::from_millis(ms)), None);
        }
        assert_eq!(log.admit(t + FAILURE_LOG_WINDOW), Some(3));
        assert_eq!(log.admit(t + FAILURE_LOG_WINDOW * 3), Some(0));
    }
}
