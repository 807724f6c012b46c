//! `cargo xtask fuzz [--seconds N] [--asan] [--stable]`: builds the cargo-fuzz targets of
//! `fuzz/` (the webhook's untrusted inputs, the reconciler's pure decisions and transaction
//! machines, the Garage Admin API client's response decoding) and runs each for a bounded
//! time, seeded with the recorded AdmissionReviews, the sample manifests and the unit tests'
//! Garage answers. `cargo xtask test` runs it too, so CI fuzzes on every run.
//!
//! No sanitizer by default: the workspace forbids unsafe code, so the findings are panics,
//! which need none, and without AddressSanitizer the cold build takes a third less CPU and the
//! targets execute about six times more inputs per second (measured in docs/development.md).
//! `--asan` adds it for a deeper run.
//!
//! Toolchain: nightly when rustup has it, as cargo-fuzz expects. Without nightly (CI machines
//! cannot download toolchains) the stable toolchain builds the same targets with
//! `RUSTC_BOOTSTRAP=1`. cargo-fuzz is installed from crates.io when missing. Whatever cannot be
//! had is an error that says how to get it; the fuzz step never skips.
//!
//! Every target lives in the one crate `fuzz/`: a second fuzz crate would compile the kube
//! family, tokio and the TLS stack a second time, because its dependencies resolve with other
//! features (measured in docs/development.md).
//!
//! The build goes to `<target dir>/fuzz` so that reruns are incremental and `cargo clean`
//! covers it; the growing corpus stays in `fuzz/corpus/<target>` and the seeds are rewritten
//! into `<target dir>/fuzz/seeds/<target>` on every run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::workspace_root;

mod seeds;

/// Targets in `fuzz/fuzz_targets`, with their seconds when `--seconds` is not given. The
/// webhook's targets read untrusted input from the API server and keep a minute each; the
/// reconciler's and the Admin API client's get half, which keeps the whole step inside CI's
/// budget (docs/development.md has the figures).
const TARGETS: &[(&str, u64)] = &[
    ("admission_review", 60),
    ("convert_review", 60),
    ("admin_api_responses", 30),
    ("cluster_decide", 30),
    ("node_decide", 30),
    ("transactions", 30),
    ("resource_plans", 30),
];

/// The cargo-fuzz release installed when none is present; pinned so CI builds the same tool.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// Codegen units per crate of the fuzz build (cargo's own release default).
const CODEGEN_UNITS: &str = "16";

/// libFuzzer's per-input limit. Its default (1,200 s) would let one slow input outlast the
/// whole budget; an input that takes this long is a finding (a webhook must answer within the
/// API server's 10 s timeout), and the margin absorbs sanitizer cost on a busy machine.
const INPUT_TIMEOUT_SECONDS: u64 = 30;

const USAGE: &str = "usage: cargo xtask fuzz [--seconds N] [--asan] [--stable]

  --seconds N  run each target for N seconds (default 60 for the webhook's targets, 30 for
               the others)
  --asan       build with AddressSanitizer (needs the nightly toolchain)
  --stable     use the stable toolchain with RUSTC_BOOTSTRAP=1, as happens when no nightly
               toolchain is installed";

/// Which compiler builds the fuzz targets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Toolchain {
    /// `cargo +nightly fuzz`.
    Nightly,
    /// The default toolchain with `RUSTC_BOOTSTRAP=1`.
    StableBootstrap,
}

impl Toolchain {
    fn cargo(self) -> Command {
        let mut cargo = Command::new("cargo");
        // `cargo xtask` runs this binary through `cargo run`, which sets the package's
        // variables; ring's build script tracks CARGO_MANIFEST_DIR, so passing them on would
        // rebuild ring and everything above it whenever the fuzz build is started the other
        // way (target/debug/xtask, or cargo fuzz by hand).
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if name.starts_with("CARGO_PKG_")
                || matches!(
                    name.as_ref(),
                    "CARGO_MANIFEST_DIR"
                        | "CARGO_MANIFEST_PATH"
                        | "CARGO_CRATE_NAME"
                        | "CARGO_BIN_NAME"
                        | "CARGO_PRIMARY_PACKAGE"
                )
            {
                cargo.env_remove(name.as_ref());
            }
        }
        match self {
            Toolchain::Nightly => {
                cargo.arg("+nightly");
            }
            Toolchain::StableBootstrap => {
                // cargo-fuzz is written for nightly and may pass unstable flags; this lets a
                // stable compiler accept them.
                cargo.env("RUSTC_BOOTSTRAP", "1");
            }
        }
        cargo.arg("fuzz");
        cargo
    }

    /// How to run the same command by hand.
    fn prefix(self) -> &'static str {
        match self {
            Toolchain::Nightly => "cargo +nightly fuzz",
            Toolchain::StableBootstrap => "RUSTC_BOOTSTRAP=1 cargo fuzz",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Toolchain::Nightly => "nightly",
            Toolchain::StableBootstrap => "stable with RUSTC_BOOTSTRAP=1",
        }
    }
}

/// Options of one fuzz run.
pub struct Options {
    /// Seconds per target; `None` gives each its own default ([`TARGETS`]).
    pub seconds: Option<u64>,
    /// Build with AddressSanitizer.
    pub asan: bool,
    /// Use the stable fallback even when nightly is installed.
    pub force_stable: bool,
}

impl Default for Options {
    /// What CI runs: every target for its own default time, no sanitizer, nightly if present.
    fn default() -> Self {
        Options {
            seconds: None,
            asan: false,
            force_stable: false,
        }
    }
}

/// `cargo xtask fuzz` with its command-line arguments.
pub fn run(args: &[&str]) -> Result<()> {
    let mut options = Options::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match *arg {
            "--seconds" => {
                options.seconds = Some(
                    rest.next()
                        .context("--seconds needs a value")?
                        .parse()
                        .context("--seconds takes a whole number")?,
                );
            }
            "--asan" => options.asan = true,
            "--stable" => options.force_stable = true,
            other => bail!("unknown argument `{other}`\n\n{USAGE}"),
        }
    }
    fuzz(&options)
}

fn succeeds(command: &mut Command) -> bool {
    command.output().is_ok_and(|o| o.status.success())
}

fn toolchain(options: &Options) -> Result<Toolchain> {
    let nightly = !options.force_stable
        && succeeds(Command::new("rustup").args(["run", "nightly", "rustc", "--version"]));
    if nightly {
        return Ok(Toolchain::Nightly);
    }
    if options.asan {
        bail!(
            "--asan needs the nightly toolchain: rustup toolchain install nightly \
             (or fuzz without --asan, which works on stable)"
        );
    }
    if !succeeds(Command::new("rustc").arg("--version")) {
        bail!(
            "fuzzing needs a Rust toolchain: rustup toolchain install nightly (stable also \
             works, with RUSTC_BOOTSTRAP=1)"
        );
    }
    if !options.force_stable {
        println!(
            "==> no nightly toolchain (`rustup toolchain install nightly`); fuzzing with \
             stable and RUSTC_BOOTSTRAP=1"
        );
    }
    Ok(Toolchain::StableBootstrap)
}

fn ensure_cargo_fuzz() -> Result<()> {
    if succeeds(Command::new("cargo").args(["fuzz", "--version"])) {
        return Ok(());
    }
    println!("==> installing cargo-fuzz {CARGO_FUZZ_VERSION} from crates.io");
    let began = Instant::now();
    let status = Command::new("cargo")
        .args(["install", "cargo-fuzz", "--locked", "--version"])
        .arg(CARGO_FUZZ_VERSION)
        .status()
        .context("running cargo install cargo-fuzz")?;
    if !status.success() {
        bail!(
            "cargo install cargo-fuzz --locked --version {CARGO_FUZZ_VERSION} failed; fuzzing \
             needs cargo-fuzz (it builds from crates.io), install it and rerun"
        );
    }
    println!(
        "installed cargo-fuzz in {:.0} s",
        began.elapsed().as_secs_f64()
    );
    Ok(())
}

fn fuzz_target_dir() -> PathBuf {
    crate::target_dir().join("fuzz")
}

/// Everything a fuzz build and its runs share: the compiler, the sanitizer and the directories.
pub struct Setup {
    toolchain: Toolchain,
    sanitizer: &'static str,
    fuzz_dir: PathBuf,
    target_dir: PathBuf,
    seconds: Option<u64>,
}

impl Setup {
    /// Picks the toolchain and installs cargo-fuzz when missing.
    pub fn new(options: &Options) -> Result<Setup> {
        let toolchain = toolchain(options)?;
        ensure_cargo_fuzz()?;
        Ok(Setup {
            toolchain,
            sanitizer: if options.asan { "address" } else { "none" },
            fuzz_dir: workspace_root().join("fuzz"),
            target_dir: fuzz_target_dir(),
            seconds: options.seconds,
        })
    }

    /// `cargo fuzz <subcommand>` with the flags shared by build and run, so that the run finds
    /// the build up to date. cargo-fuzz defaults to one codegen unit per crate, which
    /// serialises the largest crates (k8s-openapi, the webhook) on one core.
    fn cargo(&self, subcommand: &str) -> Command {
        let mut cargo = self.toolchain.cargo();
        cargo
            .arg(subcommand)
            .args([
                "--sanitizer",
                self.sanitizer,
                "--codegen-units",
                CODEGEN_UNITS,
            ])
            .arg("--target-dir")
            .arg(&self.target_dir)
            .current_dir(&self.fuzz_dir);
        cargo
    }

    /// The same flags as a reproduction command line.
    fn flags(&self) -> String {
        format!(
            "--sanitizer {} --codegen-units {CODEGEN_UNITS} --target-dir {}",
            self.sanitizer,
            self.target_dir.display()
        )
    }

    fn announce_build(&self) {
        println!(
            "==> building fuzz targets ({}, sanitizer {}) into {}",
            self.toolchain.describe(),
            self.sanitizer,
            self.target_dir.display()
        );
    }

    fn build_failed(&self) -> anyhow::Error {
        anyhow::anyhow!(
            "the fuzz build failed ({}); it needs cargo-fuzz, a C++ compiler for libFuzzer and \
             nightly Rust (`rustup toolchain install nightly`) or stable with RUSTC_BOOTSTRAP=1",
            self.toolchain.describe()
        )
    }

    /// Builds every target in the foreground.
    pub fn build(&self) -> Result<()> {
        self.announce_build();
        let began = Instant::now();
        let status = self
            .cargo("build")
            .status()
            .context("running cargo fuzz build")?;
        if !status.success() {
            return Err(self.build_failed());
        }
        println!(
            "built fuzz targets in {:.0} s",
            began.elapsed().as_secs_f64()
        );
        Ok(())
    }

    /// Starts the build at the lowest CPU priority (`nice -n 19`), its output in a log file,
    /// so that it uses only the CPU other work leaves idle.
    pub fn build_in_background(&self) -> Result<Background> {
        self.announce_build();
        std::fs::create_dir_all(&self.target_dir)?;
        let log_path = self.target_dir.join("build.log");
        let log = std::fs::File::create(&log_path)
            .with_context(|| format!("creating {}", log_path.display()))?;
        let cargo = self.cargo("build");
        let mut niced = Command::new("nice");
        niced
            .args(["-n", "19"])
            .arg(cargo.get_program())
            .args(cargo.get_args())
            .current_dir(&self.fuzz_dir)
            .stdout(log.try_clone()?)
            .stderr(log);
        for (name, value) in cargo.get_envs() {
            match value {
                Some(value) => niced.env(name, value),
                None => niced.env_remove(name),
            };
        }
        // Its own process group, so that stopping it reaches the compilers cargo started.
        std::os::unix::process::CommandExt::process_group(&mut niced, 0);
        let child = niced
            .spawn()
            .context("starting `nice -n 19 cargo fuzz build` (nice is part of coreutils)")?;
        println!(
            "    (in the background at nice 19, logging to {})",
            log_path.display()
        );
        Ok(Background {
            child,
            log_path,
            began: Instant::now(),
        })
    }

    /// Runs every target for its time; a finding fails with the artifact's path.
    pub fn run_targets(&self) -> Result<()> {
        // libFuzzer runs one target on one core, so the targets run side by side, one per
        // core: each still gets its whole time on a core of its own, and the step takes half
        // the wall time on two cores. Each writes to its own log; the step prints the verdict.
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let next = std::sync::atomic::AtomicUsize::new(0);
        let failures = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..workers.min(TARGETS.len()) {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        let Some(&(target, default_seconds)) = TARGETS.get(i) else {
                            return;
                        };
                        let seconds = self.seconds.unwrap_or(default_seconds);
                        if let Err(e) = self.run_target(target, seconds) {
                            failures
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .push(format!("{e:#}"));
                        }
                    }
                });
            }
        });
        let failures = failures.into_inner().unwrap_or_else(|p| p.into_inner());
        if !failures.is_empty() {
            bail!("{}", failures.join("\n"));
        }
        Ok(())
    }

    fn run_target(&self, target: &str, seconds: u64) -> Result<()> {
        let corpus = self.fuzz_dir.join("corpus").join(target);
        let seeds = self.target_dir.join("seeds").join(target);
        std::fs::create_dir_all(&corpus)?;
        let seeded = seed(target, &seeds)?;
        let artifacts = self.fuzz_dir.join("artifacts").join(target);
        let logs = self.target_dir.join("logs");
        std::fs::create_dir_all(&logs)?;
        let log_path = logs.join(format!("{target}.log"));
        let log = std::fs::File::create(&log_path)
            .with_context(|| format!("creating {}", log_path.display()))?;
        let started = SystemTime::now();
        println!(
            "==> fuzzing {target} for {seconds} s ({seeded} seeds), logging to {}",
            log_path.display()
        );
        let began = Instant::now();
        // libFuzzer writes new inputs into the first directory only, so the seeds stay as
        // generated.
        let status = self
            .cargo("run")
            .arg(target)
            .arg(&corpus)
            .arg(&seeds)
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .arg(format!("-timeout={INPUT_TIMEOUT_SECONDS}"))
            .arg("-print_final_stats=1")
            .stdout(log.try_clone()?)
            .stderr(log)
            .status()
            .with_context(|| format!("running cargo fuzz run {target}"))?;
        let output = std::fs::read_to_string(&log_path).unwrap_or_default();
        let lines: Vec<&str> = output.lines().collect();
        if !status.success() {
            println!("--- the end of {}:", log_path.display());
            for line in &lines[lines.len().saturating_sub(60)..] {
                println!("{line}");
            }
        }
        if !status.success() {
            let found = new_files(&artifacts, started);
            let inputs = if found.is_empty() {
                format!(
                    "no new input under {} (see {})",
                    artifacts.display(),
                    log_path.display()
                )
            } else {
                found
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            bail!(
                "fuzz target {target} failed ({status}); failing input: {inputs}\n\
                 reproduce: cd fuzz && {} run {} {target} <input>",
                self.toolchain.prefix(),
                self.flags()
            );
        }
        let runs = lines
            .iter()
            .find(|l| l.starts_with("stat::number_of_executed_units:"))
            .map_or("?", |l| l.rsplit(' ').next().unwrap_or("?"));
        println!(
            "fuzzed {target} for {:.0} s without a finding ({runs} inputs run)",
            began.elapsed().as_secs_f64()
        );
        Ok(())
    }
}

/// A fuzz build running in the background.
pub struct Background {
    child: std::process::Child,
    log_path: PathBuf,
    began: Instant,
}

impl Background {
    /// Waits for the build; on failure prints the end of its log.
    pub fn wait(mut self, setup: &Setup) -> Result<()> {
        let status = self.child.wait().context("waiting for cargo fuzz build")?;
        if !status.success() {
            let log = std::fs::read_to_string(&self.log_path).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            for line in &lines[lines.len().saturating_sub(60)..] {
                println!("{line}");
            }
            return Err(setup
                .build_failed()
                .context(format!("the whole log: {}", self.log_path.display())));
        }
        println!(
            "built fuzz targets in the background; done {:.0} s after it started",
            self.began.elapsed().as_secs_f64()
        );
        Ok(())
    }

    /// Stops the build and every compiler it started: another step failed, so its result is
    /// not needed.
    pub fn stop(mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        let _ = self.child.wait();
    }
}

/// Builds, then runs every target for its time; a finding fails with the artifact's path.
pub fn fuzz(options: &Options) -> Result<()> {
    let setup = Setup::new(options)?;
    setup.build()?;
    setup.run_targets()
}

/// Files in `dir` modified at or after `since`: the inputs a failed run left.
fn new_files(dir: &Path, since: SystemTime) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= since)
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// A file and its parsed documents, or why it could not be parsed.
type ParsedFile = (PathBuf, Result<Vec<Value>, String>);

/// Every document of the YAML or JSON files directly in `dir`, with the file it came from.
fn documents(dir: &Path) -> Result<Vec<ParsedFile>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        })
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let docs = serde_saphyr::from_multiple::<Value>(&text).map_err(|e| e.to_string());
        out.push((path, docs));
    }
    Ok(out)
}

/// Rewrites `dir` with the starting inputs of `target`; returns how many.
fn seed(target: &str, dir: &Path) -> Result<usize> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir)?;
    let root = workspace_root().join("tests/fixtures");
    let mut samples = Vec::new();
    for (path, docs) in documents(&root.join("upstream-samples"))? {
        let docs = docs.map_err(|e| anyhow::anyhow!("parsing {}: {e}", path.display()))?;
        samples.extend(docs.into_iter().filter(|d| d.is_object()));
    }
    let seeds = match target {
        "admission_review" | "convert_review" => webhook_seeds(target, &root, &samples)?,
        other => seeds::for_target(other, &samples)?,
    };
    for (index, bytes) in seeds.iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{index:03}.json")), bytes)?;
    }
    Ok(seeds.len())
}

/// The webhook targets' seeds: the recorded reviews of docs/admission-testing.md, JSON as the
/// API server sends it (a file that does not parse, the malformed case, byte for byte), and
/// reviews and conversions of every sample manifest.
fn webhook_seeds(target: &str, root: &Path, samples: &[Value]) -> Result<Vec<Vec<u8>>> {
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    for (path, docs) in documents(&root.join("admission"))? {
        match docs {
            Ok(docs) => {
                for doc in docs {
                    let wanted = match target {
                        "admission_review" => "AdmissionReview",
                        _ => "ConversionReview",
                    };
                    if doc["kind"] == wanted {
                        seeds.extend(variants(target, &doc));
                        seeds.push(serde_json::to_vec(&doc)?);
                    }
                }
            }
            Err(_) => seeds.push(std::fs::read(&path)?),
        }
    }
    match target {
        "admission_review" => {
            for object in samples {
                for (operation, old, new) in [
                    ("CREATE", None, Some(object)),
                    ("UPDATE", Some(object), Some(object)),
                    ("DELETE", Some(object), None),
                ] {
                    seeds.push(serde_json::to_vec(&admission_review(operation, old, new))?);
                }
            }
        }
        "convert_review" => {
            for object in samples.iter().filter(|d| d["kind"] == "GarageCluster") {
                seeds.push(serde_json::to_vec(object)?);
                let to = if object["apiVersion"] == "garage.rajsingh.info/v1beta1" {
                    "garage.rajsingh.info/v1beta2"
                } else {
                    "garage.rajsingh.info/v1beta1"
                };
                seeds.push(serde_json::to_vec(&json!({
                    "apiVersion": "apiextensions.k8s.io/v1",
                    "kind": "ConversionReview",
                    "request": {"uid": "seed", "desiredAPIVersion": to, "objects": [object]},
                }))?);
            }
        }
        other => bail!("no seeds for fuzz target {other}"),
    }
    Ok(seeds)
}

/// Extra inputs derived from a recorded review: a PVC review by the reconciler's account (the
/// username the fuzz harness configures), so the guard's allowed-removal branch is reachable.
fn variants(target: &str, review: &Value) -> Vec<Vec<u8>> {
    if target != "admission_review"
        || review["request"]["resource"]["resource"] != "persistentvolumeclaims"
    {
        return Vec::new();
    }
    let mut by_controller = review.clone();
    by_controller["request"]["userInfo"]["username"] =
        json!("system:serviceaccount:garage-operator-system:garage-operator");
    serde_json::to_vec(&by_controller).into_iter().collect()
}

/// An AdmissionReview of `operation` on a sample object, as the API server would send it.
fn admission_review(operation: &str, old: Option<&Value>, new: Option<&Value>) -> Value {
    let subject = new.or(old).cloned().unwrap_or(Value::Null);
    let api_version = subject["apiVersion"].as_str().unwrap_or_default();
    let kind = subject["kind"].as_str().unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let resource = format!("{}s", kind.to_lowercase());
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let gvr = json!({"group": group, "version": version, "resource": resource});
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "seed",
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": subject["metadata"]["name"],
            "namespace": subject["metadata"]["namespace"].as_str().unwrap_or("default"),
            "operation": operation,
            "userInfo": {"username": "seed", "groups": ["system:authenticated"]},
            "object": new,
            "oldObject": old,
            "dryRun": false,
        }
    })
}
