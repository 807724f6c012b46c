//! The cluster: options, start, kill, restart, connect and bootstrap helpers.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::config::{ADMIN_PORT, NodeConfig, RPC_PORT, S3_PORT, WEB_PORT};
use crate::process::GarageProcess;
use crate::{FixtureError, addr, binary, http};

/// The largest cluster the fixture starts.
pub const MAX_NODES: usize = 5;

const READY_TIMEOUT: Duration = Duration::from_secs(60);
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// How to build a cluster.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    nodes: usize,
    replication_factor: usize,
    extra_config: String,
}

impl ClusterOptions {
    /// `nodes` processes with a replication factor of `min(nodes, 3)`.
    pub fn new(nodes: usize) -> Self {
        Self {
            nodes,
            replication_factor: nodes.clamp(1, 3),
            extra_config: String::new(),
        }
    }

    /// Sets the replication factor written into every node's configuration.
    pub fn replication_factor(mut self, factor: usize) -> Self {
        self.replication_factor = factor;
        self
    }

    /// Appends top-level garage.toml lines (for example `rpc_timeout_msec = 5000`).
    pub fn extra_config(mut self, lines: impl Into<String>) -> Self {
        self.extra_config = lines.into();
        self
    }
}

#[derive(Debug)]
struct Node {
    ip: Ipv4Addr,
    dir: PathBuf,
    process: Option<GarageProcess>,
    id: String,
}

/// A running set of garage processes. Dropping it kills them all and removes the temporary
/// directory (set `GARAGE_FIXTURE_KEEP=1` to keep it for a post-mortem).
#[derive(Debug)]
pub struct GarageCluster {
    // Declared before `root` so the processes die before their directories are removed.
    nodes: Vec<Node>,
    // Held only so that dropping the cluster removes the directory.
    _root: Option<tempfile::TempDir>,
    root_path: PathBuf,
    binary: PathBuf,
    admin_token: String,
}

impl GarageCluster {
    /// Writes a configuration per node, starts every process and waits until each answers
    /// `GetNodeInfo` on its Admin API. The nodes are not connected to each other yet: see
    /// [`GarageCluster::connect_all`].
    pub fn start(options: ClusterOptions) -> Result<Self, FixtureError> {
        if !(1..=MAX_NODES).contains(&options.nodes) {
            return Err(FixtureError::Invalid(format!(
                "a fixture cluster has 1 to {MAX_NODES} nodes, not {}",
                options.nodes
            )));
        }
        let binary = binary::garage_binary()?;
        let root = tempfile::Builder::new()
            .prefix("garage-fixture-")
            .tempdir()
            .map_err(|e| FixtureError::io("creating the fixture directory", e))?;
        let root_path = root.path().to_path_buf();
        let ips = addr::allocate(options.nodes).ok_or_else(|| {
            FixtureError::Invalid("no free 127.0.0.x addresses for the fixture ports".into())
        })?;
        let rpc_secret = random_hex(32)?;
        let admin_token = random_hex(32)?;

        let mut nodes = Vec::with_capacity(options.nodes);
        for (i, ip) in ips.into_iter().enumerate() {
            let dir = root_path.join(format!("node{i}"));
            std::fs::create_dir_all(&dir)
                .map_err(|e| FixtureError::io(format!("creating {}", dir.display()), e))?;
            let config = NodeConfig {
                dir: &dir,
                ip,
                replication_factor: options.replication_factor,
                rpc_secret: &rpc_secret,
                admin_token: &admin_token,
                extra_top_level: &options.extra_config,
            }
            .render();
            let path = dir.join("garage.toml");
            write_private(&path, &config)?;
            nodes.push(Node {
                ip,
                dir,
                process: None,
                id: String::new(),
            });
        }
        let keep = std::env::var_os("GARAGE_FIXTURE_KEEP").is_some_and(|v| v != "0");
        let mut cluster = Self {
            nodes,
            _root: if keep { None } else { Some(root) },
            root_path,
            binary,
            admin_token,
        };
        if keep {
            eprintln!("garage-fixture: keeping {}", cluster.root_path.display());
        }
        for i in 0..cluster.nodes.len() {
            cluster.spawn(i)?;
        }
        for i in 0..cluster.nodes.len() {
            cluster.nodes[i].id = cluster.wait_ready(i)?;
        }
        Ok(cluster)
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Always false: a cluster has at least one node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The bearer token every node accepts (the configured `admin_token`).
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// The temporary root holding every node's directory.
    pub fn root(&self) -> &Path {
        &self.root_path
    }

    /// The `garage` binary the cluster runs.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// The node's 64-hex identifier.
    pub fn node_id(&self, node: usize) -> &str {
        &self.nodes[node].id
    }

    /// The node's loopback address.
    pub fn ip(&self, node: usize) -> Ipv4Addr {
        self.nodes[node].ip
    }

    /// `http://<ip>:<admin port>`.
    pub fn admin_endpoint(&self, node: usize) -> String {
        format!("http://{}:{ADMIN_PORT}", self.nodes[node].ip)
    }

    /// `http://<ip>:<s3 port>`.
    pub fn s3_endpoint(&self, node: usize) -> String {
        format!("http://{}:{S3_PORT}", self.nodes[node].ip)
    }

    /// `http://<ip>:<web port>`.
    pub fn web_endpoint(&self, node: usize) -> String {
        format!("http://{}:{WEB_PORT}", self.nodes[node].ip)
    }

    /// The RPC address other nodes use.
    pub fn rpc_addr(&self, node: usize) -> SocketAddr {
        SocketAddr::from((self.nodes[node].ip, RPC_PORT))
    }

    /// `<node id>@<ip>:<rpc port>`, the peer form `ConnectClusterNodes` takes.
    pub fn peer(&self, node: usize) -> String {
        format!("{}@{}", self.node_id(node), self.rpc_addr(node))
    }

    /// The node's own directory (config, log, `meta/`, `data/`).
    pub fn node_dir(&self, node: usize) -> &Path {
        &self.nodes[node].dir
    }

    /// The node's `data_dir`.
    pub fn data_dir(&self, node: usize) -> PathBuf {
        self.nodes[node].dir.join("data")
    }

    /// The node's `metadata_dir`.
    pub fn metadata_dir(&self, node: usize) -> PathBuf {
        self.nodes[node].dir.join("meta")
    }

    /// The node's log file (stdout and stderr of every run).
    pub fn log_path(&self, node: usize) -> PathBuf {
        self.nodes[node].dir.join("garage.log")
    }

    /// Whether the node's process is running.
    pub fn is_running(&mut self, node: usize) -> bool {
        match self.nodes[node].process.as_mut() {
            Some(p) => p.exited().is_none(),
            None => false,
        }
    }

    /// The node's process id, when running.
    pub fn pid(&self, node: usize) -> Option<u32> {
        self.nodes[node].process.as_ref().map(GarageProcess::pid)
    }

    /// SIGKILLs the node's process group and reaps it.
    pub fn kill(&mut self, node: usize) -> Result<(), FixtureError> {
        match self.nodes[node].process.take() {
            Some(p) => p.kill(),
            None => Ok(()),
        }
    }

    /// Sends a signal (for example SIGSTOP / SIGCONT to pause a node) to the node's group.
    pub fn signal(
        &self,
        node: usize,
        signal: nix::sys::signal::Signal,
    ) -> Result<(), FixtureError> {
        match self.nodes[node].process.as_ref() {
            Some(p) => p.signal(signal),
            None => Err(FixtureError::Invalid(format!("node {node} is not running"))),
        }
    }

    /// Starts a killed node again on the same directories and waits until it answers; its
    /// identity must be unchanged.
    pub fn restart(&mut self, node: usize) -> Result<(), FixtureError> {
        self.kill(node)?;
        self.spawn(node)?;
        let id = self.wait_ready(node)?;
        if id != self.nodes[node].id {
            return Err(self.node_error(
                node,
                format!(
                    "restarted with identity {id}, expected {}",
                    self.nodes[node].id
                ),
            ));
        }
        Ok(())
    }

    /// Tells node 0 about every other node (`ConnectClusterNodes`), retrying while the RPC
    /// listeners come up, then waits until every node sees all the others.
    pub fn connect_all(&self) -> Result<(), FixtureError> {
        let peers: Vec<String> = (1..self.len()).map(|i| self.peer(i)).collect();
        if peers.is_empty() {
            return Ok(());
        }
        let body = serde_json::to_string(&peers).unwrap_or_default();
        self.retry("every node to connect", READY_TIMEOUT, || {
            let answer = self.admin_json(0, "POST", "/v2/ConnectClusterNodes", Some(&body))?;
            let all_ok = answer
                .as_array()
                .is_some_and(|a| a.iter().all(|r| r["success"] == json!(true)));
            if !all_ok {
                return Ok(None);
            }
            for i in 0..self.len() {
                let status = self.admin_json(i, "GET", "/v2/GetClusterStatus", None)?;
                let up = status["nodes"]
                    .as_array()
                    .map_or(0, |n| n.iter().filter(|n| n["isUp"] == json!(true)).count());
                if up < self.len() {
                    return Ok(None);
                }
            }
            Ok(Some(()))
        })
    }

    /// Assigns every node a storage role (zone `dc<i % zones>`, `capacity` bytes), applies
    /// the layout at the next version and waits until every node reports `/health` 200.
    /// A convenience for tests that need a working cluster, not a test of the layout API.
    pub fn bootstrap_layout(&self, capacity: u64, zones: usize) -> Result<(), FixtureError> {
        let roles: Vec<Value> = (0..self.len())
            .map(|i| {
                json!({"id": self.node_id(i), "zone": format!("dc{}", i % zones.max(1)),
                       "capacity": capacity, "tags": []})
            })
            .collect();
        let body = json!({ "roles": roles }).to_string();
        self.admin_json(0, "POST", "/v2/UpdateClusterLayout", Some(&body))?;
        let layout = self.admin_json(0, "GET", "/v2/GetClusterLayout", None)?;
        let version = layout["version"].as_u64().unwrap_or(0) + 1;
        let body = json!({ "version": version }).to_string();
        self.admin_json(0, "POST", "/v2/ApplyClusterLayout", Some(&body))?;
        self.wait_healthy(READY_TIMEOUT)
    }

    /// Waits until every running node answers `/health` with 200.
    pub fn wait_healthy(&self, timeout: Duration) -> Result<(), FixtureError> {
        self.retry("every node to report /health 200", timeout, || {
            for i in 0..self.len() {
                if self.nodes[i].process.is_none() {
                    continue;
                }
                let r = http::request(
                    self.admin_addr(i),
                    "GET",
                    "/health",
                    None,
                    None,
                    CALL_TIMEOUT,
                );
                if !matches!(r, Ok(ref r) if r.status == 200) {
                    return Ok(None);
                }
            }
            Ok(Some(()))
        })
    }

    /// Calls the node's Admin API with the admin token and parses the JSON answer; a non-2xx
    /// status is an error.
    pub fn admin_json(
        &self,
        node: usize,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<Value, FixtureError> {
        let fail = |reason: String| FixtureError::Admin {
            node,
            endpoint: path.to_string(),
            reason,
        };
        let response = http::request(
            self.admin_addr(node),
            method,
            path,
            Some(&self.admin_token),
            body,
            CALL_TIMEOUT,
        )
        .map_err(|e| fail(e.to_string()))?;
        if !(200..300).contains(&response.status) {
            return Err(fail(format!("HTTP {}: {}", response.status, response.body)));
        }
        if response.body.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&response.body).map_err(|e| fail(format!("bad JSON ({e})")))
    }

    fn admin_addr(&self, node: usize) -> SocketAddr {
        SocketAddr::from((self.nodes[node].ip, ADMIN_PORT))
    }

    fn spawn(&mut self, node: usize) -> Result<(), FixtureError> {
        let config = self.nodes[node].dir.join("garage.toml");
        let log = self.log_path(node);
        let process = GarageProcess::spawn(&self.binary, &config, &log)?;
        self.nodes[node].process = Some(process);
        Ok(())
    }

    fn wait_ready(&mut self, node: usize) -> Result<String, FixtureError> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = self.nodes[node].process.as_mut().and_then(|p| p.exited()) {
                return Err(self.node_error(node, format!("exited during startup: {status}")));
            }
            if let Ok(info) = self.admin_json(node, "GET", "/v2/GetNodeInfo?node=self", None) {
                let id = info["success"]
                    .as_object()
                    .and_then(|m| m.keys().next().cloned());
                if let Some(id) = id {
                    return Ok(id);
                }
            }
            if Instant::now() > deadline {
                return Err(self.node_error(node, "Admin API did not answer within 60s".into()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn retry<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut attempt: impl FnMut() -> Result<Option<T>, FixtureError>,
    ) -> Result<T, FixtureError> {
        let deadline = Instant::now() + timeout;
        let mut last_error = None;
        loop {
            match attempt() {
                Ok(Some(v)) => return Ok(v),
                Ok(None) => {}
                Err(e) => last_error = Some(e),
            }
            if Instant::now() > deadline {
                return Err(last_error.unwrap_or(FixtureError::Timeout {
                    what: what.to_string(),
                    seconds: timeout.as_secs(),
                }));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn node_error(&self, node: usize, reason: String) -> FixtureError {
        let log = self.log_path(node);
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let log_tail = lines[lines.len().saturating_sub(30)..].join("\n");
        FixtureError::Node {
            node,
            addr: self.nodes[node].ip.to_string(),
            reason,
            log,
            log_tail,
        }
    }
}

fn random_hex(bytes: usize) -> Result<String, FixtureError> {
    use std::io::Read;
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| FixtureError::io("reading /dev/urandom", e))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

fn write_private(path: &Path, content: &str) -> Result<(), FixtureError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(content.as_bytes()))
        .map_err(|e| FixtureError::io(format!("writing {}", path.display()), e))
}
