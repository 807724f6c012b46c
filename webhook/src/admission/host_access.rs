//! HA: what a GarageCluster or GarageNode may ask of the Nodes its pods run on.
//!
//! Whoever may create a GarageCluster gets pods the operator creates for them, so without
//! these rules creating one would be as good as creating a privileged pod: a pool HostPath
//! on `/etc` or `/var/lib/kubelet`, or a Garage container that is `privileged` or adds
//! capabilities, hands its author the Node. The install decides what it allows (the chart's
//! `garageSecurity` values, passed to the webhook as flags); these rules refuse anything
//! beyond it, naming the field and the chart value that would allow it.
//!
//! On UPDATE a value the object already had is not judged again: tightening the install must
//! not strand an existing cluster's unrelated edits or its deletion.

use k8s_openapi::api::core::v1::SecurityContext;

use crate::admission::Verdict;
use crate::admission::shared::paths::{clean, overlaps};

/// HostPath roots an install allows when it names none: every directory the documentation
/// and the chart's examples use.
pub const DEFAULT_HOST_PATH_ROOTS: &[&str] = &["/var/lib/garage", "/mnt", "/srv", "/data"];

/// Paths no install may hand to a Garage pod, nor any directory above or below them: the
/// Node's system, its credentials and the state of its kubelet and container runtime.
pub const SYSTEM_PATHS: &[&str] = &[
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/opt/cni",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var/lib/containerd",
    "/var/lib/docker",
    "/var/lib/etcd",
    "/var/lib/kubelet",
    "/var/log",
    "/var/run",
];

/// The chart value that widens the HostPath roots.
pub const HOST_PATH_ROOTS_VALUE: &str = "garageSecurity.hostPathRoots";
/// The chart value that allows privileged Garage containers and added capabilities.
pub const ALLOW_PRIVILEGED_VALUE: &str = "garageSecurity.allowPrivileged";

/// What the install allows Garage pods on the Nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostAccessPolicy {
    /// Directories under which (or at which) a pool HostPath may lie, cleaned.
    pub host_path_roots: Vec<String>,
    /// Whether a Garage container may be `privileged`, add capabilities or allow privilege
    /// escalation.
    pub allow_privileged: bool,
}

impl Default for HostAccessPolicy {
    fn default() -> Self {
        Self {
            host_path_roots: DEFAULT_HOST_PATH_ROOTS
                .iter()
                .map(|r| (*r).to_owned())
                .collect(),
            allow_privileged: false,
        }
    }
}

impl HostAccessPolicy {
    /// The policy of an install from its flags: roots (empty for the defaults, each made
    /// absolute and cleaned) and the privileged switch. A root that is a system path, or
    /// contains one, is refused so no install can open the Node's system to its users.
    pub fn new(roots: &[String], allow_privileged: bool) -> Result<Self, String> {
        let mut policy = Self {
            allow_privileged,
            ..Self::default()
        };
        if roots.iter().any(|r| !r.trim().is_empty()) {
            policy.host_path_roots = Vec::new();
            for root in roots.iter().map(|r| r.trim()).filter(|r| !r.is_empty()) {
                if !root.starts_with('/') {
                    return Err(format!("host path root {root:?} must be an absolute path"));
                }
                let root = clean(root);
                if let Some(system) = SYSTEM_PATHS.iter().find(|s| overlaps(&root, s)) {
                    return Err(format!(
                        "host path root {root:?} overlaps the system path {system}; name a directory set aside for Garage's disks"
                    ));
                }
                policy.host_path_roots.push(root);
            }
        }
        Ok(policy)
    }

    /// Why `path` may not be a Garage HostPath, or `None` when it may.
    pub fn refuse_host_path(&self, path: &str) -> Option<String> {
        let path = clean(path);
        if let Some(system) = SYSTEM_PATHS.iter().find(|s| overlaps(&path, s)) {
            return Some(format!(
                "HostPath {path} overlaps the Node's system path {system}, which is never handed to a Garage pod; use a directory on a data disk, e.g. under /var/lib/garage or /mnt"
            ));
        }
        let under = |root: &String| path == *root || path.starts_with(&format!("{root}/"));
        if self.host_path_roots.iter().any(under) {
            return None;
        }
        Some(format!(
            "HostPath {path} lies outside the directories this install allows for Garage ({}); use a directory under one of them, or ask the cluster administrator to add its root to the chart value {HOST_PATH_ROOTS_VALUE}",
            self.host_path_roots.join(", ")
        ))
    }

    /// Why a Garage container's security context is refused (field suffix and message), or
    /// `None` when it is allowed.
    pub fn refuse_container(&self, sc: &SecurityContext) -> Option<(&'static str, String)> {
        if self.allow_privileged {
            return None;
        }
        let why = |what: &str| {
            format!(
                "{what} would give whoever may write this object the Node its pod runs on; Garage needs none of it. Remove it, or ask the cluster administrator to set the chart value {ALLOW_PRIVILEGED_VALUE}"
            )
        };
        if sc.privileged == Some(true) {
            return Some(("privileged", why("a privileged container")));
        }
        let added = sc
            .capabilities
            .as_ref()
            .and_then(|c| c.add.as_ref())
            .filter(|a| !a.is_empty());
        if let Some(added) = added {
            return Some((
                "capabilities.add",
                why(&format!("adding capabilities ({})", added.join(", "))),
            ));
        }
        if sc.allow_privilege_escalation == Some(true) {
            return Some((
                "allowPrivilegeEscalation",
                why("allowing privilege escalation"),
            ));
        }
        None
    }
}

/// HA-PATH: every HostPath in `paths` (field, path) that is new since `old` must be allowed.
pub fn check_host_paths(
    policy: &HostAccessPolicy,
    paths: &[(String, String)],
    old: &[(String, String)],
    verdict: &mut Verdict,
) {
    for (field, path) in paths {
        if old.iter().any(|(_, p)| clean(p) == clean(path)) {
            continue;
        }
        if let Some(message) = policy.refuse_host_path(path) {
            verdict.deny("HA-PATH", field.clone(), message);
        }
    }
}

/// HA-PRIV: a container security context (at `field`) that changed since `old` must be
/// allowed.
pub fn check_container(
    policy: &HostAccessPolicy,
    field: &str,
    new: Option<&SecurityContext>,
    old: Option<&SecurityContext>,
    verdict: &mut Verdict,
) {
    let Some(sc) = new else {
        return;
    };
    if old == Some(sc) {
        return;
    }
    if let Some((sub, message)) = policy.refuse_container(sc) {
        verdict.deny("HA-PRIV", format!("{field}.{sub}"), message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Capabilities;

    #[test]
    fn host_paths_inside_the_roots_and_outside_the_system() {
        let p = HostAccessPolicy::default();
        // (path, allowed)
        let cases = [
            ("/var/lib/garage", true),
            ("/var/lib/garage/local/metadata", true),
            ("/mnt/fast/garage", true),
            ("/srv/garage", true),
            ("/data/a", true),
            ("/var/lib/garage-other", false),
            ("/var/lib", false),
            ("/etc", false),
            ("/etc/garage", false),
            ("/var/lib/kubelet/pods", false),
            ("/var", false),
            ("/home/me", false),
            ("/mnt/../etc", false),
        ];
        for (path, allowed) in cases {
            assert_eq!(p.refuse_host_path(path).is_none(), allowed, "{path}");
        }
        let msg = p.refuse_host_path("/home/me").unwrap();
        assert!(msg.contains(HOST_PATH_ROOTS_VALUE), "{msg}");
        let msg = p.refuse_host_path("/var").unwrap();
        assert!(msg.contains("system path"), "{msg}");
    }

    #[test]
    fn an_install_widens_the_roots_but_never_over_the_system() {
        let p = HostAccessPolicy::new(&["/disks/".into(), " ".into()], false).unwrap();
        assert_eq!(p.host_path_roots, vec!["/disks".to_owned()]);
        assert!(p.refuse_host_path("/disks/a").is_none());
        assert!(
            p.refuse_host_path("/mnt/a").is_some(),
            "named roots replace the defaults"
        );
        assert_eq!(
            HostAccessPolicy::new(&[], false).unwrap(),
            HostAccessPolicy::default()
        );
        for bad in ["/", "/var", "/etc/x", "relative"] {
            assert!(
                HostAccessPolicy::new(&[bad.into()], false).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn privileged_containers_and_added_capabilities_are_refused() {
        let p = HostAccessPolicy::default();
        let privileged = SecurityContext {
            privileged: Some(true),
            ..Default::default()
        };
        let caps = SecurityContext {
            capabilities: Some(Capabilities {
                add: Some(vec!["SYS_ADMIN".into()]),
                drop: None,
            }),
            ..Default::default()
        };
        let escalation = SecurityContext {
            allow_privilege_escalation: Some(true),
            ..Default::default()
        };
        let dropped = SecurityContext {
            capabilities: Some(Capabilities {
                add: Some(vec![]),
                drop: Some(vec!["ALL".into()]),
            }),
            privileged: Some(false),
            ..Default::default()
        };
        assert_eq!(p.refuse_container(&privileged).unwrap().0, "privileged");
        let (field, msg) = p.refuse_container(&caps).unwrap();
        assert_eq!(field, "capabilities.add");
        assert!(msg.contains("SYS_ADMIN") && msg.contains(ALLOW_PRIVILEGED_VALUE));
        assert_eq!(
            p.refuse_container(&escalation).unwrap().0,
            "allowPrivilegeEscalation"
        );
        assert!(p.refuse_container(&dropped).is_none());
        let open = HostAccessPolicy::new(&[], true).unwrap();
        assert!(open.refuse_container(&privileged).is_none());
    }

    #[test]
    fn unchanged_values_are_not_judged_again() {
        let p = HostAccessPolicy::default();
        let paths = vec![("f".to_owned(), "/home/x".to_owned())];
        let mut v = Verdict::default();
        check_host_paths(&p, &paths, &paths, &mut v);
        assert!(v.allowed());
        check_host_paths(&p, &paths, &[], &mut v);
        assert!(!v.allowed());
        let sc = SecurityContext {
            privileged: Some(true),
            ..Default::default()
        };
        let mut v = Verdict::default();
        check_container(&p, "spec.x", Some(&sc), Some(&sc), &mut v);
        assert!(v.allowed());
        check_container(&p, "spec.x", Some(&sc), None, &mut v);
        assert!(!v.allowed());
    }
}
