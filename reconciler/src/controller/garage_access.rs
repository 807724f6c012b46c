//! Reaching Garage: always a specific pod at its own IP (never through a Service), with the
//! static admin token the pods mount.

use std::io::Read as _;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::Api;

use super::Error;
use crate::desired::secrets::SecretSource;
use crate::garage::{AdminClient, AdminToken, ClientConfig};

// Whether a pod runs, and at which IP, is read from the pod alone.
pub use decide::pods::{is_ready, running_ip};

/// Reads the admin token the pods mount.
pub async fn admin_token(
    secrets: &Api<Secret>,
    source: &SecretSource,
) -> Result<Option<AdminToken>, Error> {
    let Some(secret) = secrets.get_opt(&source.name).await? else {
        return Ok(None);
    };
    let value = secret
        .data
        .as_ref()
        .and_then(|d| d.get(&source.key))
        .map(|b| String::from_utf8_lossy(&b.0).trim().to_owned())
        .filter(|v| !v.is_empty());
    Ok(value.map(AdminToken::new))
}

/// A client of the Admin API of the pod at `ip`.
pub fn pod_client(
    ip: &str,
    port: u16,
    token: &AdminToken,
    timeout: Duration,
) -> Result<AdminClient, Error> {
    let host = if ip.contains(':') {
        format!("[{ip}]")
    } else {
        ip.to_owned()
    };
    Ok(client_at(&format!("http://{host}:{port}"), token, timeout)?)
}

/// A client of the Admin API at `base_url`, with the operator's deadlines: `timeout` per
/// call, at most 3 s to connect, one retry of a failed read.
pub fn client_at(
    base_url: &str,
    token: &AdminToken,
    timeout: Duration,
) -> Result<AdminClient, crate::garage::GarageError> {
    let config = ClientConfig {
        timeout,
        connect_timeout: timeout.min(Duration::from_secs(3)),
        read_retries: 1,
        ..ClientConfig::default()
    };
    AdminClient::with_config(base_url, token, config)
}

/// 32 bytes from the kernel CSPRNG, as 64 lowercase hex digits.
pub fn random_hex32() -> Result<String, Error> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The admin token a pod itself runs with: the Secret and key of its `admin-token` volume.
/// During a rollout of a changed token, pods run different tokens; each is reached with its
/// own. `cache` keeps Secrets already read this pass.
pub async fn pod_admin_token(
    pod: &Pod,
    secrets: &Api<Secret>,
    cache: &mut std::collections::BTreeMap<String, Option<Secret>>,
) -> Result<Option<AdminToken>, Error> {
    let Some(source) = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .and_then(|vs| vs.iter().find(|v| v.name == "admin-token"))
        .and_then(|v| v.secret.as_ref())
    else {
        return Ok(None);
    };
    let (Some(name), Some(key)) = (
        source.secret_name.clone(),
        source
            .items
            .as_ref()
            .and_then(|i| i.first())
            .map(|i| i.key.clone()),
    ) else {
        return Ok(None);
    };
    if !cache.contains_key(&name) {
        cache.insert(name.clone(), secrets.get_opt(&name).await?);
    }
    Ok(cache
        .get(&name)
        .and_then(Option::as_ref)
        .and_then(|s| s.data.as_ref()?.get(&key))
        .map(|b| String::from_utf8_lossy(&b.0).trim().to_owned())
        .filter(|v| !v.is_empty())
        .map(AdminToken::new))
}
