//! Container processes: each runs in its own process group so that a signal
//! reaches everything it started, and every live group is recorded so that
//! dropping the [`crate::KubeSim`] leaves no orphans.

use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use crate::Error;

/// What to run for one container or exec probe.
#[derive(Clone, Debug)]
pub(crate) struct Launch {
    /// The program on this machine.
    pub program: PathBuf,
    /// Its arguments (argv[1..]).
    pub args: Vec<String>,
    /// The complete environment; the agent's own is not inherited.
    pub env: Vec<(String, String)>,
    /// Working directory (the pod directory).
    pub cwd: PathBuf,
}

/// Process groups that are (or may still be) alive.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    groups: Mutex<HashSet<i32>>,
}

impl Registry {
    /// Starts `launch` in a new process group with stdout and stderr
    /// appended to `log`.
    pub(crate) fn spawn(&self, launch: &Launch, log: &Path) -> Result<Child, Error> {
        let out = File::options()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| Error::io("opening the container log", log, e))?;
        let err = out
            .try_clone()
            .map_err(|e| Error::io("opening the container log", log, e))?;
        self.spawn_with(launch, Stdio::from(out), Stdio::from(err))
    }

    /// Starts `launch` in a new process group capturing nothing.
    pub(crate) fn spawn_quiet(&self, launch: &Launch) -> Result<Child, Error> {
        self.spawn_with(launch, Stdio::null(), Stdio::null())
    }

    fn spawn_with(&self, launch: &Launch, out: Stdio, err: Stdio) -> Result<Child, Error> {
        // Holding the lock while spawning keeps Drop from missing a group
        // that is being born.
        let mut groups = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        let child = Command::new(&launch.program)
            .args(&launch.args)
            .env_clear()
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&launch.cwd)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| Error::io("starting the container process", &launch.program, e))?;
        if let Some(pid) = child.id() {
            groups.insert(pid as i32);
        }
        Ok(child)
    }

    /// Forgets a group whose leader has been reaped, after killing whatever
    /// it left behind.
    pub(crate) fn reaped(&self, pgid: i32) {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        self.groups
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&pgid);
    }

    /// SIGKILLs every group still recorded.
    pub(crate) fn kill_all(&self) {
        let groups: Vec<i32> = self
            .groups
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .collect();
        for pgid in groups {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
}

/// Sends `signal` to a process group.
pub(crate) fn signal_group(pgid: i32, signal: Signal) -> Result<(), Error> {
    killpg(Pid::from_raw(pgid), signal).map_err(|source| Error::Signal {
        signal: signal.as_str().to_owned(),
        pgid,
        source,
    })
}
