//! The in-process reconciler's log. Failed passes go to stderr at warn level (or as
//! `RUST_LOG` says), and everything at info level goes to a file as well: when a site fails,
//! the last lines about its own namespaces say what the reconciler was doing, which a
//! condition seen from outside cannot.

use std::path::Path;

use anyhow::Context as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// How many lines a failed site prints.
const TAIL: usize = 60;

/// Sends the reconciler's log to stderr and to `file`.
pub(crate) fn init(file: &Path) -> anyhow::Result<()> {
    let out = std::fs::File::create(file)
        .with_context(|| format!("creating the reconciler log {}", file.display()))?;
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("reconciler=warn")),
        );
    let to_file = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(out))
        .with_filter(EnvFilter::new(
            "reconciler=info,kube_runtime=warn,kube_client=warn",
        ));
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(to_file)
        .try_init();
    Ok(())
}

/// Prints the last lines of `file` that name one of `namespaces`.
pub(crate) fn print(file: &Path, namespaces: &[&str]) {
    let Ok(text) = std::fs::read_to_string(file) else {
        println!("(no reconciler log at {})", file.display());
        return;
    };
    let names: Vec<String> = namespaces
        .iter()
        .flat_map(|n| [format!("namespace={n}"), format!("namespace=\"{n}\"")])
        .collect();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| names.iter().any(|n| l.contains(n.as_str())))
        .collect();
    println!(
        "the reconciler's last {} lines about {namespaces:?} (all of it: {}):",
        lines.len().min(TAIL),
        file.display()
    );
    for l in &lines[lines.len().saturating_sub(TAIL)..] {
        println!("  {l}");
    }
}
