//! One running `garage server` process, in its own process group.

use std::fs::OpenOptions;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::FixtureError;

/// A child process that is killed (with its whole group) when dropped, so a failing or
/// panicking test never leaves a garage behind.
#[derive(Debug)]
pub(crate) struct GarageProcess {
    child: Child,
}

impl GarageProcess {
    /// Starts `garage -c <config> server`, appending stdout and stderr to `log`.
    pub(crate) fn spawn(binary: &Path, config: &Path, log: &Path) -> Result<Self, FixtureError> {
        let open_log = || {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .map_err(|e| FixtureError::io(format!("opening {}", log.display()), e))
        };
        let child = Command::new(binary)
            .arg("-c")
            .arg(config)
            .arg("server")
            .env(
                "RUST_LOG",
                std::env::var("GARAGE_FIXTURE_LOG").unwrap_or_else(|_| "garage=info".into()),
            )
            .stdin(Stdio::null())
            .stdout(open_log()?)
            .stderr(open_log()?)
            // A group of its own: the signal reaches anything garage spawns, and a Ctrl-C meant
            // for the test runner does not kill the cluster mid-assertion.
            .process_group(0)
            .spawn()
            .map_err(|e| FixtureError::io(format!("starting {}", binary.display()), e))?;
        Ok(Self { child })
    }

    /// The exit status if the process has already ended.
    pub(crate) fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("unknown ({e})")),
        }
    }

    /// The process id (also its process group id).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` to the whole process group.
    pub(crate) fn signal(&self, signal: Signal) -> Result<(), FixtureError> {
        let pgid = Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(i32::MAX));
        killpg(pgid, signal).map_err(|e| {
            FixtureError::io(
                format!("sending {signal} to process group {pgid}"),
                std::io::Error::from(e),
            )
        })
    }

    /// SIGKILLs the group and reaps the child.
    pub(crate) fn kill(mut self) -> Result<(), FixtureError> {
        self.kill_and_reap()
    }

    fn kill_and_reap(&mut self) -> Result<(), FixtureError> {
        if self.exited().is_none() {
            // The group may already be gone; reaping below is what matters.
            let _ = self.signal(Signal::SIGKILL);
        }
        self.child
            .wait()
            .map(|_| ())
            .map_err(|e| FixtureError::io("reaping a garage process", e))
    }
}

impl Drop for GarageProcess {
    fn drop(&mut self) {
        let _ = self.kill_and_reap();
    }
}
