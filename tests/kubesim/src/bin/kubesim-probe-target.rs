//! A tiny program kubesim's tests run as a "workspace image": it reports
//! what a container sees and answers probes.
//!
//! `kubesim-probe-target <report.json> <port|-> [path...]` writes
//! `<report.json>` with its argv, environment, working directory and every
//! file under each `path` (relative name → mode and content), appends
//! `start <pid>` to `<report.json>.starts`, then serves HTTP on
//! `$POD_IP:<port>`: `/ready` answers 503 while `$FAIL_READY_FILE` exists,
//! `/live` answers 500 while `$FAIL_LIVE_FILE` exists, anything else 200.
//! On SIGTERM it appends `SIGTERM` to `<report.json>.signals` and exits 0.
//! With port `-` it exits 0 right after writing the report (for init
//! containers).

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn main() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kubesim-probe-target: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let report = args
        .get(1)
        .ok_or("usage: kubesim-probe-target <report.json> <port|-> [path...]")?
        .clone();
    let port = args.get(2).cloned().unwrap_or_else(|| "-".into());
    let mut paths = Vec::new();
    for p in args.iter().skip(3) {
        paths.push(json!({ "path": p, "entries": list(Path::new(p)) }));
    }
    let doc = json!({
        "argv": args,
        "env": std::env::vars().collect::<BTreeMap<_, _>>(),
        "cwd": std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default(),
        "paths": paths,
    });
    let tmp = format!("{report}.tmp");
    std::fs::write(&tmp, doc.to_string()).map_err(|e| format!("writing {tmp}: {e}"))?;
    std::fs::rename(&tmp, &report).map_err(|e| format!("renaming to {report}: {e}"))?;
    append(
        &format!("{report}.starts"),
        &format!("start {}", std::process::id()),
    );
    if port == "-" {
        return Ok(());
    }
    let ip = std::env::var("POD_IP").unwrap_or_else(|_| "0.0.0.0".into());
    let listener = tokio::net::TcpListener::bind(format!("{ip}:{port}"))
        .await
        .map_err(|e| format!("binding {ip}:{port}: {e}"))?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| format!("SIGTERM handler: {e}"))?;
    loop {
        tokio::select! {
            _ = term.recv() => {
                append(&format!("{report}.signals"), "SIGTERM");
                return Ok(());
            }
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    tokio::spawn(serve(stream));
                }
            }
        }
    }
}

async fn serve(mut stream: tokio::net::TcpStream) {
    let mut buf = vec![0u8; 4096];
    let n = stream.read(&mut buf).await.unwrap_or(0);
    let request = String::from_utf8_lossy(&buf[..n]);
    let path = request.split_whitespace().nth(1).unwrap_or("/");
    let exists = |var: &str| std::env::var(var).is_ok_and(|f| Path::new(&f).exists());
    let status = match path {
        "/ready" if exists("FAIL_READY_FILE") => "503 Service Unavailable",
        "/live" if exists("FAIL_LIVE_FILE") => "500 Internal Server Error",
        _ => "200 OK",
    };
    let response = format!("HTTP/1.1 {status}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    let _ = stream.write_all(response.as_bytes()).await;
}

fn append(path: &str, line: &str) {
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{line}");
    }
}

/// Every file under `root` (or `root` itself if it is a file).
fn list(root: &Path) -> Value {
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    json!(out)
}

fn walk(root: &Path, path: &Path, out: &mut BTreeMap<String, Value>) {
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    if meta.is_dir() {
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        for entry in entries.flatten() {
            walk(root, &entry.path(), out);
        }
    } else {
        let name = path
            .strip_prefix(root)
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let content = std::fs::read(path)
            .map(|c| String::from_utf8_lossy(&c).into_owned())
            .unwrap_or_default();
        out.insert(name, json!({ "mode": format!("{:o}", meta.permissions().mode() & 0o7777), "content": content }));
    }
}
