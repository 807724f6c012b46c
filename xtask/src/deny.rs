//! `cargo xtask deny`: the supply-chain checks of the dependency graph with cargo-deny,
//! configured by `deny.toml` at the workspace root. `cargo xtask test` runs it too.
//!
//! - `licenses`, `bans` and `sources` run on `Cargo.lock` as it is (`--locked`); cargo
//!   downloads from crates.io any crate of the graph its cache lacks, as a fresh machine needs.
//! - `advisories` run on every call, offline, against a copy of the RustSec advisory database:
//!   `$GARAGE_OPERATOR_ADVISORY_DB` when set, else `../shared/advisory-db` beside the
//!   workspace, else a database `cargo deny fetch` left in `$CARGO_HOME/advisory-dbs`. None of
//!   them is a step that passes quietly: without a database the step fails and says where it
//!   looked. cargo-deny cannot clone the database itself (github.com is out of reach, and no
//!   registry this project reaches ships it), and it only opens a git repository, so the step
//!   makes a private one from the copy (see [`prepare_repository`]) under
//!   `<target>/advisory-dbs`, which `deny.toml`'s `db-path` names through
//!   `$GARAGE_OPERATOR_ADVISORY_DBS`. The log shows the database's date (its `SNAPSHOT` line),
//!   since a finding published after it is not in it.
//!
//! cargo-deny is installed from crates.io when missing, pinned, into the tool cache
//! (`cargo-deny-<version>/bin` beside the other tools), so reruns are free and `cargo clean`
//! keeps it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use localcluster::tools::cache_dir;

use crate::{target_dir, workspace_root};

/// The cargo-deny release installed when none is cached; pinned so CI runs the same checks.
const CARGO_DENY_VERSION: &str = "0.20.2";

/// Names a RustSec advisory database (a plain copy with a `SNAPSHOT` file, or a git checkout)
/// to check against instead of the shared copy.
pub const ADVISORY_DB_ENV: &str = "GARAGE_OPERATOR_ADVISORY_DB";

/// The variable `deny.toml`'s `db-path` reads: the folder holding the private repository. The
/// location depends on the target directory, which a config file cannot compute.
const DB_ROOT_ENV: &str = "GARAGE_OPERATOR_ADVISORY_DBS";

/// The folder cargo-deny opens inside `db-path` for its default database (the RustSec
/// advisory-db): it names it after the URL's last segment and a hash of the URL. cargo-deny
/// 0.20 logs it with `-L debug` ("Opening advisory database at ..."); `cargo deny fetch` gives
/// its checkout the same name.
const DEFAULT_DB_FOLDER: &str = "advisory-db-3157b0e258782691";

/// Written into the private repository's `.git` once it is complete: what it was made from.
/// A later run reuses the repository while this matches and remakes it when it does not.
const FINGERPRINT_FILE: &str = "source-fingerprint";

/// Part of the fingerprint, raised when the way the repository is made changes, so that
/// repositories made the old way are remade.
const REPOSITORY_FORMAT: u32 = 1;

/// Runs `cargo xtask deny`, which takes no arguments.
pub fn run(args: &[&str]) -> Result<()> {
    if !args.is_empty() {
        bail!("usage: cargo xtask deny");
    }
    check()
}

/// Runs every check; see the module documentation.
pub fn check() -> Result<()> {
    let deny = ensure_cargo_deny()?;
    let began = Instant::now();
    let db_root = target_dir().join("advisory-dbs");
    cargo_deny(&deny, &db_root, &["licenses", "bans", "sources"], false)?;

    let source = find_database(env_path(ADVISORY_DB_ENV).as_deref(), &default_databases())?;
    let snapshot = Snapshot::read(&source)?;
    println!(
        "==> advisories: RustSec advisory database {}",
        source.display()
    );
    println!("    {}", snapshot.line);
    println!(
        "    as of {}, {} days before today; an advisory published since is not in it",
        snapshot.date,
        days_today() - snapshot.date.days_since_epoch()
    );
    let repository = prepare_repository(&source, &snapshot, &db_root)?;
    println!("    checked through {}", repository.display());
    // Offline: cargo-deny would otherwise fetch the database from github.com, and the private
    // repository has no remote.
    cargo_deny(&deny, &db_root, &["advisories"], true)?;
    println!(
        "cargo-deny checks passed in {:.0} s",
        began.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Where the pinned cargo-deny lives in the tool cache.
fn install_root() -> PathBuf {
    cache_dir().join(format!("cargo-deny-{CARGO_DENY_VERSION}"))
}

/// The pinned cargo-deny binary, installed from crates.io first when the tool cache lacks it.
fn ensure_cargo_deny() -> Result<PathBuf> {
    let root = install_root();
    let binary = root.join("bin").join("cargo-deny");
    if binary.is_file() {
        return Ok(binary);
    }
    println!("==> installing cargo-deny {CARGO_DENY_VERSION} from crates.io");
    let began = Instant::now();
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["install", "cargo-deny", "--locked", "--version"])
        .arg(CARGO_DENY_VERSION)
        .arg("--root")
        .arg(&root)
        .status()
        .context("running cargo install cargo-deny")?;
    if !status.success() || !binary.is_file() {
        bail!(
            "cargo install cargo-deny --locked --version {CARGO_DENY_VERSION} --root {} \
             failed; the supply-chain checks need it (it builds from crates.io)",
            root.display()
        );
    }
    println!(
        "installed cargo-deny in {:.0} s",
        began.elapsed().as_secs_f64()
    );
    Ok(binary)
}

/// `cargo-deny check <checks>` on the workspace with `Cargo.lock` as it is, `offline` or not,
/// with `deny.toml`'s `db-path` set to `db_root`; the graph of how a reported crate is reached
/// is left out (cargo-deny prints it when run by hand).
fn cargo_deny(binary: &Path, db_root: &Path, checks: &[&str], offline: bool) -> Result<()> {
    println!("==> cargo deny check {}", checks.join(" "));
    let root = workspace_root();
    let mut command = Command::new(binary);
    command.arg("--manifest-path").arg(root.join("Cargo.toml"));
    if offline {
        command.arg("--offline");
    }
    let status = command
        .args(["--locked", "check", "--hide-inclusion-graph"])
        .args(checks)
        .env(DB_ROOT_ENV, db_root)
        .current_dir(&root)
        .status()
        .context("running cargo-deny")?;
    if !status.success() {
        if checks.contains(&"advisories") {
            bail!(
                "cargo deny check advisories failed: a crate of Cargo.lock has an advisory that \
                 deny.toml's [advisories] ignore does not accept (update the crate, or accept \
                 the advisory there with a reason), or the database is older than deny.toml's \
                 maximum-db-staleness (refresh the copy); cargo-deny's message above says which"
            );
        }
        bail!(
            "cargo deny check {} failed (deny.toml says what is allowed)",
            checks.join(" ")
        );
    }
    Ok(())
}

/// An environment variable as a path, `None` when unset or empty.
fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// The places a database is looked for when `$GARAGE_OPERATOR_ADVISORY_DB` is unset, in order:
/// the shared copy beside the workspace, then the checkout `cargo deny fetch` makes.
fn default_databases() -> Vec<PathBuf> {
    let cargo_home = env_path("CARGO_HOME")
        .or_else(|| env_path("HOME").map(|home| home.join(".cargo")))
        .unwrap_or_else(|| PathBuf::from(".cargo"));
    vec![
        workspace_root()
            .join("..")
            .join("shared")
            .join("advisory-db"),
        cargo_home.join("advisory-dbs").join(DEFAULT_DB_FOLDER),
    ]
}

/// Whether `path` looks like a RustSec advisory database: cargo-deny reads the advisories in
/// its `crates` folder and nothing else.
fn is_database(path: &Path) -> bool {
    path.join("crates").is_dir()
}

/// The database to check against: `chosen` (from `$GARAGE_OPERATOR_ADVISORY_DB`) when given,
/// which must then be one (a wrong path is an error, not a reason to check against another
/// database), else the first of `defaults` that is one. Without any, the error says where it
/// looked and how to provide one: the advisories are never skipped.
fn find_database(chosen: Option<&Path>, defaults: &[PathBuf]) -> Result<PathBuf> {
    if let Some(path) = chosen {
        if is_database(path) {
            return Ok(path.to_path_buf());
        }
        bail!(
            "{ADVISORY_DB_ENV}={} is not a RustSec advisory database: it has no `crates` folder",
            path.display()
        );
    }
    if let Some(found) = defaults.iter().find(|path| is_database(path)) {
        // Without the `..` of `<workspace>/../shared`, for the log.
        return Ok(found.canonicalize().unwrap_or_else(|_| found.clone()));
    }
    let looked: Vec<String> = defaults
        .iter()
        .map(|path| format!("{} (no `crates` folder)", path.display()))
        .collect();
    bail!(
        "no RustSec advisory database, so the advisories cannot be checked; looked at \
         ${ADVISORY_DB_ENV} (unset), {}. Provide one: copy the files of \
         https://github.com/rustsec/advisory-db to ../shared/advisory-db beside the workspace \
         with a SNAPSHOT file naming the commit and its date (YYYY-MM-DD), or set \
         {ADVISORY_DB_ENV} to such a copy or to a git checkout of it",
        looked.join(", ")
    )
}

/// A calendar date, as the database's age is counted in days.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Date {
    /// The year, e.g. 2026.
    year: i64,
    /// The month, 1 to 12.
    month: u32,
    /// The day of the month, 1 to 31.
    day: u32,
}

impl Date {
    /// The first `YYYY-MM-DD` in `text` that is a date, standing alone (no digit either side).
    fn find_in(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        (0..bytes.len().saturating_sub(9)).find_map(|start| {
            let candidate = &bytes[start..start + 10];
            let shaped = candidate.iter().enumerate().all(|(i, b)| match i {
                4 | 7 => *b == b'-',
                _ => b.is_ascii_digit(),
            });
            let alone = (start == 0 || !bytes[start - 1].is_ascii_digit())
                && bytes.get(start + 10).is_none_or(|b| !b.is_ascii_digit());
            if !shaped || !alone {
                return None;
            }
            let number = |range: std::ops::Range<usize>| text[start..][range].parse::<u32>().ok();
            let date = Self {
                year: i64::from(number(0..4)?),
                month: number(5..7)?,
                day: number(8..10)?,
            };
            ((1..=12).contains(&date.month) && (1..=31).contains(&date.day)).then_some(date)
        })
    }

    /// Days from 1970-01-01 to this date (the proleptic Gregorian calendar, as Unix time).
    fn days_since_epoch(self) -> i64 {
        // Counted from 0000-03-01 so that the leap day ends a year; then shifted to 1970.
        let year = if self.month <= 2 {
            self.year - 1
        } else {
            self.year
        };
        let era = year.div_euclid(400);
        let year_of_era = year.rem_euclid(400);
        let month = i64::from(self.month);
        let day_of_year =
            (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + i64::from(self.day) - 1;
        let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
        era * 146_097 + day_of_era - 719_468
    }

    /// Midnight UTC at the start of this date.
    fn midnight(self) -> Result<SystemTime> {
        let seconds = u64::try_from(self.days_since_epoch() * 86_400)
            .with_context(|| format!("{self} is before 1970"))?;
        Ok(UNIX_EPOCH + Duration::from_secs(seconds))
    }
}

impl std::fmt::Display for Date {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// Days from 1970-01-01 to today (UTC).
fn days_today() -> i64 {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    i64::try_from(seconds / 86_400).unwrap_or(i64::MAX)
}

/// Which version of the database a folder holds.
#[derive(Debug)]
struct Snapshot {
    /// The day its files are from: the `SNAPSHOT` file's date, or a checkout's commit date.
    date: Date,
    /// The line that says so, printed in the log: the `SNAPSHOT` line holding the date, or the
    /// checkout's commit.
    line: String,
    /// Changes whenever the folder holds another version of the database (see [`Self::read`]).
    fingerprint: String,
}

impl Snapshot {
    /// Reads the version of the database at `source`: from its `SNAPSHOT` file (the plain copy
    /// in `../shared`, which names the upstream commit and its date), else from git when it is
    /// a checkout. The fingerprint adds the number and size of its files, so that a copy
    /// refreshed or cut short without its `SNAPSHOT` being updated is not mistaken for the last
    /// one.
    fn read(source: &Path) -> Result<Self> {
        let (date, line, version) = match fs::read_to_string(source.join("SNAPSHOT")) {
            Ok(text) => {
                let (date, line) = text
                    .lines()
                    .find_map(|line| Date::find_in(line).map(|date| (date, line)))
                    .with_context(|| {
                        format!(
                            "{} has no date (YYYY-MM-DD), so how old the database is cannot \
                             be told",
                            source.join("SNAPSHOT").display()
                        )
                    })?;
                (date, format!("SNAPSHOT: {}", line.trim()), text)
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                if !source.join(".git").exists() {
                    bail!(
                        "{} has neither a SNAPSHOT file nor a .git folder, so how old it is \
                         cannot be told; add a SNAPSHOT file naming the upstream commit and \
                         its date (YYYY-MM-DD)",
                        source.display()
                    );
                }
                let head = git_output(source, &["log", "-1", "--format=%H %cI"])?;
                let (commit, date) = head
                    .split_once(' ')
                    .and_then(|(commit, when)| Some((commit, Date::find_in(when)?)))
                    .with_context(|| format!("unexpected `git log` output {head:?}"))?;
                let line = format!("git checkout at commit {commit} of {date}");
                (date, line, head)
            }
            Err(err) => {
                return Err(err)
                    .with_context(|| format!("reading {}", source.join("SNAPSHOT").display()));
            }
        };
        let (files, bytes) = tree_size(source)?;
        let fingerprint = format!(
            "format {REPOSITORY_FORMAT}\nsource {}\n{files} files, {bytes} bytes\n{version}",
            source.display()
        );
        Ok(Self {
            date,
            line,
            fingerprint,
        })
    }
}

/// The number of files under `dir` and their total size, `.git` left out.
fn tree_size(dir: &Path) -> Result<(u64, u64)> {
    let mut files = 0;
    let mut bytes = 0;
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        if entry.file_name() == ".git" {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            let (inner_files, inner_bytes) = tree_size(&path)?;
            files += inner_files;
            bytes += inner_bytes;
        } else {
            files += 1;
            bytes += fs::metadata(&path)
                .with_context(|| format!("reading {}", path.display()))?
                .len();
        }
    }
    Ok((files, bytes))
}

/// Copies the files under `from` to `to`, `.git` left out. The source is never written to.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        if entry.file_name() == ".git" {
            continue;
        }
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        if source.is_dir() {
            copy_tree(&source, &target)?;
        } else {
            fs::copy(&source, &target).with_context(|| format!("copying {}", source.display()))?;
        }
    }
    Ok(())
}

/// Makes sure `<db_root>/advisory-db-<hash>` is a git repository of `source` as it is now, as
/// cargo-deny wants it, and returns its path. The copy is private, so `source` is never
/// written to.
///
/// cargo-deny 0.20 reads the advisories from `crates/` of a git repository, and with
/// `--offline` takes the database's age from `.git/FETCH_HEAD`'s modification time, or, when
/// there is none, from the later of the `HEAD` commit's date and `.git/HEAD`'s modification
/// time; it fails the check when that is older than `maximum-db-staleness`. The repository is
/// therefore one commit of the files dated the database's own date, by a fixed author, without
/// `FETCH_HEAD`, and with `.git/HEAD` dated that day too (set on every run): the age cargo-deny
/// sees is the database's, not the day the copy was made, and the same files give the same
/// commit on any machine. It is remade when the fingerprint changes (another `SNAPSHOT`, other
/// files, another source), in a staging folder moved into place when complete, so an
/// interrupted run or another run sharing the target directory never leaves a half-made one.
fn prepare_repository(source: &Path, snapshot: &Snapshot, db_root: &Path) -> Result<PathBuf> {
    let repository = db_root.join(DEFAULT_DB_FOLDER);
    let fingerprint_path = |repository: &Path| repository.join(".git").join(FINGERPRINT_FILE);
    let current = |repository: &Path| {
        fs::read_to_string(fingerprint_path(repository))
            .is_ok_and(|found| found == snapshot.fingerprint)
    };
    if !current(&repository) {
        let staging = db_root.join(format!(".staging-{}", std::process::id()));
        remove_if_present(&staging)?;
        copy_tree(source, &staging)?;
        commit_snapshot(&staging, snapshot.date)?;
        fs::write(fingerprint_path(&staging), &snapshot.fingerprint)
            .with_context(|| format!("writing {}", fingerprint_path(&staging).display()))?;
        let old = db_root.join(format!(".old-{}", std::process::id()));
        match fs::rename(&repository, &old) {
            Ok(()) => remove_if_present(&old)?,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => {
                return Err(err).with_context(|| format!("moving {} away", repository.display()));
            }
        }
        if let Err(err) = fs::rename(&staging, &repository) {
            // Another run sharing the target directory may have put the same one in place.
            remove_if_present(&staging)?;
            if !current(&repository) {
                return Err(err).with_context(|| format!("creating {}", repository.display()));
            }
        }
    }
    let head = repository.join(".git").join("HEAD");
    let midnight = snapshot.date.midnight()?;
    fs::File::options()
        .write(true)
        .open(&head)
        .and_then(|file| file.set_modified(midnight))
        .with_context(|| format!("dating {}", head.display()))?;
    Ok(repository)
}

/// `git init` in `dir` and one commit of every file in it, authored and committed on `date`
/// by a fixed identity, so that the commit depends on the files and the date alone. The
/// user's and the system's git configuration are left out (hooks, signing, templates of
/// messages would change it or stop it).
fn commit_snapshot(dir: &Path, date: Date) -> Result<()> {
    let when = format!("{date}T00:00:00Z");
    let message = format!("RustSec advisory database as of {date}");
    for args in [
        &["init", "--quiet"][..],
        &["add", "--all"],
        &["commit", "--quiet", "--no-verify", "--message", &message],
    ] {
        let mut command = git(dir);
        command
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .args(["-c", "init.defaultBranch=main"])
            .args(["-c", "commit.gpgSign=false"])
            .args(["-c", "core.autocrlf=false"])
            .args(["-c", "core.hooksPath=/dev/null"])
            .env("GIT_AUTHOR_NAME", "cargo xtask deny")
            .env("GIT_AUTHOR_EMAIL", "deny@xtask.invalid")
            .env("GIT_AUTHOR_DATE", &when)
            .env("GIT_COMMITTER_NAME", "cargo xtask deny")
            .env("GIT_COMMITTER_EMAIL", "deny@xtask.invalid")
            .env("GIT_COMMITTER_DATE", &when)
            .args(args);
        run_git(command, args)?;
    }
    Ok(())
}

/// A git command run in `dir`. The variables that would point git at another repository are
/// removed, since this may run from a git hook of the workspace, which sets them.
fn git(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command.arg("-C").arg(dir);
    for name in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
    ] {
        command.env_remove(name);
    }
    command
}

/// Runs `command` (git with `args`), failing with its error output when it fails.
fn run_git(mut command: Command, args: &[&str]) -> Result<String> {
    let output = command
        .output()
        .with_context(|| format!("running git {}", args.join(" ")))?;
    if !output.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// The output of `git <args>` in `dir`.
fn git_output(dir: &Path, args: &[&str]) -> Result<String> {
    let mut command = git(dir);
    command.args(args);
    run_git(command, args)
}

/// Removes the folder `path` and what it holds, when it exists.
fn remove_if_present(path: &Path) -> Result<()> {
    match fs::remove_dir_all(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(err).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh, empty folder for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-deny-{name}-{}", std::process::id()));
        remove_if_present(&dir).unwrap();
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A plain copy of a database with one advisory and the given `SNAPSHOT` text.
    fn plain_copy(dir: &Path, snapshot: &str) -> PathBuf {
        let db = dir.join("advisory-db");
        fs::create_dir_all(db.join("crates").join("demo")).unwrap();
        fs::write(
            db.join("crates").join("demo").join("RUSTSEC-2026-0001.md"),
            "```toml\n[advisory]\nid = \"RUSTSEC-2026-0001\"\n```\n",
        )
        .unwrap();
        fs::write(db.join("SNAPSHOT"), snapshot).unwrap();
        db
    }

    const SNAPSHOT: &str = "RustSec advisory database, files as of\n\
                            commit bf5c0d245a92671908518d7e765914d437954ed6 (2026-08-21), licence \
                            CC0-1.0.\nRefreshed only by hand.\n";

    #[test]
    fn dates_are_found_standing_alone() {
        let date = |year, month, day| Date { year, month, day };
        assert_eq!(
            Date::find_in("commit abc (2026-08-21), licence"),
            Some(date(2026, 8, 21))
        );
        assert_eq!(Date::find_in("2026-08-21"), Some(date(2026, 8, 21)));
        assert_eq!(Date::find_in("12026-08-21"), None);
        assert_eq!(
            Date::find_in("2026-13-01 2026-01-02"),
            Some(date(2026, 1, 2))
        );
        assert_eq!(Date::find_in("no date"), None);
        assert_eq!(date(2026, 8, 21).to_string(), "2026-08-21");
    }

    #[test]
    fn days_are_counted_from_1970() {
        let days = |year, month, day| Date { year, month, day }.days_since_epoch();
        assert_eq!(days(1970, 1, 1), 0);
        assert_eq!(days(2000, 3, 1), 11_017);
        assert_eq!(days(2026, 12, 4) - days(2026, 8, 21), 105);
        assert_eq!(days(2025, 1, 1) - days(2024, 1, 1), 366);
    }

    #[test]
    fn the_variable_wins_and_a_wrong_one_is_an_error() {
        let dir = scratch("find");
        let shared = plain_copy(&dir, SNAPSHOT);
        let missing = dir.join("missing");
        let defaults = [missing.clone(), shared.clone()];
        assert_eq!(find_database(None, &defaults).unwrap(), shared);
        assert_eq!(find_database(Some(&shared), &[]).unwrap(), shared);
        let wrong = find_database(Some(&missing), &defaults).unwrap_err();
        assert!(wrong.to_string().contains(ADVISORY_DB_ENV), "{wrong}");
        let none = find_database(None, std::slice::from_ref(&missing)).unwrap_err();
        assert!(
            none.to_string().contains(&missing.display().to_string()),
            "{none}"
        );
        remove_if_present(&dir).unwrap();
    }

    #[test]
    fn a_copy_without_a_date_is_refused() {
        let dir = scratch("undated");
        let db = plain_copy(&dir, "no date here\n");
        assert!(Snapshot::read(&db).is_err());
        fs::remove_file(db.join("SNAPSHOT")).unwrap();
        assert!(Snapshot::read(&db).is_err());
        remove_if_present(&dir).unwrap();
    }

    #[test]
    fn a_checkout_is_dated_by_its_commit() {
        let dir = scratch("checkout");
        let db = plain_copy(&dir, SNAPSHOT);
        fs::remove_file(db.join("SNAPSHOT")).unwrap();
        let date = Date {
            year: 2026,
            month: 11,
            day: 30,
        };
        commit_snapshot(&db, date).unwrap();
        let snapshot = Snapshot::read(&db).unwrap();
        assert_eq!(snapshot.date, date);
        assert!(snapshot.line.contains("of 2026-11-30"), "{}", snapshot.line);
        let repository = prepare_repository(&db, &snapshot, &dir.join("dbs")).unwrap();
        assert!(
            repository
                .join("crates/demo/RUSTSEC-2026-0001.md")
                .is_file()
        );
        remove_if_present(&dir).unwrap();
    }

    #[test]
    fn the_repository_carries_the_snapshot_date_and_follows_the_copy() {
        let dir = scratch("repository");
        let db = plain_copy(&dir, SNAPSHOT);
        let root = dir.join("dbs");
        let snapshot = Snapshot::read(&db).unwrap();
        assert!(snapshot.line.contains("(2026-08-21)"), "{}", snapshot.line);

        let repository = prepare_repository(&db, &snapshot, &root).unwrap();
        assert_eq!(repository, root.join(DEFAULT_DB_FOLDER));
        assert!(
            repository
                .join("crates/demo/RUSTSEC-2026-0001.md")
                .is_file()
        );
        // What cargo-deny reads to date the database.
        assert!(!repository.join(".git/FETCH_HEAD").exists());
        assert_eq!(
            git_output(&repository, &["show", "-s", "--format=%cI", "HEAD"]).unwrap(),
            "2026-08-21T00:00:00+00:00"
        );
        let head_time = || {
            fs::metadata(repository.join(".git/HEAD"))
                .unwrap()
                .modified()
                .unwrap()
        };
        assert_eq!(head_time(), snapshot.date.midnight().unwrap());
        assert!(
            git_output(&repository, &["status", "--porcelain"])
                .unwrap()
                .is_empty()
        );
        let commit = git_output(&repository, &["rev-parse", "HEAD"]).unwrap();

        // Reused while the copy is unchanged, and the same files give the same commit.
        fs::write(repository.join("marker"), "").unwrap();
        prepare_repository(&db, &snapshot, &root).unwrap();
        assert!(repository.join("marker").exists());
        let again = prepare_repository(&db, &snapshot, &dir.join("other")).unwrap();
        assert_eq!(git_output(&again, &["rev-parse", "HEAD"]).unwrap(), commit);

        // Remade when the copy is refreshed.
        fs::write(
            db.join("SNAPSHOT"),
            SNAPSHOT.replace("2026-08-21", "2026-11-30"),
        )
        .unwrap();
        let refreshed = Snapshot::read(&db).unwrap();
        prepare_repository(&db, &refreshed, &root).unwrap();
        assert!(!repository.join("marker").exists());
        assert_eq!(head_time(), refreshed.date.midnight().unwrap());
        assert_eq!(
            fs::read_to_string(db.join("SNAPSHOT")).unwrap(),
            SNAPSHOT.replace("2026-08-21", "2026-11-30"),
            "the source is never written to"
        );
        remove_if_present(&dir).unwrap();
    }
}
