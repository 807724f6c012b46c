//! `cargo xtask tools`: builds the pinned external tools once per version
//! into the tool cache (see `localcluster::tools`), from the Go module proxy
//! and the cargo registry only. Tools already in the cache are skipped, so
//! reruns are free.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use localcluster::tools::{GARAGE_FEATURES, GARAGE_VERSION, HELM_VERSION, Tool, cache_dir};

use crate::workspace_root;

pub fn run(args: &[&str]) -> Result<()> {
    let check_only = match args {
        [] => false,
        ["--check"] => true,
        _ => bail!("usage: cargo xtask tools [--check]"),
    };
    let missing: Vec<Tool> = Tool::ALL
        .into_iter()
        .filter(|t| t.require().is_err())
        .collect();
    if check_only {
        if missing.is_empty() {
            println!("all tools present in {}", cache_dir().display());
            return Ok(());
        }
        let names: Vec<_> = missing.iter().map(|t| t.binary_name()).collect();
        bail!(
            "missing tools: {}; run `cargo xtask tools`",
            names.join(", ")
        );
    }
    let built = build_missing(&missing);
    // Go's build and module caches for these three programs take several GiB
    // that nothing reads again once the binaries are cached; a CI machine's
    // disk wants them back before the workspace builds.
    let _ = remove_scratch(&go_scratch());
    built?;
    for tool in Tool::ALL {
        tool.require()?;
    }
    println!("all tools present in {}", cache_dir().display());
    Ok(())
}

fn build_missing(missing: &[Tool]) -> Result<()> {
    let wants = |tools: &[Tool]| tools.iter().any(|t| missing.contains(t));
    if wants(&[Tool::Etcd]) {
        timed("etcd", || {
            go_build("etcd", &[".".to_owned()], Tool::Etcd, "")
        })?;
    }
    let kube = [
        Tool::KubeApiserver,
        Tool::KubeControllerManager,
        Tool::KubeScheduler,
        Tool::Kubectl,
    ];
    if wants(&kube) {
        let packages: Vec<String> = kube
            .iter()
            .map(|t| format!("k8s.io/kubernetes/cmd/{}", t.binary_name()))
            .collect();
        timed("kubernetes", || {
            go_build(
                "kubernetes",
                &packages,
                Tool::KubeApiserver,
                &kubernetes_version_ldflags(),
            )
        })?;
    }
    if wants(&[Tool::Helm]) {
        timed("helm", build_helm)?;
    }
    if wants(&[Tool::Garage]) {
        timed("garage", build_garage)?;
    }
    if wants(&[Tool::ServiceMonitorCrd]) {
        timed("the ServiceMonitor CRD", generate_service_monitor_crd)?;
    }
    Ok(())
}

/// Runs controller-gen (from the wrapper module `xtask/go/prometheus-operator-crds`) over
/// prometheus-operator's `monitoring/v1` API types, into the tool's version folder.
fn generate_service_monitor_crd() -> Result<()> {
    require_program(
        "go",
        "install Go 1.26 or newer (https://go.dev/dl/) and put it on PATH",
    )?;
    let out = cache_dir().join(Tool::ServiceMonitorCrd.version_dir());
    std::fs::create_dir_all(&out)?;
    let mut command = Command::new("go");
    command
        .args([
            "run",
            "sigs.k8s.io/controller-tools/cmd/controller-gen",
            "crd:maxDescLen=0",
            "paths=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1",
        ])
        .arg(format!("output:crd:dir={}", out.display()))
        .current_dir(workspace_root().join("xtask/go/prometheus-operator-crds"))
        .env("CGO_ENABLED", "0");
    use_go_scratch(&mut command);
    run_command(&mut command)
}

/// Where the Go builds keep their build and module caches while they run.
fn go_scratch() -> std::path::PathBuf {
    cache_dir().join("build").join("go")
}

/// Points a `go` command at the scratch caches. `-modcacherw` leaves the
/// module files writable so that the scratch folder can simply be removed.
fn use_go_scratch(command: &mut Command) {
    let scratch = go_scratch();
    command
        .env("GOCACHE", scratch.join("cache"))
        .env("GOMODCACHE", scratch.join("mod"))
        .env("GOFLAGS", "-modcacherw");
}

fn remove_scratch(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", dir.display()))
        }
        _ => Ok(()),
    }
}

fn timed(name: &str, build: impl FnOnce() -> Result<()>) -> Result<()> {
    println!("==> building {name}");
    let start = Instant::now();
    build().with_context(|| format!("building {name} failed"))?;
    println!("==> {name} built in {:.0}s", start.elapsed().as_secs_f64());
    Ok(())
}

/// The version stamps a Kubernetes release build carries, so that `/version`
/// and `kubectl version` report the release instead of v0.0.0.
fn kubernetes_version_ldflags() -> String {
    let version = localcluster::tools::KUBERNETES_VERSION;
    let mut parts = version.trim_start_matches('v').split('.');
    let major = parts.next().unwrap_or("1");
    let minor = parts.next().unwrap_or("0");
    [
        "k8s.io/component-base/version",
        "k8s.io/client-go/pkg/version",
    ]
    .iter()
    .flat_map(|package| {
        [
            format!("-X {package}.gitVersion={version}"),
            format!("-X {package}.gitMajor={major}"),
            format!("-X {package}.gitMinor={minor}"),
            format!("-X {package}.gitTreeState=clean"),
        ]
    })
    .collect::<Vec<_>>()
    .join(" ")
}

/// Builds `packages` of the wrapper module `xtask/go/<module>` into the
/// version folder of `tool` (one `go build` so the packages share work).
fn go_build(module: &str, packages: &[String], tool: Tool, ldflags: &str) -> Result<()> {
    require_program(
        "go",
        "install Go 1.26 or newer (https://go.dev/dl/) and put it on PATH",
    )?;
    let out = cache_dir().join(tool.version_dir());
    std::fs::create_dir_all(&out)?;
    let mut command = Command::new("go");
    command
        .arg("build")
        .arg("-trimpath")
        .arg(format!("-ldflags={ldflags}"))
        .arg("-o")
        // A trailing slash makes go write one binary per package here.
        .arg(format!("{}/", out.display()))
        .args(packages)
        .current_dir(workspace_root().join("xtask/go").join(module))
        .env("CGO_ENABLED", "0");
    use_go_scratch(&mut command);
    run_command(&mut command)
}

fn build_helm() -> Result<()> {
    require_program(
        "go",
        "install Go 1.26 or newer (https://go.dev/dl/) and put it on PATH",
    )?;
    let out = cache_dir().join(Tool::Helm.version_dir());
    std::fs::create_dir_all(&out)?;
    let mut command = Command::new("go");
    command
        .arg("install")
        .arg(format!("helm.sh/helm/v3/cmd/helm@{HELM_VERSION}"))
        .env("GOBIN", &out)
        .env("CGO_ENABLED", "0");
    use_go_scratch(&mut command);
    run_command(&mut command)
}

fn build_garage() -> Result<()> {
    let root = cache_dir().join(Tool::Garage.version_dir());
    let version = GARAGE_VERSION.trim_start_matches('v');
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        .args([
            "install",
            "garage",
            "--locked",
            "--version",
            version,
            "--features",
            GARAGE_FEATURES,
            "--root",
        ])
        .arg(&root)
        // Keep the build away from the workspace target directory: it is big
        // and only its binary is wanted.
        .arg("--target-dir")
        .arg(cache_dir().join("build").join("garage"))
        // Tests and benchmarks compare against the same binary, so peak
        // optimisation buys nothing here and opt-level 1 compiles faster.
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "1")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        // The workspace's `[env]` picks the k8s-openapi version for its own crates, and
        // `cargo xtask` passes it on; Garage's discovery picks its own through its features,
        // and k8s-openapi refuses to build with two.
        .env_remove("K8S_OPENAPI_ENABLED_VERSION");
    run_command(&mut command)?;
    remove_scratch(&cache_dir().join("build").join("garage"))
}

fn require_program(name: &str, how: &str) -> Result<()> {
    let found = Command::new(name).arg("version").output().is_ok();
    if !found {
        bail!("`{name}` is not on PATH: {how}");
    }
    Ok(())
}

fn run_command(command: &mut Command) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("could not run {:?}", command.get_program()))?;
    if !status.success() {
        bail!(
            "{:?} {:?} failed with {status} (in {})",
            command.get_program(),
            command.get_args().collect::<Vec<_>>(),
            command
                .get_current_dir()
                .map(Path::display)
                .map(|d| d.to_string())
                .unwrap_or_else(|| ".".into())
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_garage_fixture_looks_where_the_tools_install_garage() {
        assert_eq!(
            Tool::Garage.version_dir(),
            garage_fixture::binary::PINNED_GARAGE_DIR
        );
        assert_eq!(
            GARAGE_VERSION.trim_start_matches('v'),
            garage_fixture::PINNED_GARAGE_VERSION
        );
    }
}
