//! `garage-webhook`: the admission and conversion webhook of garage-operator (`serve`, the
//! default), and the same rules as a command line (`review`, `convert`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use certs::{InstallLabel, Lifetimes, Mode, MountedConfig, SelfManagedConfig};
use clap::{Args, Parser, Subcommand, ValueEnum};
use webhook::admission::host_access::HostAccessPolicy;
use webhook::cli::review::{Input, ManifestOperation, Propagation, ReviewCommand, Subresource};
use webhook::cli::{EXIT_UNUSABLE, convert, review};
use webhook::server::dispatch::Settings;
use webhook::server::limits::{
    Limits, MAX_BODY_BYTES, MAX_CONNECTIONS_PER_SOURCE, REVIEW_BUDGET_BYTES,
};
use webhook::server::{ServeConfig, Shutdown, start};

#[derive(Parser, Debug)]
#[command(
    name = "garage-webhook",
    version,
    about = "Admission and conversion webhook of garage-operator",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve the webhooks over HTTPS (the default).
    Serve(ServeArgs),
    /// Review a recorded AdmissionReview, or manifests, with the webhook's rules.
    Review(ReviewArgs),
    /// Convert a GarageCluster manifest between v1beta1 and v1beta2.
    Convert(ConvertArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum CertMode {
    /// A CA and serving certificate kept in a Secret by the webhook itself.
    SelfManaged,
    /// A keypair mounted from a Secret that cert-manager keeps current.
    CertManager,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    Json,
    Text,
}

#[derive(Args, Debug, Clone)]
struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "WEBHOOK_LISTEN", default_value = "0.0.0.0:9443")]
    listen: SocketAddr,
    /// Where the serving keypair comes from.
    #[arg(
        long,
        env = "WEBHOOK_CERT_MODE",
        value_enum,
        default_value = "self-managed"
    )]
    cert_mode: CertMode,
    /// cert-manager mode: directory holding tls.crt and tls.key.
    #[arg(
        long,
        env = "WEBHOOK_CERT_DIR",
        default_value = "/tmp/k8s-webhook-server/serving-certs"
    )]
    cert_dir: PathBuf,
    /// Self-managed mode: name of the certificate Secret.
    #[arg(
        long,
        env = "WEBHOOK_SECRET_NAME",
        default_value = "garage-operator-webhook-cert"
    )]
    secret_name: String,
    /// Self-managed mode: namespace of the certificate Secret (default: the pod's namespace).
    #[arg(long, env = "WEBHOOK_SECRET_NAMESPACE")]
    secret_namespace: Option<String>,
    /// Name of the webhook Service, for the certificate's names.
    #[arg(
        long,
        env = "WEBHOOK_SERVICE_NAME",
        default_value = "garage-operator-webhook"
    )]
    service_name: String,
    /// Namespace of the webhook Service (default: the pod's namespace).
    #[arg(long, env = "WEBHOOK_SERVICE_NAMESPACE")]
    service_namespace: Option<String>,
    /// Further names or IP addresses for the serving certificate (repeatable).
    #[arg(long = "extra-san", env = "WEBHOOK_EXTRA_SANS", value_delimiter = ',')]
    extra_sans: Vec<String>,
    /// Label (key=value, or a bare value for app.kubernetes.io/instance) of this install's
    /// webhook configurations and CRDs, whose caBundle the webhook keeps.
    #[arg(long, env = "WEBHOOK_INSTALL_LABEL", default_value = "garage-operator")]
    install_label: String,
    /// Lifetime of the self-managed CA (s, m, h or d suffix).
    #[arg(long, env = "WEBHOOK_CA_LIFETIME", default_value = "3650d", value_parser = parse_duration)]
    ca_lifetime: Duration,
    /// Lifetime of a self-managed serving certificate; it is renewed at two thirds.
    #[arg(long, env = "WEBHOOK_SERVING_LIFETIME", default_value = "90d", value_parser = parse_duration)]
    serving_lifetime: Duration,
    /// How often the certificate Secret and caBundles are checked besides watch events.
    #[arg(long, env = "WEBHOOK_CHECK_INTERVAL", default_value = "60s", value_parser = parse_duration)]
    check_interval: Duration,
    /// Namespace of the reconciler's ServiceAccount (the PVC finalizer guard lets only it
    /// remove barrier finalizers).
    #[arg(long, env = "POD_NAMESPACE")]
    controller_namespace: Option<String>,
    /// Name of the reconciler's ServiceAccount.
    #[arg(long, env = "POD_SERVICE_ACCOUNT")]
    controller_service_account_name: Option<String>,
    /// After SIGTERM: how long to keep serving while readiness is false, so that the pod's
    /// endpoint is removed before connections are refused (SIGINT skips it).
    #[arg(long, env = "WEBHOOK_SHUTDOWN_GRACE", default_value = "10s", value_parser = parse_duration)]
    shutdown_grace: Duration,
    /// Then how long open requests get to finish before their connections are cut.
    #[arg(long, env = "WEBHOOK_SHUTDOWN_DRAIN", default_value = "10s", value_parser = parse_duration)]
    shutdown_drain: Duration,
    /// Memory (MiB) the reviews in flight may hold together; derived from the chart's 128 MiB
    /// memory limit, lower it with the limit.
    #[arg(long, env = "WEBHOOK_REVIEW_BUDGET_MIB", default_value_t = REVIEW_BUDGET_BYTES >> 20)]
    review_budget_mib: usize,
    /// Connections one source address may hold open at once; its further connections are
    /// closed at accept. The API server needs one per concurrent call to this replica.
    #[arg(long, env = "WEBHOOK_MAX_CONNECTIONS_PER_SOURCE", default_value_t = MAX_CONNECTIONS_PER_SOURCE)]
    max_connections_per_source: usize,
    /// Directories under which node-local pool HostPaths may lie (comma-separated; empty for
    /// /var/lib/garage, /mnt, /srv and /data). A root over the Node's system is refused.
    #[arg(
        long = "host-path-root",
        env = "WEBHOOK_HOST_PATH_ROOTS",
        value_delimiter = ','
    )]
    host_path_roots: Vec<String>,
    /// Allow Garage containers that are privileged, add capabilities or allow privilege
    /// escalation.
    #[arg(long, env = "WEBHOOK_ALLOW_PRIVILEGED_GARAGE", default_value_t = false, action = clap::ArgAction::Set)]
    allow_privileged_garage: bool,
    /// Log format.
    #[arg(long, env = "WEBHOOK_LOG_FORMAT", value_enum, default_value = "json")]
    log_format: LogFormat,
}

#[derive(Args, Debug)]
struct ReviewArgs {
    /// The operation of a manifest review; without it, FILE is a recorded AdmissionReview.
    #[arg(long, value_parser = ["CREATE", "UPDATE", "DELETE"])]
    operation: Option<String>,
    /// The stored object (UPDATE, DELETE), reviewed as the API server stored it: with the
    /// defaulting webhook applied. With --subresource scale, the live GarageCluster.
    #[arg(long)]
    old: Option<PathBuf>,
    /// DeleteOptions.propagationPolicy of a DELETE (kubectl delete --cascade).
    #[arg(long, value_parser = ["Foreground", "Background", "Orphan"])]
    propagation: Option<String>,
    /// Review a write of the GarageCluster's /scale subresource: NEW is an autoscaling/v1
    /// Scale, --old the live GarageCluster (its apiVersion is the version addressed).
    #[arg(long, value_parser = ["scale"])]
    subresource: Option<String>,
    /// Directory of existing objects (YAML/JSON manifests) the cross-object rules read.
    #[arg(long)]
    state: Option<PathBuf>,
    /// userInfo.username of a manifest request.
    #[arg(long, default_value = "garage-webhook-cli")]
    user: String,
    /// The username allowed to remove PVC barrier finalizers
    /// (system:serviceaccount:NAMESPACE:NAME).
    #[arg(long, default_value = "")]
    controller_username: String,
    /// A recorded AdmissionReview, or the submitted object with --operation.
    file: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct ConvertArgs {
    /// Target apiVersion.
    #[arg(long, value_parser = ["garage.rajsingh.info/v1beta1", "garage.rajsingh.info/v1beta2"])]
    to: String,
    /// The manifest (YAML or JSON, one or more documents).
    file: PathBuf,
}

/// `90d`, `2160h`, `30m`, `45s` or plain seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let value: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 90d, 12h, 30m or 45s"))?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {text:?}; use s, m, h or d"
            ));
        }
    };
    Ok(Duration::from_secs(value.saturating_mul(seconds)))
}

fn init_logs(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().flatten_event(true).init(),
        LogFormat::Text => builder.init(),
    }
}

fn non_empty(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    init_logs(args.log_format);
    certs::install_default_provider();
    let (Some(namespace), Some(account)) = (
        non_empty(args.controller_namespace.clone()),
        non_empty(args.controller_service_account_name.clone()),
    ) else {
        bail!(
            "POD_NAMESPACE and controller service account name are required when webhooks are enabled \
             (set POD_NAMESPACE and POD_SERVICE_ACCOUNT, or --controller-namespace and \
             --controller-service-account-name)"
        );
    };
    let controller_username = format!("system:serviceaccount:{namespace}:{account}");
    let review_budget_bytes = args.review_budget_mib.saturating_mul(1 << 20);
    if review_budget_bytes < MAX_BODY_BYTES {
        bail!(
            "--review-budget-mib {} is smaller than one request body may be ({} MiB)",
            args.review_budget_mib,
            MAX_BODY_BYTES >> 20
        );
    }
    if args.max_connections_per_source == 0 {
        bail!("--max-connections-per-source must be at least 1");
    }
    let certificates = match args.cert_mode {
        CertMode::CertManager => Mode::CertManager(MountedConfig::new(&args.cert_dir)),
        CertMode::SelfManaged => {
            let secret_namespace =
                non_empty(args.secret_namespace.clone()).unwrap_or_else(|| namespace.clone());
            let service_namespace =
                non_empty(args.service_namespace.clone()).unwrap_or_else(|| namespace.clone());
            Mode::SelfManaged(SelfManagedConfig {
                secret_namespace,
                secret_name: args.secret_name.clone(),
                service_name: args.service_name.clone(),
                service_namespace,
                extra_sans: args.extra_sans.clone(),
                lifetimes: Lifetimes {
                    ca: args.ca_lifetime,
                    serving: args.serving_lifetime,
                    ..Lifetimes::default()
                },
                install_label: InstallLabel::parse(&args.install_label)?,
                check_interval: args.check_interval,
                bundle_propagation: Duration::from_secs(10),
            })
        }
    };
    let client = kube::Client::try_default()
        .await
        .context("connecting to the Kubernetes API server")?;
    let config = ServeConfig {
        listen: args.listen,
        certificates,
        settings: Settings {
            controller_username,
            host_access: HostAccessPolicy::new(&args.host_path_roots, args.allow_privileged_garage)
                .map_err(|e| anyhow::anyhow!("--host-path-root (WEBHOOK_HOST_PATH_ROOTS): {e}"))?,
        },
        limits: Limits {
            review_budget_bytes,
            max_connections_per_source: args.max_connections_per_source,
            ..Limits::default()
        },
    };
    let running = start(config, client).await?;
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    let mut timings = Shutdown {
        grace: args.shutdown_grace,
        drain: args.shutdown_drain,
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {
            // Someone at a terminal: no endpoint to take out of rotation first.
            timings.grace = Duration::ZERO;
            tracing::info!("interrupted; shutting down");
        }
        _ = terminate.recv() => tracing::info!("terminated; shutting down"),
    }
    running.shutdown(timings).await;
    Ok(())
}

async fn review_command(args: ReviewArgs) -> anyhow::Result<i32> {
    let input = match args.operation.as_deref() {
        None => {
            if args.old.is_some() {
                bail!("--old needs --operation UPDATE or DELETE");
            }
            if args.propagation.is_some() || args.subresource.is_some() {
                bail!(
                    "--propagation and --subresource describe a manifest review; add --operation"
                );
            }
            let Some(file) = args.file else {
                bail!("give a recorded AdmissionReview FILE, or --operation with manifests");
            };
            Input::Recorded(file)
        }
        Some(op) => Input::Manifests {
            operation: match op {
                "CREATE" => ManifestOperation::Create,
                "UPDATE" => ManifestOperation::Update,
                _ => ManifestOperation::Delete,
            },
            old: args.old,
            new: args.file,
            propagation: args.propagation.as_deref().map(|p| match p {
                "Foreground" => Propagation::Foreground,
                "Orphan" => Propagation::Orphan,
                _ => Propagation::Background,
            }),
            subresource: if args.subresource.is_some() {
                Subresource::Scale
            } else {
                Subresource::None
            },
        },
    };
    let command = ReviewCommand {
        input,
        state: args.state,
        user: args.user,
        settings: Settings {
            controller_username: args.controller_username,
            ..Settings::default()
        },
    };
    let results = review::run(&command).await?;
    let mut code = 0;
    for result in results {
        print_out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&result.output)?
        ));
        code = code.max(result.exit_code);
    }
    Ok(code)
}

/// Writes to stdout; a reader that went away (`| head`) is not an error worth a panic.
fn print_out(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

fn exit(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("garage-webhook: starting the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match cli.command.unwrap_or(Command::Serve(cli.serve)) {
        Command::Serve(args) => match runtime.block_on(serve(args)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!(error = format!("{e:#}"), "garage-webhook failed");
                eprintln!("garage-webhook: {e:#}");
                ExitCode::FAILURE
            }
        },
        Command::Review(args) => match runtime.block_on(review_command(args)) {
            Ok(code) => exit(code),
            Err(e) => {
                eprintln!("garage-webhook review: {e:#}");
                exit(EXIT_UNUSABLE)
            }
        },
        Command::Convert(args) => match convert::run(&args.file, &args.to) {
            Ok(yaml) => {
                print_out(&yaml);
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("garage-webhook convert: {e}");
                exit(EXIT_UNUSABLE)
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration("90d").unwrap(),
            Duration::from_secs(7_776_000)
        );
        assert_eq!(parse_duration("45").unwrap(), Duration::from_secs(45));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert!(parse_duration("1y").is_err());
        assert!(parse_duration("h").is_err());
    }
}
