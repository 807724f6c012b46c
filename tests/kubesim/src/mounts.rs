//! Container paths → host paths. There are no mount namespaces here, so a
//! process sees host paths: kubesim maps the paths it hands to processes
//! (argv, env values, Garage's config) through a container's mounts, and
//! paths outside every mount into the container's own writable layer.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use k8s_openapi::api::core::v1::Container;

use crate::garage::PathMapper;
use crate::volumes::{VolumeMap, relative};

/// How one container's paths map to the host.
#[derive(Clone, Debug)]
pub(crate) struct Mounts {
    /// (container path, host path), longest container path first.
    entries: Vec<(String, PathBuf)>,
    /// The container's own writable layer.
    rootfs: PathBuf,
}

impl Mounts {
    /// The mounts of `container` given where the volumes are. A `subPath`
    /// that does not exist yet is created as a directory, as the kubelet does.
    pub(crate) fn new(
        container: &Container,
        volumes: &VolumeMap,
        env: &[(String, String)],
        rootfs: PathBuf,
    ) -> Result<Self, String> {
        let vars: BTreeMap<&str, &str> =
            env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let mut entries = Vec::new();
        for m in container.volume_mounts.iter().flatten() {
            let base = volumes
                .get(&m.name)
                .ok_or_else(|| format!("volumeMount {} names no volume", m.name))?;
            let sub = match (&m.sub_path, &m.sub_path_expr) {
                (Some(s), _) if !s.is_empty() => s.clone(),
                (_, Some(e)) if !e.is_empty() => crate::env::expand(e, &vars),
                _ => String::new(),
            };
            let mut host = base.clone();
            if !sub.is_empty() {
                host = host.join(relative(&sub).map_err(|e| e.0)?);
                if !host.exists() {
                    std::fs::create_dir_all(&host)
                        .map_err(|e| format!("creating subPath {sub}: {e}"))?;
                }
            }
            entries.push((m.mount_path.trim_end_matches('/').to_owned(), host));
        }
        entries.sort_by_key(|e| std::cmp::Reverse(e.0.len()));
        expose_nested(&entries)?;
        Ok(Mounts { entries, rootfs })
    }

    /// The host path behind a container path, if it is under a mount.
    pub(crate) fn to_host(&self, path: &str) -> Option<PathBuf> {
        for (mount, host) in &self.entries {
            if mount.is_empty() {
                // A volume mounted at `/` holds every path.
                return Some(host.join(path.trim_start_matches('/')));
            }
            if path == mount {
                return Some(host.clone());
            }
            if let Some(rest) = path
                .strip_prefix(mount.as_str())
                .and_then(|r| r.strip_prefix('/'))
            {
                return Some(host.join(rest));
            }
        }
        None
    }

    /// Maps a command-line argument or environment value: a whole path under
    /// a mount, or the value of `--flag=<path>`.
    pub(crate) fn map_value(&self, value: &str) -> String {
        if let Some(host) = self.mounted(value) {
            return host;
        }
        if let Some((flag, rest)) = value.split_once('=')
            && let Some(host) = self.mounted(rest)
        {
            return format!("{flag}={host}");
        }
        value.to_owned()
    }
}

/// Makes each mount that lies inside another mount visible through the outer one, as a bind
/// mount is: a process handed the outer directory (Garage's `data_dir`) finds the inner file
/// or directory (a marker file projected into it) at its place. A symlink stands in for the
/// bind mount; an entry already there is left alone.
fn expose_nested(entries: &[(String, PathBuf)]) -> Result<(), String> {
    for (inner, target) in entries {
        // The longest other mount that contains this one: entries are longest first.
        let outer = entries
            .iter()
            .filter(|(o, _)| o.len() < inner.len())
            .find(|(o, _)| {
                o.is_empty()
                    || inner
                        .strip_prefix(o.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            });
        let Some((outer, outer_host)) = outer else {
            continue;
        };
        let rest = inner[outer.len()..].trim_start_matches('/');
        let link = outer_host.join(relative(rest).map_err(|e| e.0)?);
        if link.symlink_metadata().is_ok() {
            continue;
        }
        if let Some(parent) = link.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("creating {}: {e}", parent.display()))?;
        }
        std::os::unix::fs::symlink(target, &link)
            .map_err(|e| format!("exposing mount {inner} inside {outer}: {e}"))?;
    }
    Ok(())
}

impl PathMapper for Mounts {
    fn mounted(&self, path: &str) -> Option<String> {
        if !path.starts_with('/') {
            return None;
        }
        self.to_host(path).map(|p| p.to_string_lossy().into_owned())
    }

    fn anywhere(&self, path: &str) -> String {
        self.mounted(path).unwrap_or_else(|| {
            let mut host = self.rootfs.clone();
            for part in Path::new(path).components() {
                if let Component::Normal(p) = part {
                    host.push(p);
                }
            }
            host.to_string_lossy().into_owned()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_mounted_inside_another_mount_is_seen_through_it() {
        let root = std::env::temp_dir().join(format!("kubesim-mounts-{}", std::process::id()));
        let data = root.join("empty-dir");
        let marker = root.join("downward/garage-marker");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
        std::fs::write(&marker, "").unwrap();
        let entries = vec![
            ("/data/data/garage-marker".to_owned(), marker.clone()),
            ("/data/data".to_owned(), data.clone()),
        ];
        expose_nested(&entries).unwrap();
        assert_eq!(
            std::fs::read_to_string(data.join("garage-marker")).unwrap(),
            ""
        );
        // Again: the link is there already and is left alone.
        expose_nested(&entries).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
    }
}
