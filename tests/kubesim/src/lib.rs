//! `kubesim`: the node agent of the local test cluster.
//!
//! It plays the kubelet's part for a set of simulated Nodes: it registers
//! them, keeps their Leases fresh, and runs every Pod bound to them as real
//! processes (the real `garage` binary for Garage containers, this
//! workspace's binaries for the operator's own images, a placeholder for
//! anything else), each Pod on an address of its own. It also provisions
//! hostPath PersistentVolumes for the `local-sim` StorageClass, emulates a
//! CSI driver's ModifyVolume for VolumeAttributesClass changes, plays the
//! cloud's load balancer for `LoadBalancer` Services (an address of their own,
//! forwarding to their pods), and injects
//! faults (node loss, container kill/pause, disk wipe, a skewed node clock)
//! for tests.
//!
//! Addresses: every Node and Pod gets a /32 from one /24 of 198.18.0.0/15
//! added to `lo` (EndpointSlices refuse loopback addresses), which needs
//! root or CAP_NET_ADMIN.
//!
//! Differences from a kubelet that tests may notice: there are no
//! namespaces or bind mounts, so processes see host paths (kubesim rewrites
//! the paths it hands them: argv, env values and Garage's config) and
//! `readOnly` is not enforced; restart back-off is 1s doubling to 30s; grpc
//! probes are TCP connects.
//!
//! Everything it starts is stopped when the [`KubeSim`] is dropped.

mod env;
mod error;
mod faults;
mod garage;
mod load_balancer;
pub mod modify_volume;
mod mounts;
mod network;
mod node;
mod pods;
mod probes;
mod process;
pub mod provisioner;
mod time;
mod volumes;

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kube::Client;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use error::Error;

/// Name of the StorageClass whose claims kubesim provisions.
pub const STORAGE_CLASS: &str = "local-sim";

/// A second class of the same provisioner whose claims cannot grow
/// (`allowVolumeExpansion: false`): the API server refuses a larger request.
pub const FIXED_STORAGE_CLASS: &str = "local-sim-fixed";

/// A third class of the same provisioner whose volumes grow like [`STORAGE_CLASS`]'s, but whose
/// file system grows only when the volume is next mounted (an offline resize): after the
/// controller expansion the claim reports `FileSystemResizePending` and keeps its old capacity
/// until a pod that mounts it is started after that.
pub const OFFLINE_STORAGE_CLASS: &str = "local-sim-offline";

/// The smallest GarageCluster the simulated nodes can run: three storage replicas, replication
/// factor 3, small claims of [`STORAGE_CLASS`]. Unnamespaced; set `metadata.namespace` (or
/// create it through a namespaced API) where needed.
pub fn three_node_garage_cluster(name: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "garage.rajsingh.info/v1beta2",
        "kind": "GarageCluster",
        "metadata": {"name": name},
        "spec": {
            "replication": {"factor": 3},
            "storage": {
                "replicas": 3,
                "metadata": {"size": "100Mi", "storageClassName": STORAGE_CLASS},
                "data": {"size": "1Gi", "storageClassName": STORAGE_CLASS},
            },
        },
    })
}

/// The emulated CSI driver: the `local-sim` StorageClass provisioner and the
/// `driverName` a VolumeAttributesClass must carry to be applied.
pub const DRIVER_NAME: &str = "hostpath.kubesim.garage-operator.dev";

/// The zone label the scheduler and the operator read.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// A Node to register.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    /// Node name (also its `kubernetes.io/hostname`).
    pub name: String,
    /// Labels beyond the standard ones kubesim always sets
    /// (`kubernetes.io/hostname`, `kubernetes.io/os`, `kubernetes.io/arch`).
    pub labels: BTreeMap<String, String>,
    /// Taints, as `(key, value, effect)`: only pods that tolerate them land here.
    pub taints: Vec<(String, String, String)>,
    /// Seconds this Node's clock runs ahead of the host's (behind when
    /// negative): every timestamp kubesim writes for the Node and its pods
    /// is shifted by it. See [`NodeSpec::clock_skew`].
    pub clock_skew: i64,
}

impl NodeSpec {
    /// A node with no extra labels.
    pub fn new(name: impl Into<String>) -> Self {
        NodeSpec {
            name: name.into(),
            labels: BTreeMap::new(),
            taints: Vec::new(),
            clock_skew: 0,
        }
    }

    /// Adds a taint (`effect` is `NoSchedule`, `PreferNoSchedule` or `NoExecute`).
    pub fn taint(
        mut self,
        key: impl Into<String>,
        value: impl Into<String>,
        effect: impl Into<String>,
    ) -> Self {
        self.taints.push((key.into(), value.into(), effect.into()));
        self
    }

    /// Adds a label.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Sets `topology.kubernetes.io/zone`.
    pub fn zone(self, zone: impl Into<String>) -> Self {
        self.label(ZONE_LABEL, zone)
    }

    /// Runs this Node's clock `seconds` ahead of the host's (behind when
    /// negative), as a kubelet on a host with a wrong clock would: its Lease's
    /// renewTime, its conditions' heartbeat and transition times, and its
    /// pods' startTime, container startedAt/finishedAt, condition transition
    /// times and event timestamps all carry the skewed time. Anything that
    /// compares them with the control plane's clock sees the difference.
    pub fn clock_skew(mut self, seconds: i64) -> Self {
        self.clock_skew = seconds;
        self
    }
}

/// How to start kubesim.
#[derive(Clone, Debug)]
pub struct Options {
    /// The nodes to register.
    pub nodes: Vec<NodeSpec>,
    /// This cluster's state directory; node roots live in `<state_dir>/nodes`.
    pub state_dir: PathBuf,
    /// The `garage` binary run for Garage images.
    pub garage_bin: PathBuf,
    /// `(image substring, binary)`: an image containing the substring runs
    /// the binary (checked in order, before the Garage rule), with
    /// `KUBECONFIG` pointing at a kubeconfig for the pod's ServiceAccount.
    pub workspace_images: Vec<(String, PathBuf)>,
    /// The API server URL pods are given.
    pub apiserver_url: String,
    /// The cluster CA (PEM) pods trust.
    pub ca_pem: String,
    /// How long the emulated ModifyVolume takes.
    pub modify_volume_delay: Duration,
    /// How long the emulated controller expansion of a claim takes (its `Resizing`
    /// condition is set meanwhile).
    pub expansion_delay: Duration,
}

impl Options {
    /// Options with no nodes and no workspace images.
    pub fn new(
        state_dir: impl Into<PathBuf>,
        garage_bin: impl Into<PathBuf>,
        apiserver_url: impl Into<String>,
        ca_pem: impl Into<String>,
    ) -> Self {
        Options {
            nodes: Vec::new(),
            state_dir: state_dir.into(),
            garage_bin: garage_bin.into(),
            workspace_images: Vec::new(),
            apiserver_url: apiserver_url.into(),
            ca_pem: ca_pem.into(),
            modify_volume_delay: Duration::from_secs(2),
            expansion_delay: Duration::from_secs(3),
        }
    }

    /// Adds a node.
    pub fn node(mut self, node: NodeSpec) -> Self {
        self.nodes.push(node);
        self
    }

    /// Maps images containing `image_substring` to `binary`.
    pub fn workspace_image(
        mut self,
        image_substring: impl Into<String>,
        binary: impl Into<PathBuf>,
    ) -> Self {
        self.workspace_images
            .push((image_substring.into(), binary.into()));
        self
    }
}

/// State shared by kubesim's tasks.
pub(crate) struct Shared {
    pub(crate) client: Client,
    pub(crate) options: Options,
    pub(crate) nodes_root: PathBuf,
    pub(crate) net: network::AddressPool,
    pub(crate) processes: process::Registry,
    nodes: Mutex<BTreeMap<String, node::NodeState>>,
    pods: Mutex<HashMap<pods::PodKey, pods::PodHandle>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("nodes_root", &self.nodes_root)
            .finish_non_exhaustive()
    }
}

impl Shared {
    pub(crate) fn nodes(&self) -> MutexGuard<'_, BTreeMap<String, node::NodeState>> {
        self.nodes.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn pods(&self) -> MutexGuard<'_, HashMap<pods::PodKey, pods::PodHandle>> {
        self.pods.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A node's address, root, clock and whether it is lost; None if not ours.
    pub(crate) fn node_facts(
        &self,
        node: &str,
    ) -> Option<(std::net::Ipv4Addr, PathBuf, time::Clock, bool)> {
        self.nodes()
            .get(node)
            .map(|n| (n.ip, n.root.clone(), n.clock, *n.lost.borrow()))
    }
}

/// The running node agent. Dropping it SIGKILLs every process it started
/// and removes its addresses; [`KubeSim::shutdown`] stops them gracefully.
#[derive(Debug)]
pub struct KubeSim {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl KubeSim {
    /// Registers the nodes, starts their heartbeats, the pod watch, the
    /// `local-sim` provisioner, the ModifyVolume emulation and the load
    /// balancer.
    ///
    /// Fails with [`Error::Address`] when addresses cannot be added to `lo`
    /// (kubesim needs root or CAP_NET_ADMIN).
    pub async fn start(client: Client, options: Options) -> Result<KubeSim, Error> {
        let nodes_root = options.state_dir.join("nodes");
        std::fs::create_dir_all(&nodes_root)
            .map_err(|e| Error::io("creating the nodes root", &nodes_root, e))?;
        let (net, first_ip) = network::AddressPool::claim()?;
        let shared = Arc::new(Shared {
            client: client.clone(),
            nodes_root: nodes_root.clone(),
            net,
            processes: process::Registry::default(),
            nodes: Mutex::new(BTreeMap::new()),
            pods: Mutex::new(HashMap::new()),
            options,
        });
        let mut sim = KubeSim {
            shared: shared.clone(),
            tasks: Vec::new(),
        };
        for (i, spec) in shared.options.nodes.iter().enumerate() {
            let clock = time::Clock::skewed(spec.clock_skew);
            let since = clock.now();
            let ip = if i == 0 {
                first_ip
            } else {
                shared.net.allocate()?
            };
            let root = nodes_root.join(&spec.name);
            for dir in ["hostfs", "pods", "volumes"] {
                std::fs::create_dir_all(root.join(dir))
                    .map_err(|e| Error::io("creating the node root", root.join(dir), e))?;
            }
            node::register(&client, spec, ip, clock, &since).await?;
            let (lost, lost_rx) = watch::channel(false);
            let heartbeat =
                node::spawn_heartbeat(client.clone(), spec.name.clone(), clock, since, lost_rx);
            shared.nodes().insert(
                spec.name.clone(),
                node::NodeState {
                    ip,
                    root,
                    clock,
                    lost,
                    heartbeat: Some(heartbeat),
                },
            );
        }
        provisioner::ensure_storage_class(&client).await?;
        sim.tasks.push(provisioner::spawn(
            client.clone(),
            nodes_root,
            shared.options.expansion_delay,
        ));
        sim.tasks.push(modify_volume::spawn(
            client.clone(),
            shared.options.modify_volume_delay,
        ));
        sim.tasks.push(load_balancer::spawn(shared.clone()));
        sim.tasks.push(pods::spawn_watch(shared));
        Ok(sim)
    }

    /// `<state_dir>/nodes/<node>`: everything of one node.
    pub fn node_root(&self, node: &str) -> PathBuf {
        self.shared.nodes_root.join(node)
    }

    /// Where a pod's hostPath `path` on `node` lives:
    /// `<node_root>/hostfs/<path>`.
    pub fn host_path(&self, node: &str, path: &str) -> PathBuf {
        volumes::host_path(&self.node_root(node), path)
    }

    /// The address of a pod kubesim runs.
    pub fn pod_ip(&self, namespace: &str, pod: &str) -> Option<IpAddr> {
        self.shared
            .pods()
            .get(&(namespace.to_owned(), pod.to_owned()))
            .map(|h| h.ctx.info.ip)
    }

    /// The directory of a pod kubesim runs (volumes, logs, rewritten
    /// configs): `<node_root>/pods/<ns>_<name>_<uid>`.
    pub fn pod_dir(&self, namespace: &str, pod: &str) -> Option<PathBuf> {
        self.shared
            .pods()
            .get(&(namespace.to_owned(), pod.to_owned()))
            .map(|h| h.ctx.info.dir.clone())
    }

    /// The address of a node.
    pub fn node_ip(&self, node: &str) -> Option<IpAddr> {
        self.shared.nodes().get(node).map(|n| IpAddr::V4(n.ip))
    }

    /// Stops every pod's processes gracefully (SIGTERM, SIGKILL after 5s at
    /// most), stops the heartbeats and watches, and removes the addresses.
    /// Pods are left in the API as they are.
    pub async fn shutdown(mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
        for (_, state) in self.shared.nodes().iter_mut() {
            if let Some(task) = state.heartbeat.take() {
                task.abort();
            }
        }
        let handles: Vec<pods::PodHandle> = self.shared.pods().drain().map(|(_, h)| h).collect();
        for handle in &handles {
            handle.ctx.update_pod(|rt| rt.frozen = true);
            handle
                .ctx
                .stop
                .send_replace(pods::Stop::Shutdown(Duration::from_secs(5)));
        }
        for handle in handles {
            let _ = tokio::time::timeout(Duration::from_secs(10), handle.task).await;
        }
        self.shared.processes.kill_all();
        self.shared.net.release_all();
    }
}

impl Drop for KubeSim {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        for (_, state) in self.shared.nodes().iter_mut() {
            if let Some(task) = state.heartbeat.take() {
                task.abort();
            }
        }
        for (_, handle) in self.shared.pods().drain() {
            handle.ctx.update_pod(|rt| rt.frozen = true);
            handle.ctx.stop.send_replace(pods::Stop::Abandon);
            handle.task.abort();
        }
        self.shared.processes.kill_all();
        self.shared.net.release_all();
    }
}
