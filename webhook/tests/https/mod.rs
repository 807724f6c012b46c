//! The webhook server started in this process (or as its binary) with a keypair from a temporary
//! directory, and a small HTTPS/1.1 client that controls every byte and every connection, so
//! that a test can hold a request half-sent or a connection idle.

// Not every test binary uses every helper.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use certs::{Mode, MountedConfig};
use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use webhook::server::dispatch::{Endpoint, Settings};
use webhook::server::limits::Limits;
use webhook::server::{Running, ServeConfig, start};

/// A CA, a serving keypair for 127.0.0.1 in `dir` (as cert-manager mounts it), and a client
/// configuration trusting the CA.
pub struct Pki {
    pub dir: tempfile::TempDir,
    pub client: Arc<rustls::ClientConfig>,
}

impl Pki {
    pub fn new() -> Pki {
        certs::install_default_provider();
        let now = std::time::SystemTime::now();
        let ca = certs::generate::new_authority(now, Duration::from_secs(3600)).unwrap();
        let leaf = certs::generate::issue_serving(
            &ca,
            &["127.0.0.1".into()],
            now,
            Duration::from_secs(3600),
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tls.crt"), &leaf.cert_pem).unwrap();
        std::fs::write(dir.path().join("tls.key"), &leaf.key_pem).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca.cert_pem.as_bytes()).unwrap())
            .unwrap();
        let client = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        Pki {
            dir,
            client: Arc::new(client),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The server in this process, in cert-manager mode on the keypair of `pki`, with a client for
/// an API server nobody listens on: the reviews these tests send read nothing.
pub async fn serve(pki: &Pki, limits: Limits) -> Running {
    let client =
        kube::Client::try_from(kube::Config::new("https://127.0.0.1:9".parse().unwrap())).unwrap();
    let config = ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        certificates: Mode::CertManager(MountedConfig::new(pki.path())),
        settings: Settings::default(),
        limits,
    };
    let running = start(config, client).await.unwrap();
    wait_ready(pki, running.local_addr()).await;
    running
}

/// Waits until `/readyz` at `addr` answers 200.
pub async fn wait_ready(pki: &Pki, addr: SocketAddr) {
    for _ in 0..200 {
        if let Ok(mut c) = Connection::open(addr, pki).await
            && c.get("/readyz").await.is_ok_and(|r| r.status == 200)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{addr} never became ready");
}

/// One answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The AdmissionReview answer, checked to be for `uid`.
    pub fn review_for(&self, uid: &str) -> Value {
        assert_eq!(self.status, 200, "{}", self.text());
        let review: Value = serde_json::from_slice(&self.body).unwrap();
        assert_eq!(review["response"]["uid"], uid, "{review}");
        review
    }
}

/// One TLS connection.
pub struct Connection {
    stream: TlsStream<TcpStream>,
    buffered: Vec<u8>,
}

impl Connection {
    pub async fn open(addr: SocketAddr, pki: &Pki) -> std::io::Result<Connection> {
        let tcp = TcpStream::connect(addr).await?;
        let name = ServerName::IpAddress(addr.ip().into());
        let stream = TlsConnector::from(pki.client.clone())
            .connect(name, tcp)
            .await?;
        Ok(Connection {
            stream,
            buffered: Vec::new(),
        })
    }

    /// Sends a request's head; the body follows with [`Connection::send`].
    pub async fn head(&mut self, method: &str, path: &str, length: usize) -> std::io::Result<()> {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nhost: webhook\r\ncontent-type: application/json\r\ncontent-length: {length}\r\n\r\n"
        );
        self.send(head.as_bytes()).await
    }

    pub async fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes).await?;
        self.stream.flush().await
    }

    pub async fn get(&mut self, path: &str) -> std::io::Result<Answer> {
        self.send(format!("GET {path} HTTP/1.1\r\nhost: webhook\r\n\r\n").as_bytes())
            .await?;
        self.answer().await
    }

    pub async fn post(&mut self, path: &str, body: &[u8]) -> std::io::Result<Answer> {
        self.head("POST", path, body.len()).await?;
        self.send(body).await?;
        self.answer().await
    }

    async fn fill(&mut self) -> std::io::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk).await?;
        self.buffered.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// Reads one answer (a body with a content-length).
    pub async fn answer(&mut self) -> std::io::Result<Answer> {
        let eof = || std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed");
        let end = loop {
            if let Some(i) = self.buffered.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            if self.fill().await? == 0 {
                return Err(eof());
            }
        };
        let head = String::from_utf8_lossy(&self.buffered[..end]).into_owned();
        self.buffered.drain(..end + 4);
        let mut lines = head.split("\r\n");
        let status: u16 = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
            .collect();
        let length: usize = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .map(|(_, v)| v.parse().unwrap())
            .unwrap_or(0);
        while self.buffered.len() < length {
            if self.fill().await? == 0 {
                return Err(eof());
            }
        }
        let body = self.buffered.drain(..length).collect();
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// Whether the server closed the connection (EOF or reset) within `within`.
    pub async fn closed_within(&mut self, within: Duration) -> bool {
        match tokio::time::timeout(within, self.fill()).await {
            Ok(Ok(0)) | Ok(Err(_)) => true,
            Ok(Ok(_)) | Err(_) => false,
        }
    }
}

/// Path of the v1beta2 GarageCluster validator, whose reviews of a cluster without node-local
/// pools read nothing from the API server.
pub fn validate_path() -> &'static str {
    Endpoint::ValidateClusterV1beta2.path()
}

/// A valid GarageCluster CREATE review, padded with an annotation of `padding` bytes.
pub fn review(uid: &str, padding: usize) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "garage.rajsingh.info", "version": "v1beta2", "kind": "GarageCluster"},
            "resource": {"group": "garage.rajsingh.info", "version": "v1beta2", "resource": "garageclusters"},
            "name": "garage", "namespace": "garage", "operation": "CREATE",
            "userInfo": {"username": "alice"},
            "object": {
                "apiVersion": "garage.rajsingh.info/v1beta2",
                "kind": "GarageCluster",
                "metadata": {"name": "garage", "namespace": "garage",
                    "annotations": {"example.com/padding": "x".repeat(padding)}},
                "spec": {
                    "replication": {"factor": 3, "consistencyMode": "consistent"},
                    "storage": {"replicas": 3, "metadata": {"size": "1Gi"}, "data": {"size": "10Gi"}},
                    "gateway": {"replicas": 2}
                }
            }
        }
    }))
    .unwrap()
}

/// Peak resident memory of process `pid` so far (VmHWM), in KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The `garage-webhook` binary serving in cert-manager mode on the keypair of a [`Pki`], with
/// a kubeconfig for an API server nobody listens on and the image's allocator setting; killed
/// when dropped.
pub struct Binary {
    pub child: Child,
    pub addr: SocketAddr,
    /// Its log lines (JSON).
    pub lines: Receiver<String>,
}

impl Binary {
    pub fn spawn(pki: &Pki, args: &[&str]) -> Binary {
        let kubeconfig = pki.path().join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
             clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n\
             users: [{name: u, user: {token: t}}]\n\
             contexts: [{name: c, context: {cluster: c, user: u}}]\n",
        )
        .unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_garage-webhook"))
            .args([
                "serve",
                "--cert-mode",
                "cert-manager",
                "--listen",
                "127.0.0.1:0",
            ])
            .arg("--cert-dir")
            .arg(pki.path())
            .args(args)
            .env("KUBECONFIG", &kubeconfig)
            .env("POD_NAMESPACE", "garage-operator")
            .env("POD_SERVICE_ACCOUNT", "garage-reconciler")
            .env("WEBHOOK_LOG_FORMAT", "json")
            .env("RUST_LOG", "info")
            // As the image runs it (Dockerfile).
            .env("GLIBC_TUNABLES", "glibc.malloc.arena_max=1")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (sender, lines) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let addr = loop {
            let line = lines
                .recv_timeout(Duration::from_secs(30))
                .expect("no 'listening' line from garage-webhook");
            if line.contains("garage-webhook listening") {
                let log: Value = serde_json::from_str(&line).unwrap();
                break log["addr"].as_str().unwrap().parse().unwrap();
            }
        };
        Binary { child, addr, lines }
    }

    /// Sends `signal` (`TERM`, `INT`, ...).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} failed");
    }

    pub fn peak_rss_kib(&self) -> u64 {
        peak_rss_kib(self.child.id())
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
