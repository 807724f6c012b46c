//! Pods bound to kubesim's nodes: the watch that finds them, the state kept
//! for each, and (in submodules) their lifecycle, containers, status and
//! events.

mod container;
pub(crate) mod events;
pub(crate) mod launch;
mod lifecycle;
mod status;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use crate::Shared;
use crate::time::Clock;
use crate::volumes::VolumeMap;

pub(crate) use launch::Prepared;

/// Identifies a pod: namespace and name.
pub(crate) type PodKey = (String, String);

/// The facts about a pod every part of kubesim needs.
#[derive(Debug, Clone)]
pub(crate) struct PodInfo {
    /// The pod as first seen (its spec is immutable where it matters).
    pub pod: Arc<Pod>,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
    /// Node name.
    pub node: String,
    /// The node's clock, which the pod's status and events carry.
    pub clock: Clock,
    /// The pod's address (the node's for hostNetwork pods).
    pub ip: IpAddr,
    /// The node's address.
    pub host_ip: IpAddr,
    /// `<node root>/pods/<ns>_<name>_<uid>`.
    pub dir: PathBuf,
    /// `<state dir>/nodes/<node>`.
    pub node_root: PathBuf,
    /// `<state dir>/nodes`.
    pub nodes_root: PathBuf,
}

/// How a pod's processes are to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Keep running.
    Run,
    /// Graceful deletion: preStop, SIGTERM, SIGKILL after the grace period.
    Graceful(Duration),
    /// SIGKILL now (the pod object is gone, or kubesim shuts down hard).
    Kill,
    /// The node was lost: SIGKILL now and never touch the API again.
    Abandon,
    /// kubesim shuts down: SIGTERM, SIGKILL after the grace period, and no
    /// API writes (the pods stay as they are).
    Shutdown(Duration),
}

/// A container's state as the status reports it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CState {
    /// Not running.
    Waiting {
        /// Reason, e.g. ContainerCreating, CrashLoopBackOff.
        reason: String,
        /// Details.
        message: Option<String>,
    },
    /// Running since.
    Running {
        /// Start time.
        started_at: String,
    },
    /// Exited.
    Terminated {
        /// Exit code (128 + signal for a signal).
        exit_code: i32,
        /// Signal number, if killed by one.
        signal: Option<i32>,
        /// Completed, Error, ...
        reason: String,
        /// Start time.
        started_at: String,
        /// End time.
        finished_at: String,
        /// The pid it ran as.
        pid: u32,
    },
}

/// Runtime facts about one container.
#[derive(Debug, Clone)]
pub(crate) struct CStatus {
    /// Container name.
    pub name: String,
    /// Its image.
    pub image: String,
    /// Process group of the running instance.
    pub pgid: Option<i32>,
    /// Pid of the last started instance.
    pub last_pid: Option<u32>,
    /// Restarts so far.
    pub restart_count: i32,
    /// Current state.
    pub state: CState,
    /// The previous termination.
    pub last_state: Option<CState>,
    /// Readiness.
    pub ready: bool,
    /// Whether the startup probe passed (true without one).
    pub started: bool,
}

/// Runtime facts about a pod, from which its status is computed.
#[derive(Debug, Clone)]
pub(crate) struct PodRuntime {
    /// Pending, Running, Succeeded or Failed.
    pub phase: &'static str,
    /// When kubesim took the pod on.
    pub start_time: String,
    /// Volumes are ready (PodReadyToStartContainers).
    pub sandbox_ready: bool,
    /// Init containers have completed.
    pub initialized: bool,
    /// Init containers, in spec order.
    pub init: Vec<CStatus>,
    /// App containers, in spec order.
    pub app: Vec<CStatus>,
    /// Condition type → (status, lastTransitionTime).
    pub transitions: BTreeMap<String, (bool, String)>,
    /// No more status writes (the node is lost or the pod is gone).
    pub frozen: bool,
}

/// Everything kubesim holds for one pod.
#[derive(Debug)]
pub(crate) struct PodCtx {
    /// The agent.
    pub shared: Arc<Shared>,
    /// Facts.
    pub info: PodInfo,
    /// Where the volumes are, once set up.
    pub volumes: Mutex<VolumeMap>,
    /// Runtime state.
    pub runtime: Mutex<PodRuntime>,
    /// Poked whenever the runtime state changes.
    pub changed: Notify,
    /// How to stop.
    pub stop: watch::Sender<Stop>,
    /// Set once the pod's address went back to the pool, so that it is
    /// never released twice (it may belong to another pod by then).
    pub address_released: AtomicBool,
}

impl PodCtx {
    /// The runtime state, locked.
    pub(crate) fn runtime(&self) -> MutexGuard<'_, PodRuntime> {
        self.runtime.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Changes a container's state and schedules a status update.
    pub(crate) fn update(&self, init: bool, index: usize, f: impl FnOnce(&mut CStatus)) {
        {
            let mut rt = self.runtime();
            let list = if init { &mut rt.init } else { &mut rt.app };
            if let Some(c) = list.get_mut(index) {
                f(c);
            }
        }
        self.changed.notify_one();
    }

    /// Changes pod-level state and schedules a status update.
    pub(crate) fn update_pod(&self, f: impl FnOnce(&mut PodRuntime)) {
        f(&mut self.runtime());
        self.changed.notify_one();
    }

    /// The current stop request.
    pub(crate) fn stop_mode(&self) -> Stop {
        *self.stop.borrow()
    }

    /// Returns the pod's own address to the pool (once).
    pub(crate) fn release_address(&self) {
        if self.info.ip == self.info.host_ip || self.address_released.swap(true, Ordering::SeqCst) {
            return;
        }
        if let IpAddr::V4(ip) = self.info.ip {
            self.shared.net.release(ip);
        }
    }

    /// `ns/name`, for messages.
    pub(crate) fn key(&self) -> String {
        format!("{}/{}", self.info.namespace, self.info.name)
    }
}

/// What the pod watch keeps per pod.
#[derive(Debug)]
pub(crate) struct PodHandle {
    /// Context shared with the pod's tasks.
    pub ctx: Arc<PodCtx>,
    /// Latest object; `None` once it is gone from the API.
    pub updates: watch::Sender<Option<Arc<Pod>>>,
    /// The pod's worker.
    pub task: JoinHandle<()>,
}

/// Watches every pod and hands those bound to our nodes to workers.
pub(crate) fn spawn_watch(shared: Arc<Shared>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let pods: Api<Pod> = Api::all(shared.client.clone());
        let stream = watcher::watcher(pods, watcher::Config::default()).default_backoff();
        futures::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(Event::Apply(pod) | Event::InitApply(pod)) => observe(&shared, pod),
                Ok(Event::Delete(pod)) => gone(&shared, &pod),
                Ok(Event::Init | Event::InitDone) => {}
                Err(e) => tracing::warn!("pod watch: {e}"),
            }
        }
    })
}

fn observe(shared: &Arc<Shared>, pod: Pod) {
    let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
        return;
    };
    let (Some(namespace), Some(name), Some(uid)) = (
        pod.metadata.namespace.clone(),
        pod.metadata.name.clone(),
        pod.metadata.uid.clone(),
    ) else {
        return;
    };
    let key = (namespace.clone(), name.clone());
    let pod = Arc::new(pod);
    let mut pods = shared.pods();
    if let Some(handle) = pods.get(&key) {
        if handle.ctx.info.uid == uid {
            handle.updates.send_replace(Some(pod));
            return;
        }
        // Same name, new uid: the old pod is gone (a StatefulSet recreated
        // it before we saw the deletion).
        handle.updates.send_replace(None);
        pods.remove(&key);
    }
    let Some((host_ip, node_root, clock, lost)) = shared.node_facts(&node) else {
        return;
    };
    if lost {
        return;
    }
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending");
    if matches!(phase, "Succeeded" | "Failed") && pod.metadata.deletion_timestamp.is_none() {
        // Finished before this agent started; nothing to run.
        return;
    }
    let host_network = pod
        .spec
        .as_ref()
        .and_then(|s| s.host_network)
        .unwrap_or(false);
    let ip = if host_network {
        IpAddr::V4(host_ip)
    } else {
        match shared.net.allocate() {
            Ok(ip) => IpAddr::V4(ip),
            Err(e) => {
                tracing::error!(pod = %format!("{namespace}/{name}"), "no address for the pod: {e}");
                return;
            }
        }
    };
    let info = PodInfo {
        pod: pod.clone(),
        dir: node_root
            .join("pods")
            .join(format!("{namespace}_{name}_{uid}")),
        namespace,
        name,
        uid,
        node,
        clock,
        ip,
        host_ip: IpAddr::V4(host_ip),
        node_root,
        nodes_root: shared.nodes_root.clone(),
    };
    let ctx = Arc::new(PodCtx {
        shared: shared.clone(),
        runtime: Mutex::new(lifecycle::initial_runtime(&info)),
        info,
        volumes: Mutex::new(VolumeMap::new()),
        changed: Notify::new(),
        stop: watch::channel(Stop::Run).0,
        address_released: AtomicBool::new(false),
    });
    let (updates, rx) = watch::channel(Some(pod));
    let task = tokio::spawn(lifecycle::run(ctx.clone(), rx));
    pods.insert(key, PodHandle { ctx, updates, task });
}

fn gone(shared: &Arc<Shared>, pod: &Pod) {
    let (Some(namespace), Some(name)) = (pod.metadata.namespace.clone(), pod.metadata.name.clone())
    else {
        return;
    };
    let pods = shared.pods();
    if let Some(handle) = pods.get(&(namespace, name))
        && pod.metadata.uid.as_deref() == Some(handle.ctx.info.uid.as_str())
    {
        handle.updates.send_replace(None);
    }
}
