//! The external programs the local cluster and the end-to-end tests run, their
//! pinned versions and where `cargo xtask tools` caches them.
//!
//! Tools are cached per version outside the target directory
//! (`$GARAGE_OPERATOR_TOOLS`, else `$XDG_CACHE_HOME/garage-operator/tools`,
//! else `~/.cache/garage-operator/tools`), so `cargo clean` keeps them and a
//! version bump builds the new one beside the old.

use std::path::{Path, PathBuf};

/// Kubernetes release the control plane is built from (VolumeAttributesClass
/// is GA there; the node-local pool and VAC designs verified their facts on
/// it).
pub const KUBERNETES_VERSION: &str = "v1.36.2";
/// Revision of how Kubernetes is built, part of its cache folder: `b2` stamps the release
/// version into the binaries (without it the API server reports v0.0.0 and version checks,
/// such as a Helm chart's kubeVersion, fail).
pub const KUBERNETES_BUILD: &str = "b2";
/// etcd release, from `go.etcd.io/etcd/server/v3`.
pub const ETCD_VERSION: &str = "v3.6.16";
/// Garage release, from the cargo registry.
pub const GARAGE_VERSION: &str = "v2.5.0";
/// Cargo features Garage is built with beyond its defaults, as the released images are: its
/// own Kubernetes peer discovery, which clusters with `spec.discovery.kubernetes` turn on, and
/// Consul discovery (Garage 2.5.0's Kubernetes discovery does not compile without it: only the
/// Consul feature brings in the TLS crate both use).
pub const GARAGE_FEATURES: &str = "kubernetes-discovery,consul-discovery";
/// Helm release, from `helm.sh/helm/v3`.
pub const HELM_VERSION: &str = "v3.22.0";
/// prometheus-operator release whose API types the ServiceMonitor CRD is generated from
/// (`github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring`).
pub const PROMETHEUS_OPERATOR_VERSION: &str = "v0.95.2";

/// One cached program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// etcd server.
    Etcd,
    /// kube-apiserver.
    KubeApiserver,
    /// kube-controller-manager.
    KubeControllerManager,
    /// kube-scheduler.
    KubeScheduler,
    /// kubectl, for people poking at the demo cluster.
    Kubectl,
    /// The Garage server.
    Garage,
    /// Helm 3.
    Helm,
    /// The prometheus-operator ServiceMonitor CRD (a manifest, not a program), generated with
    /// controller-gen from the project's API types.
    ServiceMonitorCrd,
}

impl Tool {
    /// Every tool, in build order.
    pub const ALL: [Tool; 8] = [
        Tool::Etcd,
        Tool::KubeApiserver,
        Tool::KubeControllerManager,
        Tool::KubeScheduler,
        Tool::Kubectl,
        Tool::Garage,
        Tool::Helm,
        Tool::ServiceMonitorCrd,
    ];

    /// The executable's file name.
    pub fn binary_name(self) -> &'static str {
        match self {
            Tool::Etcd => "etcd",
            Tool::KubeApiserver => "kube-apiserver",
            Tool::KubeControllerManager => "kube-controller-manager",
            Tool::KubeScheduler => "kube-scheduler",
            Tool::Kubectl => "kubectl",
            Tool::Garage => "garage",
            Tool::Helm => "helm",
            Tool::ServiceMonitorCrd => "monitoring.coreos.com_servicemonitors.yaml",
        }
    }

    /// The cache folder of the tool's pinned version; several tools built
    /// from one Go module share it.
    pub fn version_dir(self) -> String {
        match self {
            Tool::Etcd => format!("etcd-{ETCD_VERSION}"),
            Tool::KubeApiserver
            | Tool::KubeControllerManager
            | Tool::KubeScheduler
            | Tool::Kubectl => format!("kubernetes-{KUBERNETES_VERSION}-{KUBERNETES_BUILD}"),
            Tool::Garage => format!("garage-{GARAGE_VERSION}-discovery"),
            Tool::Helm => format!("helm-{HELM_VERSION}"),
            Tool::ServiceMonitorCrd => {
                format!("prometheus-operator-crds-{PROMETHEUS_OPERATOR_VERSION}")
            }
        }
    }

    /// Where the executable lives in the cache.
    pub fn path(self) -> PathBuf {
        let dir = cache_dir().join(self.version_dir());
        match self {
            // `cargo install --root` puts binaries in bin/.
            Tool::Garage => dir.join("bin").join(self.binary_name()),
            _ => dir.join(self.binary_name()),
        }
    }

    /// The executable (the manifest, for [`Tool::ServiceMonitorCrd`]), or an error that says
    /// how to build it.
    pub fn require(self) -> Result<PathBuf, MissingTool> {
        let path = self.path();
        let present = match self {
            Tool::ServiceMonitorCrd => path.is_file(),
            _ => is_executable(&path),
        };
        if present {
            Ok(path)
        } else {
            Err(MissingTool { tool: self, path })
        }
    }
}

/// A tool that has not been built yet.
#[derive(Debug, thiserror::Error)]
#[error(
    "{} is not built (looked for {}); run `cargo xtask tools` to build the pinned tools \
     from the Go module proxy and the cargo registry (first run takes a while, later runs \
     are free)",
    tool.binary_name(),
    path.display()
)]
pub struct MissingTool {
    /// The missing tool.
    pub tool: Tool,
    /// Where it was expected.
    pub path: PathBuf,
}

/// Root of the tool cache.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("GARAGE_OPERATOR_TOOLS") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    base.join("garage-operator").join("tools")
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
