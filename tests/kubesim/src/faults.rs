//! Fault injection: node loss, killing and pausing containers, wiping a
//! node's disk.

use std::net::IpAddr;

use nix::sys::signal::Signal;

use crate::pods::Stop;
use crate::process::signal_group;
use crate::{Error, KubeSim};

impl KubeSim {
    /// Loses a node as if its machine died: its Lease and status heartbeats
    /// stop (the node lifecycle controller marks it NotReady after its grace
    /// period), every process of its pods is SIGKILLed and its pods are no
    /// longer managed, so they stay as they are in the API (Terminating
    /// forever once deleted), as with a dead kubelet.
    pub async fn lose_node(&self, node: &str) -> Result<(), Error> {
        {
            let mut nodes = self.shared.nodes();
            let state = nodes
                .get_mut(node)
                .ok_or_else(|| Error::UnknownNode(node.to_owned()))?;
            state.lost.send_replace(true);
            if let Some(task) = state.heartbeat.take() {
                task.abort();
            }
        }
        let victims: Vec<_> = {
            let mut pods = self.shared.pods();
            let keys: Vec<_> = pods
                .iter()
                .filter(|(_, h)| h.ctx.info.node == node)
                .map(|(k, _)| k.clone())
                .collect();
            keys.into_iter().filter_map(|k| pods.remove(&k)).collect()
        };
        for handle in victims {
            handle.ctx.update_pod(|rt| rt.frozen = true);
            handle.ctx.stop.send_replace(Stop::Abandon);
            let groups: Vec<i32> = {
                let rt = handle.ctx.runtime();
                rt.init
                    .iter()
                    .chain(rt.app.iter())
                    .filter_map(|c| c.pgid)
                    .collect()
            };
            for pgid in groups {
                let _ = signal_group(pgid, Signal::SIGKILL);
            }
            let _ = handle.task.await;
            if let (IpAddr::V4(ip), false) = (
                handle.ctx.info.ip,
                handle.ctx.info.ip == handle.ctx.info.host_ip,
            ) {
                self.shared.net.release(ip);
            }
        }
        Ok(())
    }

    /// SIGKILLs a container's process group; its restart policy decides
    /// what happens next.
    pub async fn kill_container(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
    ) -> Result<(), Error> {
        let pgid = self.container_group(namespace, pod, container)?;
        signal_group(pgid, Signal::SIGKILL)
    }

    /// Freezes a container (SIGSTOP to its process group): it holds its
    /// sockets but answers nothing, like a hung process.
    pub async fn pause_container(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
    ) -> Result<(), Error> {
        let pgid = self.container_group(namespace, pod, container)?;
        signal_group(pgid, Signal::SIGSTOP)
    }

    /// Thaws a container paused by [`KubeSim::pause_container`] (SIGCONT).
    pub async fn resume_container(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
    ) -> Result<(), Error> {
        let pgid = self.container_group(namespace, pod, container)?;
        signal_group(pgid, Signal::SIGCONT)
    }

    /// Removes everything inside a node's hostPath directory (the directory
    /// itself stays), like a disk replaced under a running node.
    pub fn wipe_host_path(&self, node: &str, path: &str) -> Result<(), Error> {
        if !self.shared.nodes().contains_key(node) {
            return Err(Error::UnknownNode(node.to_owned()));
        }
        if !path.starts_with('/') || path.split('/').any(|p| p == "..") {
            return Err(Error::BadHostPath(path.to_owned()));
        }
        let dir = self.host_path(node, path);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io("listing the host path", dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("listing the host path", &dir, e))?;
            let path = entry.path();
            let result = if entry.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            result.map_err(|e| Error::io("wiping the host path", &path, e))?;
        }
        Ok(())
    }

    fn container_group(&self, namespace: &str, pod: &str, container: &str) -> Result<i32, Error> {
        let pods = self.shared.pods();
        let unknown =
            || Error::UnknownContainer(format!("container {container} of pod {namespace}/{pod}"));
        let handle = pods
            .get(&(namespace.to_owned(), pod.to_owned()))
            .ok_or_else(unknown)?;
        let rt = handle.ctx.runtime();
        rt.init
            .iter()
            .chain(rt.app.iter())
            .find(|c| c.name == container)
            .and_then(|c| c.pgid)
            .ok_or_else(unknown)
    }
}
