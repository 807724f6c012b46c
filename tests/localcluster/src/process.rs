//! Child processes of the local cluster: each runs in its own process group
//! with its output in a log file, and is stopped (SIGTERM, then SIGKILL) when
//! its handle is dropped. A pid file per cluster lets the next start reap
//! processes a killed test run left behind.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::Error;

/// A running child process that is stopped when dropped.
#[derive(Debug)]
pub struct Managed {
    name: String,
    child: Child,
    log: PathBuf,
    // What started it, so that a test can restart it as it was.
    program: PathBuf,
    args: Vec<String>,
    pid_file: PathBuf,
}

impl Managed {
    /// Starts `program` with `args` in a new process group, appending its
    /// stdout and stderr to `log`, and records its pid in `pid_file`.
    pub fn spawn(
        name: &str,
        program: &Path,
        args: &[String],
        log: &Path,
        pid_file: &Path,
    ) -> Result<Self, Error> {
        use std::io::Write;
        use std::os::unix::process::CommandExt;
        let out = File::options().create(true).append(true).open(log)?;
        let child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .process_group(0)
            .spawn()
            .map_err(|source| Error::Spawn {
                name: name.to_owned(),
                program: program.to_path_buf(),
                source,
            })?;
        let mut pids = File::options().create(true).append(true).open(pid_file)?;
        writeln!(pids, "{}", child.id())?;
        Ok(Managed {
            name: name.to_owned(),
            child,
            log: log.to_path_buf(),
            program: program.to_path_buf(),
            args: args.to_vec(),
            pid_file: pid_file.to_path_buf(),
        })
    }

    /// Its name, as given to [`Managed::spawn`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Stops the process (SIGTERM, then SIGKILL after `grace`) and starts it again with the
    /// same program, arguments and log, as a crashed or upgraded component would be.
    pub fn restart(&mut self, grace: Duration) -> Result<(), Error> {
        self.stop(grace);
        let next = Managed::spawn(
            &self.name,
            &self.program,
            &self.args,
            &self.log,
            &self.pid_file,
        )?;
        // The stopped child is reaped; dropping it now would signal a process group that
        // no longer exists (harmless) or a reused one (not).
        let old = std::mem::replace(self, next);
        std::mem::forget(old);
        Ok(())
    }

    /// Fails with the tail of the log if the process has exited.
    pub fn check_running(&mut self) -> Result<(), Error> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => Err(Error::Exited {
                name: self.name.clone(),
                status: status.to_string(),
                log: self.log.clone(),
                tail: tail(&self.log, 20),
            }),
        }
    }

    /// Stops the process group: SIGTERM, then SIGKILL after `grace`.
    pub fn stop(&mut self, grace: Duration) {
        let group = Pid::from_raw(self.child.id() as i32);
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            // The leader is gone; helpers it started may still hold the group.
            let _ = killpg(group, Signal::SIGKILL);
            return;
        }
        let _ = killpg(group, Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                let _ = killpg(group, Signal::SIGKILL);
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = killpg(group, Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(5));
    }
}

/// Kills the process groups listed in `pid_file` by an earlier run whose
/// command line still mentions `marker` (so a recycled pid is left alone),
/// then removes the file.
pub fn reap_leftovers(pid_file: &Path, marker: &str) {
    let Ok(text) = std::fs::read_to_string(pid_file) else {
        return;
    };
    for pid in text.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(marker) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
    let _ = std::fs::remove_file(pid_file);
}

/// The last `lines` lines of a log file, for error messages.
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
