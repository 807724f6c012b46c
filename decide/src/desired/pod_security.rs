//! The security context every Garage pod gets unless its template says otherwise.
//!
//! Garage needs no privilege: it listens on unprivileged ports, writes only its metadata and
//! data directories and reads its mounted configuration and secrets. Its pods therefore run
//! with every capability dropped, no privilege escalation, a read-only root file system and
//! the runtime's default seccomp profile, which is what Pod Security `restricted` asks.
//!
//! Who owns the disks decides the user:
//! - on claims and emptyDir volumes the kubelet applies the pod's `fsGroup`, so Garage runs
//!   as [`GARAGE_UID`]:[`GARAGE_GID`] with that group owning its volumes;
//! - on HostPath disks (node-local pools) the kubelet applies no `fsGroup` and the
//!   directories it creates belong to root, so Garage keeps uid 0 there, still without a
//!   single capability: root without `CAP_DAC_OVERRIDE` reaches only what root owns.
//!
//! A template's own context wins: the pod-level one replaces the pod default and the
//! container-level one the container default, as they are written. A container context that
//! chooses the user also takes the user out of the pod default, so the two never disagree
//! (`runAsNonRoot` beside `runAsUser: 0` would stop the container from starting); the pod's
//! `fsGroup` stays, so whichever user it picks can read the secret files.

use k8s_openapi::api::core::v1::{
    Capabilities, EnvVar, PodSecurityContext, SeccompProfile, SecurityContext,
};

/// The uid Garage runs as on claims and emptyDir volumes.
pub const GARAGE_UID: i64 = 1000;
/// Its group, which the kubelet also gives the pod's volumes (`fsGroup`).
pub const GARAGE_GID: i64 = 1000;
/// Garage's switch for secret files with group or other permission bits.
pub const ALLOW_GROUP_READABLE_SECRETS_ENV: &str = "GARAGE_ALLOW_WORLD_READABLE_SECRETS";

/// Who owns the directories a Garage pod writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskOwnership {
    /// Claims and emptyDir volumes: the kubelet applies `fsGroup`.
    Volumes,
    /// HostPath directories: root owns them and `fsGroup` is not applied.
    HostPaths,
}

/// The security contexts a Garage pod runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct Contexts {
    /// The pod-level context.
    pub pod: PodSecurityContext,
    /// The Garage container's context.
    pub container: SecurityContext,
}

/// The contexts for a pod on `disks`, given the template's own (`pod`, `container`).
pub fn contexts(
    disks: DiskOwnership,
    pod: Option<&PodSecurityContext>,
    container: Option<&SecurityContext>,
) -> Contexts {
    let container_chooses_user = container.is_some_and(|c| {
        c.run_as_user.is_some() || c.run_as_group.is_some() || c.run_as_non_root.is_some()
    });
    let pod = match pod {
        Some(p) => p.clone(),
        // The group stays: the kubelet adds it to the container's groups whatever its user,
        // so a non-root user of the template's choosing still reads its secret files.
        None if container_chooses_user => PodSecurityContext {
            run_as_non_root: None,
            run_as_user: None,
            run_as_group: None,
            ..default_pod(disks)
        },
        None => default_pod(disks),
    };
    Contexts {
        pod,
        container: container.cloned().unwrap_or_else(default_container),
    }
}

/// The environment the contexts need: with an `fsGroup`, the kubelet adds group read to every
/// mounted secret file (mode 0440, group `fsGroup`) and Garage, which refuses a secret file
/// with any group or other bit, must be told that this is intended. The files stay unreadable
/// to anyone outside the pod's own group.
pub fn env(c: &Contexts) -> Option<EnvVar> {
    c.pod.fs_group.map(|_| EnvVar {
        name: ALLOW_GROUP_READABLE_SECRETS_ENV.into(),
        value: Some("true".into()),
        ..Default::default()
    })
}

fn default_pod(disks: DiskOwnership) -> PodSecurityContext {
    match disks {
        DiskOwnership::Volumes => PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(GARAGE_UID),
            run_as_group: Some(GARAGE_GID),
            fs_group: Some(GARAGE_GID),
            // Only a volume whose root has another owner is walked, so a large data volume
            // is not re-owned file by file at every start.
            fs_group_change_policy: Some("OnRootMismatch".into()),
            seccomp_profile: Some(runtime_default()),
            ..Default::default()
        },
        DiskOwnership::HostPaths => PodSecurityContext {
            seccomp_profile: Some(runtime_default()),
            ..Default::default()
        },
    }
}

fn default_container() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            add: None,
        }),
        read_only_root_filesystem: Some(true),
        ..Default::default()
    }
}

fn runtime_default() -> SeccompProfile {
    SeccompProfile {
        type_: "RuntimeDefault".into(),
        localhost_profile: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volumes_run_as_the_garage_user_with_its_group_on_the_volumes() {
        let c = contexts(DiskOwnership::Volumes, None, None);
        assert_eq!(c.pod.run_as_non_root, Some(true));
        assert_eq!(c.pod.run_as_user, Some(GARAGE_UID));
        assert_eq!(c.pod.run_as_group, Some(GARAGE_GID));
        assert_eq!(c.pod.fs_group, Some(GARAGE_GID));
        assert_eq!(
            c.pod.seccomp_profile.as_ref().map(|s| s.type_.as_str()),
            Some("RuntimeDefault")
        );
        assert_eq!(
            env(&c).map(|e| (e.name, e.value)),
            Some((ALLOW_GROUP_READABLE_SECRETS_ENV.into(), Some("true".into())))
        );
    }

    #[test]
    fn host_paths_keep_root_without_any_capability() {
        let c = contexts(DiskOwnership::HostPaths, None, None);
        assert_eq!(c.pod.run_as_user, None);
        assert_eq!(c.pod.run_as_non_root, None);
        assert_eq!(c.pod.fs_group, None);
        assert_eq!(env(&c), None);
        assert_eq!(
            c.pod.seccomp_profile.as_ref().map(|s| s.type_.as_str()),
            Some("RuntimeDefault")
        );
        assert_eq!(c.container, default_container());
    }

    #[test]
    fn the_container_default_drops_everything() {
        for disks in [DiskOwnership::Volumes, DiskOwnership::HostPaths] {
            let c = contexts(disks, None, None).container;
            assert_eq!(c.allow_privilege_escalation, Some(false));
            assert_eq!(c.read_only_root_filesystem, Some(true));
            let caps = c.capabilities.unwrap_or_default();
            assert_eq!(caps.drop, Some(vec!["ALL".to_owned()]));
            assert_eq!(caps.add, None);
            assert_eq!(c.privileged, None);
        }
    }

    #[test]
    fn a_template_context_replaces_the_default_as_written() {
        let pod = PodSecurityContext {
            run_as_user: Some(0),
            ..Default::default()
        };
        let container = SecurityContext {
            privileged: Some(false),
            ..Default::default()
        };
        let c = contexts(DiskOwnership::Volumes, Some(&pod), Some(&container));
        assert_eq!(c.pod, pod);
        assert_eq!(c.container, container);
        assert_eq!(env(&c), None, "no fsGroup, no group bits on the secrets");
    }

    #[test]
    fn a_container_that_chooses_its_user_takes_the_user_out_of_the_pod_default() {
        for chooses in [
            SecurityContext {
                run_as_user: Some(0),
                ..Default::default()
            },
            SecurityContext {
                run_as_non_root: Some(false),
                ..Default::default()
            },
            SecurityContext {
                run_as_group: Some(0),
                ..Default::default()
            },
        ] {
            let c = contexts(DiskOwnership::Volumes, None, Some(&chooses));
            assert_eq!(c.pod.run_as_non_root, None);
            assert_eq!(c.pod.run_as_user, None);
            assert_eq!(c.pod.run_as_group, None);
            assert_eq!(
                c.pod.fs_group,
                Some(GARAGE_GID),
                "the secrets stay readable"
            );
            assert!(c.pod.seccomp_profile.is_some());
            assert_eq!(c.container, chooses);
        }
    }

    #[test]
    fn a_container_context_without_a_user_keeps_the_pod_default() {
        let container = SecurityContext {
            read_only_root_filesystem: Some(false),
            ..Default::default()
        };
        let c = contexts(DiskOwnership::Volumes, None, Some(&container));
        assert_eq!(c.pod.run_as_user, Some(GARAGE_UID));
        assert_eq!(c.container, container);
    }
}
