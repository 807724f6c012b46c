//! `cargo xtask up --nodes 5` as a user or a later test runs it: its stdout is exactly
//! `KUBECONFIG=<path>`, five `NODE <name> <root-dir>` lines and `READY`; the pinned kubectl
//! then lists five Ready Nodes in zones a, b, c, a, b; every operator pod answers on its own
//! address from this machine; and after SIGINT it exits 0 with no process it started (control
//! plane, kubesim pods, operator) left and no address left on `lo`.
//!
//! It uses the garage-webhook and garage-reconciler that `cargo test --workspace` builds next
//! to this test (`--no-build`); when running this test alone, run
//! `cargo build -p webhook -p reconciler --bins` first.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use localcluster::tools::Tool;
use serde_json::Value;

const NAME: &str = "up-test";
const NODES: usize = 5;
const READY_WITHIN: Duration = Duration::from_secs(600);
const STOPPED_WITHIN: Duration = Duration::from_secs(120);

/// The running `xtask up`; a failing test still stops it (SIGTERM, then SIGKILL).
struct Up {
    child: Child,
}

impl Drop for Up {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            signal(self.child.id(), "TERM");
            let deadline = Instant::now() + STOPPED_WITHIN;
            while Instant::now() < deadline {
                if !matches!(self.child.try_wait(), Ok(None)) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args(["-s", name, &pid.to_string()])
        .status()
        .expect("running kill");
    assert!(status.success(), "kill -s {name} {pid} failed");
}

/// What `up` printed on stdout.
#[derive(Debug)]
struct Printed {
    kubeconfig: PathBuf,
    nodes: Vec<(String, PathBuf)>,
}

#[test]
fn up_five_nodes_then_sigint() {
    let missing: Vec<String> = Tool::ALL
        .iter()
        .filter_map(|t| t.require().err().map(|e| e.to_string()))
        .collect();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    let kubectl = Tool::Kubectl.require().unwrap();

    let begin = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["up", "--nodes", &NODES.to_string(), "--name", NAME])
        .arg("--no-build")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting xtask up");
    let mut up = Up { child };
    let pid = up.child.id();
    let lines = forward(&mut up.child);

    let printed = read_until_ready(&lines, &mut up);
    let ready_after = begin.elapsed();
    println!("READY after {:.1}s", ready_after.as_secs_f64());

    let state_dir = printed
        .kubeconfig
        .parent()
        .expect("the kubeconfig is in the cluster's state directory")
        .to_path_buf();
    let addresses = check_nodes(&kubectl, &printed);
    let pod_addresses = check_operator_pods(&kubectl, &printed.kubeconfig);

    let started = descendants(pid);
    let marked = marked_by(&state_dir);
    // Control plane (4) and operator pods (3) at least, all started by `up`.
    assert!(
        marked.len() >= 7,
        "expected the control plane and the operator pods among processes mentioning {}, \
         found {marked:?}",
        state_dir.display()
    );
    println!(
        "up and {} processes below it, {} of them mentioning its state directory",
        started.len() - 1,
        marked.len()
    );
    let strays: Vec<_> = marked.difference(&started).collect();
    assert!(strays.is_empty(), "not started by up: {strays:?}");

    let stopping = Instant::now();
    signal(pid, "INT");
    let status = wait_exit(&mut up.child, STOPPED_WITHIN).unwrap_or_else(|| {
        panic!(
            "xtask up did not exit within {}s of SIGINT",
            STOPPED_WITHIN.as_secs()
        )
    });
    let stop_took = stopping.elapsed();
    println!("stopped {:.1}s after SIGINT", stop_took.as_secs_f64());
    assert!(
        status.success(),
        "xtask up exited with {status} after SIGINT"
    );
    assert_eq!(
        lines.recv_timeout(Duration::from_secs(5)),
        Err(mpsc::RecvTimeoutError::Disconnected),
        "stdout after READY"
    );

    let alive: Vec<_> = started.iter().filter(|p| p.alive()).collect();
    assert!(alive.is_empty(), "still running after up exited: {alive:?}");
    let left = marked_by(&state_dir);
    assert!(
        left.is_empty(),
        "processes mentioning {} after up exited: {left:?}",
        state_dir.display()
    );
    let on_lo = loopback_addresses();
    let kept: Vec<_> = addresses
        .iter()
        .chain(&pod_addresses)
        .filter(|a| on_lo.contains(*a))
        .collect();
    assert!(kept.is_empty(), "addresses left on lo: {kept:?}");
}

/// Stdout lines on a channel (closed when `up` closes stdout); stderr passed through to this
/// test's output, which the harness shows when the test fails.
fn forward(child: &mut Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[up] {line}");
        }
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Reads stdout up to READY and checks its format line by line.
fn read_until_ready(lines: &mpsc::Receiver<String>, up: &mut Up) -> Printed {
    let deadline = Instant::now() + READY_WITHIN;
    let mut kubeconfig = None;
    let mut nodes = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match lines.recv_timeout(left) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("no READY within {}s", READY_WITHIN.as_secs())
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = wait_exit(&mut up.child, Duration::from_secs(30));
                panic!("xtask up exited ({status:?}) before READY; its stderr is above")
            }
        };
        if kubeconfig.is_none() {
            let path = line
                .strip_prefix("KUBECONFIG=")
                .unwrap_or_else(|| panic!("first stdout line is not KUBECONFIG=<path>: {line:?}"));
            kubeconfig = Some(PathBuf::from(path));
        } else if let Some(rest) = line.strip_prefix("NODE ") {
            let (name, root) = rest
                .split_once(' ')
                .unwrap_or_else(|| panic!("not NODE <name> <root-dir>: {line:?}"));
            nodes.push((name.to_owned(), PathBuf::from(root)));
        } else if line == "READY" {
            break;
        } else {
            panic!("unexpected stdout line before READY: {line:?}");
        }
    }
    let kubeconfig = kubeconfig.unwrap();
    assert!(
        kubeconfig.is_absolute() && kubeconfig.is_file(),
        "{}",
        kubeconfig.display()
    );
    assert_eq!(nodes.len(), NODES, "NODE lines: {nodes:?}");
    for (name, root) in &nodes {
        assert!(
            root.is_absolute() && root.is_dir(),
            "root of {name}: {}",
            root.display()
        );
    }
    Printed { kubeconfig, nodes }
}

/// `kubectl get nodes`: the five Nodes, Ready, zones round robin. Returns their addresses.
fn check_nodes(kubectl: &Path, printed: &Printed) -> Vec<String> {
    let table = kubectl_out(kubectl, &printed.kubeconfig, &["get", "nodes"]);
    println!("{table}");
    let ready = table
        .lines()
        .skip(1)
        .filter(|l| l.split_whitespace().nth(1) == Some("Ready"))
        .count();
    assert_eq!(ready, NODES, "Ready Nodes in:\n{table}");

    let list: Value = serde_json::from_str(&kubectl_out(
        kubectl,
        &printed.kubeconfig,
        &["get", "nodes", "-o", "json"],
    ))
    .unwrap();
    let mut addresses = Vec::new();
    let mut zones = std::collections::BTreeMap::new();
    for node in list["items"].as_array().unwrap() {
        let name = node["metadata"]["name"].as_str().unwrap().to_owned();
        let zone = node["metadata"]["labels"]["topology.kubernetes.io/zone"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        zones.insert(name, zone);
        for address in node["status"]["addresses"].as_array().unwrap() {
            if address["type"] == "InternalIP" {
                addresses.push(address["address"].as_str().unwrap().to_owned());
            }
        }
    }
    let expected: std::collections::BTreeMap<String, String> = printed
        .nodes
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (name.clone(), format!("zone-{}", ["a", "b", "c"][i % 3])))
        .collect();
    assert_eq!(zones, expected, "Nodes and zones");
    addresses
}

/// Every container port of every operator pod accepts a connection on the pod's address.
/// Returns the pods' addresses.
fn check_operator_pods(kubectl: &Path, kubeconfig: &Path) -> Vec<String> {
    let list: Value = serde_json::from_str(&kubectl_out(
        kubectl,
        kubeconfig,
        &["get", "pods", "-n", "garage-operator", "-o", "json"],
    ))
    .unwrap();
    let pods = list["items"].as_array().unwrap();
    assert!(pods.len() >= 3, "operator pods: {}", pods.len());
    let mut addresses = Vec::new();
    for pod in pods {
        let name = pod["metadata"]["name"].as_str().unwrap();
        let ip = pod["status"]["podIP"].as_str().unwrap();
        addresses.push(ip.to_owned());
        for container in pod["spec"]["containers"].as_array().unwrap() {
            for port in container["ports"].as_array().into_iter().flatten() {
                let port = port["containerPort"].as_u64().unwrap();
                let address: SocketAddr = format!("{ip}:{port}").parse().unwrap();
                TcpStream::connect_timeout(&address, Duration::from_secs(5))
                    .unwrap_or_else(|e| panic!("{name} at {address}: {e}"));
            }
        }
    }
    addresses
}

fn kubectl_out(kubectl: &Path, kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new(kubectl)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .expect("running kubectl");
    assert!(
        out.status.success(),
        "kubectl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn wait_exit(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// A process, told apart from a later one with a recycled pid by its start time.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Process {
    pid: u32,
    start: u64,
    command: String,
}

impl Process {
    fn read(pid: u32) -> Option<(Process, u32, char)> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
        let (_, rest) = stat.rsplit_once(')')?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let state = fields.first()?.chars().next()?;
        let ppid = fields.get(1)?.parse().ok()?;
        let start = fields.get(19)?.parse().ok()?;
        let command = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default();
        Some((
            Process {
                pid,
                start,
                command,
            },
            ppid,
            state,
        ))
    }

    /// Still running (a zombie has finished; only its exit status waits to be collected).
    fn alive(&self) -> bool {
        Process::read(self.pid).is_some_and(|(p, _, state)| p.start == self.start && state != 'Z')
    }
}

fn all_processes() -> Vec<(Process, u32, char)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter_map(Process::read)
        .collect()
}

/// `root` and every live process below it.
fn descendants(root: u32) -> BTreeSet<Process> {
    let all = all_processes();
    let mut found: BTreeSet<u32> = BTreeSet::from([root]);
    loop {
        let before = found.len();
        for (p, ppid, _) in &all {
            if found.contains(ppid) {
                found.insert(p.pid);
            }
        }
        if found.len() == before {
            break;
        }
    }
    all.into_iter()
        .filter(|(p, _, state)| found.contains(&p.pid) && *state != 'Z')
        .map(|(p, _, _)| p)
        .collect()
}

/// Live processes whose command line, working directory or environment mentions `dir`:
/// control-plane components take their paths as flags, and kubesim starts every container
/// in its pod directory with a kubeconfig there.
fn marked_by(dir: &Path) -> BTreeSet<Process> {
    let needle = dir.to_string_lossy().into_owned();
    all_processes()
        .into_iter()
        .filter(|(p, _, state)| {
            *state != 'Z' && p.pid != std::process::id() && {
                let cwd = std::fs::read_link(format!("/proc/{}/cwd", p.pid)).unwrap_or_default();
                let environ = std::fs::read(format!("/proc/{}/environ", p.pid)).unwrap_or_default();
                p.command.contains(&needle)
                    || cwd.starts_with(dir)
                    || String::from_utf8_lossy(&environ).contains(&needle)
            }
        })
        .map(|(p, _, _)| p)
        .collect()
}

/// IPv4 addresses on `lo`.
fn loopback_addresses() -> BTreeSet<String> {
    let out = Command::new("ip")
        .args(["-o", "-4", "addr", "show", "dev", "lo"])
        .output()
        .expect("running ip");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            words.find(|w| *w == "inet")?;
            Some(words.next()?.split('/').next()?.to_owned())
        })
        .collect()
}
