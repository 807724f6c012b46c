//! Starting, waiting for and stopping the control plane.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ServiceAccount;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

use crate::pki::Pki;
use crate::process::{Managed, reap_leftovers};
use crate::tools::Tool;
use crate::{Error, kubeconfig};

/// How to start a local cluster.
#[derive(Clone, Debug)]
pub struct Options {
    /// Name of the state directory under `state_root`; two clusters with
    /// different names can run side by side.
    pub name: String,
    /// Where state directories live; defaults to `<target>/localcluster`.
    pub state_root: Option<PathBuf>,
    /// How long a dead node stays Ready before the node lifecycle controller
    /// marks it NotReady (`--node-monitor-grace-period`).
    pub node_monitor_grace: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            name: "default".to_owned(),
            state_root: None,
            node_monitor_grace: Duration::from_secs(20),
        }
    }
}

/// A running control plane. Dropping it stops every process.
#[derive(Debug)]
pub struct LocalCluster {
    dir: PathBuf,
    kubeconfig: PathBuf,
    server: String,
    ca_pem: String,
    started_in: Duration,
    // In start order; stopped in reverse.
    processes: Vec<Managed>,
}

impl LocalCluster {
    /// Starts etcd, kube-apiserver, kube-controller-manager and
    /// kube-scheduler and waits until the API server is ready and the
    /// service-account controller has populated the default namespace.
    pub async fn start(options: Options) -> Result<Self, Error> {
        let begin = Instant::now();
        let etcd = Tool::Etcd.require()?;
        let apiserver = Tool::KubeApiserver.require()?;
        let controller_manager = Tool::KubeControllerManager.require()?;
        let scheduler = Tool::KubeScheduler.require()?;

        let root = options
            .state_root
            .clone()
            .unwrap_or_else(default_state_root);
        let dir = root.join(&options.name);
        let pid_file = root.join(format!("{}.pids", options.name));
        reap_leftovers(&pid_file, &dir.to_string_lossy());
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        let logs = dir.join("logs");
        std::fs::create_dir_all(&logs)?;
        let pki = Pki::create(&dir.join("pki"))?;

        let etcd_client = free_port()?;
        let etcd_peer = free_port()?;
        let secure_port = free_port()?;
        let server = format!("https://127.0.0.1:{secure_port}");

        let mut cluster = LocalCluster {
            dir: dir.clone(),
            kubeconfig: dir.join("kubeconfig"),
            server: server.clone(),
            ca_pem: pki.ca.cert_pem.clone(),
            started_in: Duration::ZERO,
            processes: Vec::new(),
        };
        let spawn = |name: &str, program: &Path, args: Vec<String>| {
            Managed::spawn(
                name,
                program,
                &args,
                &logs.join(format!("{name}.log")),
                &pid_file,
            )
        };

        let etcd_url = format!("http://127.0.0.1:{etcd_client}");
        let peer_url = format!("http://127.0.0.1:{etcd_peer}");
        cluster.processes.push(spawn(
            "etcd",
            &etcd,
            vec![
                "--name=localcluster".into(),
                format!("--data-dir={}", dir.join("etcd").display()),
                format!("--listen-client-urls={etcd_url}"),
                format!("--advertise-client-urls={etcd_url}"),
                format!("--listen-peer-urls={peer_url}"),
                format!("--initial-advertise-peer-urls={peer_url}"),
                format!("--initial-cluster=localcluster={peer_url}"),
                // Test data is thrown away; fsync only costs time.
                "--unsafe-no-fsync=true".into(),
                "--log-level=warn".into(),
            ],
        )?);
        cluster.wait_for_port("etcd", etcd_client).await?;

        let p = &pki;
        cluster.processes.push(spawn(
            "kube-apiserver",
            &apiserver,
            vec![
                format!("--etcd-servers={etcd_url}"),
                "--bind-address=127.0.0.1".into(),
                "--advertise-address=127.0.0.1".into(),
                format!("--secure-port={secure_port}"),
                format!("--cert-dir={}", dir.join("apiserver").display()),
                format!("--tls-cert-file={}", p.apiserver.cert_file.display()),
                format!("--tls-private-key-file={}", p.apiserver.key_file.display()),
                format!("--client-ca-file={}", p.ca.cert_file.display()),
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
                format!(
                    "--service-account-key-file={}",
                    p.service_account.cert_file.display()
                ),
                format!(
                    "--service-account-signing-key-file={}",
                    p.service_account.key_file.display()
                ),
                "--service-cluster-ip-range=10.96.0.0/16".into(),
                "--authorization-mode=Node,RBAC".into(),
                "--allow-privileged=true".into(),
                // Webhook and aggregated-API Services are dialled at their
                // endpoint addresses: there is no kube-proxy here.
                "--enable-aggregator-routing=true".into(),
                format!(
                    "--requestheader-client-ca-file={}",
                    p.front_proxy_ca.cert_file.display()
                ),
                "--requestheader-allowed-names=front-proxy-client".into(),
                "--requestheader-username-headers=X-Remote-User".into(),
                "--requestheader-group-headers=X-Remote-Group".into(),
                "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
                format!(
                    "--proxy-client-cert-file={}",
                    p.front_proxy_client.cert_file.display()
                ),
                format!(
                    "--proxy-client-key-file={}",
                    p.front_proxy_client.key_file.display()
                ),
                "--profiling=false".into(),
                "--v=1".into(),
            ],
        )?);
        kubeconfig::write(&cluster.kubeconfig, &server, &pki.ca, &pki.admin)?;
        cluster.wait_for_apiserver().await?;

        let kcm_config = dir.join("controller-manager.kubeconfig");
        kubeconfig::write(&kcm_config, &server, &pki.ca, &pki.controller_manager)?;
        let grace = options.node_monitor_grace.as_secs().max(5);
        cluster.processes.push(spawn(
            "kube-controller-manager",
            &controller_manager,
            vec![
                format!("--kubeconfig={}", kcm_config.display()),
                format!("--authentication-kubeconfig={}", kcm_config.display()),
                format!("--authorization-kubeconfig={}", kcm_config.display()),
                "--bind-address=127.0.0.1".into(),
                "--secure-port=0".into(),
                "--leader-elect=false".into(),
                "--controllers=*".into(),
                format!(
                    "--service-account-private-key-file={}",
                    p.service_account.key_file.display()
                ),
                format!("--root-ca-file={}", p.ca.cert_file.display()),
                // Each controller acts as its own ServiceAccount, which the
                // API server's bootstrap RBAC policy grants exactly what it
                // needs (the shared identity has no such bindings).
                "--use-service-account-credentials=true".into(),
                format!("--node-monitor-grace-period={grace}s"),
                "--node-monitor-period=2s".into(),
                "--v=1".into(),
            ],
        )?);

        let scheduler_config = dir.join("scheduler.kubeconfig");
        kubeconfig::write(&scheduler_config, &server, &pki.ca, &pki.scheduler)?;
        cluster.processes.push(spawn(
            "kube-scheduler",
            &scheduler,
            vec![
                format!("--kubeconfig={}", scheduler_config.display()),
                format!("--authentication-kubeconfig={}", scheduler_config.display()),
                format!("--authorization-kubeconfig={}", scheduler_config.display()),
                "--bind-address=127.0.0.1".into(),
                "--secure-port=0".into(),
                "--leader-elect=false".into(),
                "--v=1".into(),
            ],
        )?);
        cluster.wait_for_default_service_account().await?;
        cluster.started_in = begin.elapsed();
        Ok(cluster)
    }

    /// Path of the admin kubeconfig (`system:masters`).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The API server URL.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The cluster CA certificate (PEM) that clients must trust.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The state directory (PKI, etcd data, logs).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where component logs are written.
    pub fn logs(&self) -> PathBuf {
        self.dir.join("logs")
    }

    /// How long [`LocalCluster::start`] took.
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// A client authenticated as cluster admin.
    pub async fn client(&self) -> Result<Client, Error> {
        let kubeconfig = Kubeconfig::read_from(&self.kubeconfig)
            .map_err(|e| Error::Kube(format!("reading kubeconfig: {e}")))?;
        let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(|e| Error::Kube(format!("kubeconfig: {e}")))?;
        Client::try_from(config).map_err(|e| Error::Kube(e.to_string()))
    }

    /// Fails if any component has exited.
    pub fn check_running(&mut self) -> Result<(), Error> {
        self.processes
            .iter_mut()
            .try_for_each(Managed::check_running)
    }

    /// Restarts kube-apiserver (SIGTERM, a fresh process with the same flags and state) and
    /// waits until it is ready again; returns how long it was away. Every client sees its
    /// connections and watches break, as on a control-plane upgrade or crash.
    pub async fn restart_apiserver(&mut self) -> Result<Duration, Error> {
        let begin = Instant::now();
        let process = self
            .processes
            .iter_mut()
            .find(|p| p.name() == "kube-apiserver")
            .ok_or_else(|| Error::Kube("kube-apiserver is not running".into()))?;
        process.restart(Duration::from_secs(10))?;
        self.wait_for_apiserver().await?;
        Ok(begin.elapsed())
    }

    /// Stops every component, newest first.
    pub fn stop(&mut self) {
        while let Some(mut process) = self.processes.pop() {
            process.stop(Duration::from_secs(5));
        }
    }

    async fn wait_for_port(&mut self, what: &str, port: u16) -> Result<(), Error> {
        self.wait(what, Duration::from_secs(30), || async move {
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
        })
        .await
    }

    async fn wait_for_apiserver(&mut self) -> Result<(), Error> {
        let client = self.client().await?;
        self.wait("kube-apiserver /readyz", Duration::from_secs(120), || {
            let client = client.clone();
            async move {
                let request = http_get("/readyz");
                client
                    .request_text(request)
                    .await
                    .is_ok_and(|body| body.trim() == "ok")
            }
        })
        .await
    }

    async fn wait_for_default_service_account(&mut self) -> Result<(), Error> {
        let client = self.client().await?;
        let accounts: Api<ServiceAccount> = Api::namespaced(client, "default");
        self.wait(
            "the default ServiceAccount",
            Duration::from_secs(90),
            || {
                let accounts = accounts.clone();
                async move { matches!(accounts.get_opt("default").await, Ok(Some(_))) }
            },
        )
        .await
    }

    async fn wait<F, Fut>(&mut self, what: &str, limit: Duration, mut ready: F) -> Result<(), Error>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let deadline = Instant::now() + limit;
        loop {
            self.check_running()?;
            if ready().await {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Error::Timeout {
                    what: what.to_owned(),
                    seconds: limit.as_secs(),
                    logs: self.logs(),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

fn http_get(path: &'static str) -> http::Request<Vec<u8>> {
    let mut request = http::Request::new(Vec::new());
    *request.uri_mut() = http::Uri::from_static(path);
    request
}

/// A port nothing listens on right now, below Linux's ephemeral range (32768 and up).
/// A port the kernel hands out as ephemeral could be taken as the source port of any
/// outgoing connection (the API server's own connections to etcd included) before the
/// component binds it; below the range only another explicit bind can take it.
fn free_port() -> Result<u16, Error> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static STATE: AtomicU64 = AtomicU64::new(0);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        ^ u64::from(std::process::id()) << 32;
    for _ in 0..200 {
        // xorshift over a per-process state: distinct picks across calls and processes.
        let mut x = STATE.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed) ^ seed;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let port = 20_000 + u16::try_from(x % 12_000).unwrap_or(0);
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Ok(TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

/// `<target dir>/localcluster`, from `CARGO_TARGET_DIR` or the workspace.
pub fn default_state_root() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
            let workspace = manifest.join("../..");
            workspace.canonicalize().unwrap_or(workspace).join("target")
        });
    target.join("localcluster")
}
