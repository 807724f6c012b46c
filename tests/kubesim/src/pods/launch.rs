//! From a container spec to a process on this machine: which program runs
//! for the image, its argv and environment with container paths mapped to
//! host paths, and for Garage the rewritten config.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine;
use k8s_openapi::api::core::v1::Container;

use super::PodCtx;
use crate::garage;
use crate::mounts::Mounts;
use crate::process::Launch;
use crate::volumes;

/// The Garage image's default command (its entrypoint `/garage` becomes the binary).
const GARAGE_DEFAULT_CMD: &str = "server";
/// Where the ServiceAccount admission plugin mounts the API credentials.
const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// What kind of program an image stands for.
#[derive(Debug, Clone)]
pub(crate) enum Program {
    /// The real garage binary with this rewritten config.
    Garage {
        /// The rewritten config on the host.
        config: PathBuf,
    },
    /// A binary of this workspace.
    Workspace(PathBuf),
    /// Anything else: a placeholder.
    Placeholder,
}

/// A container ready to start.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// The process to start.
    pub launch: Launch,
    /// The path mapping.
    pub mounts: Mounts,
    /// What runs.
    pub program: Program,
}

/// Resolves env and mounts and builds the process for `container`. An error
/// is the message of a `CreateContainerConfigError`.
pub(crate) async fn prepare(
    ctx: &PodCtx,
    container: &Container,
    init: bool,
) -> Result<Prepared, String> {
    let shared = &ctx.shared;
    let info = &ctx.info;
    let env = crate::env::resolve(&shared.client, info, container).await?;
    let volumes = ctx
        .volumes
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let rootfs = info.dir.join("rootfs").join(&container.name);
    std::fs::create_dir_all(&rootfs).map_err(|e| format!("creating {}: {e}", rootfs.display()))?;
    let mounts = Mounts::new(container, &volumes, &env, rootfs.clone())?;
    let vars: BTreeMap<&str, &str> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let expand = |list: &Option<Vec<String>>| -> Option<Vec<String>> {
        list.as_ref()
            .map(|l| l.iter().map(|a| crate::env::expand(a, &vars)).collect())
    };
    let command = expand(&container.command);
    let args = expand(&container.args);
    let image = container.image.clone().unwrap_or_default();
    let mut process_env: Vec<(String, String)> = vec![
        (
            "PATH".into(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()),
        ),
        ("HOSTNAME".into(), info.name.clone()),
        ("HOME".into(), rootfs.to_string_lossy().into_owned()),
    ];
    let workspace = workspace_binary(&shared.options.workspace_images, &image, &command);
    let is_garage = image.contains("garage") && !image.contains("garage-operator");
    let (program, launch_program, launch_args) = if let Some(bin) = workspace {
        let mut argv: Vec<String> = command
            .map(|c| c.into_iter().skip(1).collect())
            .unwrap_or_default();
        argv.extend(args.unwrap_or_default());
        let argv = argv.iter().map(|a| mounts.map_value(a)).collect();
        let kubeconfig = write_kubeconfig(ctx, &container.name, &mounts).await?;
        process_env.push((
            "KUBECONFIG".into(),
            kubeconfig.to_string_lossy().into_owned(),
        ));
        (Program::Workspace(bin.clone()), bin, argv)
    } else if is_garage {
        let mut argv: Vec<String> = match (&command, &args) {
            (Some(c), Some(a)) => c.iter().skip(1).chain(a.iter()).cloned().collect(),
            (Some(c), None) => c.iter().skip(1).cloned().collect(),
            (None, Some(a)) => a.clone(),
            (None, None) => vec![GARAGE_DEFAULT_CMD.into()],
        };
        let (config_path, rest) = garage::config_path(&argv, &env);
        let config = rewrite_garage_config(ctx, &container.name, &config_path, &mounts)?;
        argv = vec!["-c".into(), config.to_string_lossy().into_owned()];
        argv.extend(rest);
        // A pod that mounts its ServiceAccount token may call the API (Garage's own
        // Kubernetes discovery): its client finds the API server through a kubeconfig, as it
        // would through the in-cluster address.
        if mounts
            .to_host(&format!("{SERVICE_ACCOUNT_DIR}/token"))
            .is_some_and(|p| p.exists())
        {
            let kubeconfig = write_kubeconfig(ctx, &container.name, &mounts).await?;
            process_env.push((
                "KUBECONFIG".into(),
                kubeconfig.to_string_lossy().into_owned(),
            ));
        }
        (
            Program::Garage { config },
            shared.options.garage_bin.clone(),
            argv,
        )
    } else if init {
        (Program::Placeholder, PathBuf::from("true"), Vec::new())
    } else {
        (
            Program::Placeholder,
            PathBuf::from("sleep"),
            vec!["infinity".into()],
        )
    };
    for (k, v) in &env {
        let value = match (&program, k.as_str()) {
            (Program::Garage { config }, garage::CONFIG_ENV) => {
                config.to_string_lossy().into_owned()
            }
            (Program::Placeholder, _) => v.clone(),
            _ => mounts.map_value(v),
        };
        if let Some(slot) = process_env.iter_mut().find(|(key, _)| key == k) {
            slot.1 = value;
        } else {
            process_env.push((k.clone(), value));
        }
    }
    Ok(Prepared {
        launch: Launch {
            program: launch_program,
            args: launch_args,
            env: process_env,
            cwd: info.dir.clone(),
        },
        mounts,
        program,
    })
}

/// The workspace binary an image stands for. One image may hold several binaries (the
/// operator's image holds the webhook and the reconciler): then the container's command picks
/// the one whose file name it names, and without such a command the first mapping wins.
fn workspace_binary(
    mappings: &[(String, PathBuf)],
    image: &str,
    command: &Option<Vec<String>>,
) -> Option<PathBuf> {
    let matching: Vec<&PathBuf> = mappings
        .iter()
        .filter(|(needle, _)| image.contains(needle.as_str()))
        .map(|(_, bin)| bin)
        .collect();
    let wanted = command
        .as_ref()
        .and_then(|c| c.first())
        .and_then(|first| Path::new(first).file_name());
    wanted
        .and_then(|name| {
            matching
                .iter()
                .find(|bin| bin.file_name() == Some(name))
                .copied()
        })
        .or_else(|| matching.first().copied())
        .cloned()
}

/// The process for an exec probe or hook `argv` in a prepared container.
pub(crate) fn exec_launch(prepared: &Prepared, argv: &[String]) -> Option<Launch> {
    let first = argv.first()?;
    let rest = argv[1..].iter().map(|a| prepared.mounts.map_value(a));
    let base = Path::new(first)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (program, args): (PathBuf, Vec<String>) = match &prepared.program {
        Program::Garage { config } if base == "garage" => {
            let mut args = vec!["-c".to_owned(), config.to_string_lossy().into_owned()];
            args.extend(rest);
            (prepared.launch.program.clone(), args)
        }
        Program::Workspace(bin)
            if bin.file_name().map(|n| n.to_string_lossy().into_owned()) == Some(base.clone()) =>
        {
            (bin.clone(), rest.collect())
        }
        _ => (
            PathBuf::from(prepared.mounts.map_value(first)),
            rest.collect(),
        ),
    };
    Some(Launch {
        program,
        args,
        env: prepared.launch.env.clone(),
        cwd: prepared.launch.cwd.clone(),
    })
}

fn rewrite_garage_config(
    ctx: &PodCtx,
    container: &str,
    config_path: &str,
    mounts: &Mounts,
) -> Result<PathBuf, String> {
    use garage::PathMapper;
    let source = PathBuf::from(mounts.anywhere(config_path));
    let text = std::fs::read_to_string(&source).map_err(|e| {
        format!(
            "reading the Garage config {config_path} (at {}): {e}",
            source.display()
        )
    })?;
    let rewritten = garage::rewrite(&text, ctx.info.ip, mounts);
    let dir = ctx.info.dir.join("garage");
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let target = dir.join(format!("{container}.toml"));
    write_private(&target, &rewritten)?;
    Ok(target)
}

/// A kubeconfig for a workspace binary: the API server, its CA, and the
/// pod's projected service-account token when mounted (so rotation works as
/// in a cluster), else a TokenRequest token bound to the pod.
async fn write_kubeconfig(
    ctx: &PodCtx,
    container: &str,
    mounts: &Mounts,
) -> Result<PathBuf, String> {
    let dir = ctx.info.dir.join("kubesim");
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let token_file = match mounts
        .to_host(&format!("{SERVICE_ACCOUNT_DIR}/token"))
        .filter(|p| p.exists())
    {
        Some(path) => path,
        None => {
            let path = dir.join("token");
            let token = volumes::request_token(&ctx.shared.client, &ctx.info, None, 3607)
                .await
                .map_err(|e| e.0)?;
            write_private(&path, &token)?;
            path
        }
    };
    let options = &ctx.shared.options;
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{ "name": "kubesim", "cluster": {
            "server": options.apiserver_url,
            "certificate-authority-data": base64::engine::general_purpose::STANDARD.encode(&options.ca_pem),
        }}],
        "users": [{ "name": "pod", "user": { "tokenFile": token_file.to_string_lossy() } }],
        "contexts": [{ "name": "kubesim", "context": {
            "cluster": "kubesim", "user": "pod", "namespace": ctx.info.namespace,
        }}],
        "current-context": "kubesim",
    });
    let path = dir.join(format!("kubeconfig-{container}"));
    write_private(&path, &doc.to_string())?;
    Ok(path)
}

/// Writes a file readable by its owner only (it may hold secrets).
fn write_private(path: &Path, text: &str) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("chmod {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_image_with_several_binaries_is_resolved_by_command() {
        let mappings = vec![
            (
                "garage-operator".to_owned(),
                PathBuf::from("/b/garage-webhook"),
            ),
            (
                "garage-operator".to_owned(),
                PathBuf::from("/b/garage-reconciler"),
            ),
        ];
        let image = "ghcr.io/garage-operator/garage-operator:0.1.0";
        let pick = |cmd: Option<Vec<&str>>| {
            workspace_binary(
                &mappings,
                image,
                &cmd.map(|c| c.into_iter().map(str::to_owned).collect()),
            )
        };
        assert_eq!(
            pick(Some(vec!["/garage-reconciler"])),
            Some(PathBuf::from("/b/garage-reconciler"))
        );
        assert_eq!(
            pick(Some(vec!["/garage-webhook", "serve"])),
            Some(PathBuf::from("/b/garage-webhook"))
        );
        assert_eq!(pick(None), Some(PathBuf::from("/b/garage-webhook")));
        assert_eq!(workspace_binary(&mappings, "busybox", &None), None);
    }
}
