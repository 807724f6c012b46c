//! Pod volumes materialised on the host and the container-path → host-path
//! mapping that stands in for mounts.
//!
//! ConfigMap, Secret, projected, downward-API and emptyDir volumes live in
//! `<pod dir>/volumes/<name>`; hostPath volumes under
//! `<node root>/hostfs/<path>`; claims at their bound PV's path. Mounts are
//! not real bind mounts (no namespaces here): a process sees host paths, so
//! kubesim rewrites the paths it hands to processes instead. `readOnly` is
//! therefore not enforced.

use std::collections::BTreeMap;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{
    DownwardAPIVolumeFile, KeyToPath, PersistentVolume, PersistentVolumeClaim, ServiceAccount,
    Volume,
};
use kube::api::PostParams;
use kube::{Api, Client};

use crate::env::{field_ref, get_config_map, get_secret, resource_field};
use crate::pods::PodInfo;

/// Why a volume cannot be set up yet; the pod waits and retries, with a
/// `FailedMount` event carrying the message.
#[derive(Debug, Clone)]
pub(crate) struct MountError(pub String);

/// Host locations of a pod's volumes, by volume name.
pub(crate) type VolumeMap = BTreeMap<String, PathBuf>;

/// Default mode of ConfigMap, Secret, projected and downward-API files.
const DEFAULT_MODE: u32 = 0o644;
/// The expiry the kubelet asks for when a projection does not say.
const DEFAULT_TOKEN_SECONDS: i64 = 3607;

/// Where a hostPath `path` of a node lives on this machine.
pub(crate) fn host_path(node_root: &Path, path: &str) -> PathBuf {
    let mut out = node_root.join("hostfs");
    for part in Path::new(path).components() {
        if let Component::Normal(p) = part {
            out.push(p);
        }
    }
    out
}

/// Sets up every volume of the pod. With `refresh`, only the volumes whose
/// content comes from the API (ConfigMap, Secret, projected, downward API)
/// are written again, as the kubelet's periodic sync does.
pub(crate) async fn materialise(
    client: &Client,
    info: &PodInfo,
    refresh: bool,
) -> Result<VolumeMap, MountError> {
    let mut map = VolumeMap::new();
    // Volumes are set up in order; a failure stops at the first bad one, as
    // the kubelet reports one volume at a time.
    let volumes = info
        .pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.clone())
        .unwrap_or_default();
    for volume in &volumes {
        let dir = info.dir.join("volumes").join(&volume.name);
        let location = materialise_one(client, info, volume, &dir, refresh)
            .await
            .map_err(|e| {
                MountError(format!(
                    "MountVolume.SetUp failed for volume \"{}\" : {}",
                    volume.name, e.0
                ))
            })?;
        if let Some(location) = location {
            map.insert(volume.name.clone(), location);
        }
    }
    Ok(map)
}

/// Sets up one volume and says where it is; `None` when `refresh` skips it.
async fn materialise_one(
    client: &Client,
    info: &PodInfo,
    v: &Volume,
    dir: &Path,
    refresh: bool,
) -> Result<Option<PathBuf>, MountError> {
    let io = |what: &str, e: std::io::Error| MountError(format!("{what}: {e}"));
    if let Some(cm) = &v.config_map {
        let files = match get_config_map(client, &info.namespace, &cm.name)
            .await
            .map_err(MountError)?
        {
            Some(cm) => {
                let mut files: BTreeMap<String, Vec<u8>> = cm
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.into_bytes()))
                    .collect();
                files.extend(
                    cm.binary_data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, v.0)),
                );
                Some(files)
            }
            None if cm.optional == Some(true) => None,
            None => return Err(MountError(format!("configmap \"{}\" not found", cm.name))),
        };
        write_keys(
            dir,
            files,
            cm.items.as_deref(),
            cm.default_mode,
            cm.optional == Some(true),
            "configmap",
            &cm.name,
        )?;
        return Ok(Some(dir.to_path_buf()));
    }
    if let Some(s) = &v.secret {
        let name = s.secret_name.clone().unwrap_or_default();
        let files = match get_secret(client, &info.namespace, &name)
            .await
            .map_err(MountError)?
        {
            Some(secret) => Some(secret_files(secret)),
            None if s.optional == Some(true) => None,
            None => return Err(MountError(format!("secret \"{name}\" not found"))),
        };
        write_keys(
            dir,
            files,
            s.items.as_deref(),
            s.default_mode,
            s.optional == Some(true),
            "secret",
            &name,
        )?;
        return Ok(Some(dir.to_path_buf()));
    }
    if let Some(d) = &v.downward_api {
        std::fs::create_dir_all(dir).map_err(|e| io("creating the volume directory", e))?;
        for item in d.items.iter().flatten() {
            write_downward(info, dir, item, d.default_mode)?;
        }
        return Ok(Some(dir.to_path_buf()));
    }
    if let Some(p) = &v.projected {
        std::fs::create_dir_all(dir).map_err(|e| io("creating the volume directory", e))?;
        for source in p.sources.iter().flatten() {
            if let Some(cm) = &source.config_map {
                let files = get_config_map(client, &info.namespace, &cm.name)
                    .await
                    .map_err(MountError)?
                    .map(|cm| {
                        let mut f: BTreeMap<String, Vec<u8>> = cm
                            .data
                            .unwrap_or_default()
                            .into_iter()
                            .map(|(k, v)| (k, v.into_bytes()))
                            .collect();
                        f.extend(
                            cm.binary_data
                                .unwrap_or_default()
                                .into_iter()
                                .map(|(k, v)| (k, v.0)),
                        );
                        f
                    });
                if files.is_none() && cm.optional != Some(true) {
                    return Err(MountError(format!("configmap \"{}\" not found", cm.name)));
                }
                write_keys(
                    dir,
                    files,
                    cm.items.as_deref(),
                    p.default_mode,
                    cm.optional == Some(true),
                    "configmap",
                    &cm.name,
                )?;
            }
            if let Some(s) = &source.secret {
                let files = get_secret(client, &info.namespace, &s.name)
                    .await
                    .map_err(MountError)?
                    .map(secret_files);
                if files.is_none() && s.optional != Some(true) {
                    return Err(MountError(format!("secret \"{}\" not found", s.name)));
                }
                write_keys(
                    dir,
                    files,
                    s.items.as_deref(),
                    p.default_mode,
                    s.optional == Some(true),
                    "secret",
                    &s.name,
                )?;
            }
            if let Some(d) = &source.downward_api {
                for item in d.items.iter().flatten() {
                    write_downward(info, dir, item, p.default_mode)?;
                }
            }
            if let Some(t) = &source.service_account_token {
                let file = dir.join(&t.path);
                let seconds = t.expiration_seconds.unwrap_or(DEFAULT_TOKEN_SECONDS);
                if token_is_fresh(&file, seconds) {
                    continue;
                }
                let token = request_token(client, info, t.audience.clone(), seconds).await?;
                write_file(
                    &file,
                    token.as_bytes(),
                    p.default_mode.map_or(DEFAULT_MODE, |m| m as u32),
                )?;
            }
            if source.cluster_trust_bundle.is_some() || source.pod_certificate.is_some() {
                return Err(MountError("clusterTrustBundle and podCertificate projections are not supported by kubesim".into()));
            }
        }
        return Ok(Some(dir.to_path_buf()));
    }
    if refresh {
        return Ok(None);
    }
    if v.empty_dir.is_some() {
        std::fs::create_dir_all(dir).map_err(|e| io("creating the emptyDir", e))?;
        return Ok(Some(dir.to_path_buf()));
    }
    if let Some(h) = &v.host_path {
        let path = host_path(&info.node_root, &h.path);
        check_host_path(&path, &h.path, h.type_.as_deref().unwrap_or(""))?;
        return Ok(Some(path));
    }
    let claim = if let Some(c) = &v.persistent_volume_claim {
        Some(c.claim_name.clone())
    } else if v.ephemeral.is_some() {
        Some(format!("{}-{}", info.name, v.name))
    } else {
        None
    };
    if let Some(claim) = claim {
        return claim_path(client, info, &claim).await.map(Some);
    }
    Err(MountError(
        "this volume type is not supported by kubesim".into(),
    ))
}

fn secret_files(secret: k8s_openapi::api::core::v1::Secret) -> BTreeMap<String, Vec<u8>> {
    let mut files: BTreeMap<String, Vec<u8>> = secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    files.extend(
        secret
            .string_data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes())),
    );
    files
}

/// Writes the keys of a ConfigMap or Secret (all, or the listed items) into
/// `dir` with the right modes.
fn write_keys(
    dir: &Path,
    files: Option<BTreeMap<String, Vec<u8>>>,
    items: Option<&[KeyToPath]>,
    default_mode: Option<i32>,
    optional: bool,
    kind: &str,
    name: &str,
) -> Result<(), MountError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| MountError(format!("creating the volume directory: {e}")))?;
    let Some(files) = files else { return Ok(()) };
    let default_mode = default_mode.map_or(DEFAULT_MODE, |m| m as u32);
    match items {
        None => {
            for (key, data) in &files {
                write_file(&dir.join(key), data, default_mode)?;
            }
        }
        Some(items) => {
            for item in items {
                match files.get(&item.key) {
                    Some(data) => {
                        let mode = item.mode.map_or(default_mode, |m| m as u32);
                        write_file(&dir.join(relative(&item.path)?), data, mode)?;
                    }
                    None if optional => {}
                    None => {
                        return Err(MountError(format!(
                            "{kind} \"{name}\" has no key \"{}\"",
                            item.key
                        )));
                    }
                }
            }
        }
    }
    Ok(())
}

fn write_downward(
    info: &PodInfo,
    dir: &Path,
    item: &DownwardAPIVolumeFile,
    default_mode: Option<i32>,
) -> Result<(), MountError> {
    let value = if let Some(f) = &item.field_ref {
        field_ref(info, f)
            .ok_or_else(|| MountError(format!("unsupported fieldPath {}", f.field_path)))?
    } else if let Some(r) = &item.resource_field_ref {
        resource_field(info, None, r).map_err(MountError)?
    } else {
        String::new()
    };
    let mode = item
        .mode
        .or(default_mode)
        .map_or(DEFAULT_MODE, |m| m as u32);
    write_file(&dir.join(relative(&item.path)?), value.as_bytes(), mode)
}

/// A relative path inside a volume; `..` and absolute paths are refused as
/// the API server would.
pub(crate) fn relative(path: &str) -> Result<&str, MountError> {
    if Path::new(path)
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
    {
        Ok(path)
    } else {
        Err(MountError(format!("invalid path {path:?} in volume items")))
    }
}

/// Writes a file atomically (temp file + rename) with `mode`, skipping the
/// write when nothing changed so that readers watching mtimes stay calm.
fn write_file(path: &Path, data: &[u8], mode: u32) -> Result<(), MountError> {
    let err = |e: std::io::Error| MountError(format!("writing {}: {e}", path.display()));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    let same_mode = std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o7777 == mode);
    if same_mode && std::fs::read(path).is_ok_and(|old| old == data) {
        return Ok(());
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.kubesim-tmp"));
    std::fs::write(&tmp, data).map_err(err)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode)).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}

fn token_is_fresh(file: &Path, seconds: i64) -> bool {
    let refresh_after = Duration::from_secs((seconds.max(600) as u64) * 8 / 10);
    std::fs::metadata(file)
        .and_then(|m| m.modified())
        .is_ok_and(|t| {
            SystemTime::now()
                .duration_since(t)
                .is_ok_and(|age| age < refresh_after)
        })
}

/// A service-account token for the pod's account, bound to the pod.
pub(crate) async fn request_token(
    client: &Client,
    info: &PodInfo,
    audience: Option<String>,
    seconds: i64,
) -> Result<String, MountError> {
    let account = info
        .pod
        .spec
        .as_ref()
        .and_then(|s| s.service_account_name.clone())
        .unwrap_or_else(|| "default".into());
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            audiences: audience.filter(|a| !a.is_empty()).map(|a| vec![a]),
            expiration_seconds: Some(seconds),
            bound_object_ref: Some(BoundObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: Some(info.name.clone()),
                uid: Some(info.uid.clone()),
            }),
        }),
        ..TokenRequest::default()
    };
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &info.namespace);
    let response = accounts
        .create_token_request(&account, &PostParams::default(), &request)
        .await
        .map_err(|e| {
            MountError(format!(
                "requesting a token for serviceaccount {}/{account}: {e}",
                info.namespace
            ))
        })?;
    response
        .status
        .and_then(|s| s.token)
        .ok_or_else(|| MountError("the TokenRequest answer carries no token".into()))
}

/// Checks or creates a hostPath as its `type` says, as the kubelet does.
fn check_host_path(path: &Path, original: &str, kind: &str) -> Result<(), MountError> {
    let meta = std::fs::metadata(path);
    let wrong = |what: &str| {
        MountError(format!(
            "hostPath type check failed: {original} is not a {what}"
        ))
    };
    match kind {
        "" => Ok(()),
        "DirectoryOrCreate" => {
            std::fs::create_dir_all(path)
                .map_err(|e| MountError(format!("creating {original}: {e}")))?;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| MountError(format!("chmod {original}: {e}")))
        }
        "FileOrCreate" => {
            if meta.is_err() {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| MountError(format!("creating {original}: {e}")))?;
                }
                std::fs::File::create(path)
                    .map_err(|e| MountError(format!("creating {original}: {e}")))?;
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))
                    .map_err(|e| MountError(format!("chmod {original}: {e}")))?;
                return Ok(());
            }
            meta.ok()
                .filter(|m| m.is_file())
                .map(|_| ())
                .ok_or_else(|| wrong("file"))
        }
        "Directory" => meta
            .ok()
            .filter(|m| m.is_dir())
            .map(|_| ())
            .ok_or_else(|| wrong("directory")),
        "File" => meta
            .ok()
            .filter(|m| m.is_file())
            .map(|_| ())
            .ok_or_else(|| wrong("file")),
        "Socket" => meta
            .ok()
            .filter(|m| m.file_type().is_socket())
            .map(|_| ())
            .ok_or_else(|| wrong("socket")),
        "CharDevice" => meta
            .ok()
            .filter(|m| m.file_type().is_char_device())
            .map(|_| ())
            .ok_or_else(|| wrong("character device")),
        "BlockDevice" => meta
            .ok()
            .filter(|m| m.file_type().is_block_device())
            .map(|_| ())
            .ok_or_else(|| wrong("block device")),
        other => Err(MountError(format!("unknown hostPath type {other}"))),
    }
}

/// The host path of a bound claim's volume.
async fn claim_path(client: &Client, info: &PodInfo, claim: &str) -> Result<PathBuf, MountError> {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &info.namespace);
    let pvc = claims
        .get_opt(claim)
        .await
        .map_err(|e| MountError(format!("getting persistentvolumeclaim {claim}: {e}")))?
        .ok_or_else(|| MountError(format!("persistentvolumeclaim \"{claim}\" not found")))?;
    let bound = pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
    let Some(pv_name) = pvc
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.clone())
        .filter(|_| bound)
    else {
        return Err(MountError(format!(
            "persistentvolumeclaim \"{claim}\" is not bound yet"
        )));
    };
    let pv = Api::<PersistentVolume>::all(client.clone())
        .get(&pv_name)
        .await
        .map_err(|e| MountError(format!("getting persistentvolume {pv_name}: {e}")))?;
    let spec = pv.spec.unwrap_or_default();
    let (path, kind) = if let Some(h) = spec.host_path {
        (h.path, h.type_.unwrap_or_default())
    } else if let Some(l) = spec.local {
        (l.path, "Directory".to_owned())
    } else if let Some(dir) = crate::provisioner::volume_path(&PersistentVolume {
        spec: Some(spec.clone()),
        ..Default::default()
    }) {
        // Claims created with a VolumeAttributesClass get CSI volumes from
        // the provisioner; their directory rides in a volume attribute.
        (dir.to_string_lossy().into_owned(), "Directory".to_owned())
    } else {
        return Err(MountError(format!(
            "persistentvolume {pv_name} is neither hostPath nor local; kubesim cannot mount it"
        )));
    };
    // PVs of the local-sim provisioner name real host paths under the nodes
    // root; any other path is a path on the simulated node.
    let host = if Path::new(&path).starts_with(&info.nodes_root) {
        PathBuf::from(&path)
    } else {
        host_path(&info.node_root, &path)
    };
    if kind.is_empty() && !host.exists() {
        std::fs::create_dir_all(&host).map_err(|e| MountError(format!("creating {path}: {e}")))?;
    }
    check_host_path(&host, &path, &kind)?;
    Ok(host)
}
