//! Reaching Garage: always a specific pod at its own IP (never through a Service), with the
//! static admin token the pods mount.

use std::io::Read as _;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::Api;

use super::Error;
use crate::desired::secrets::SecretSource;
use crate::garage::{AdminClient, AdminToken, ClientConfig};

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
    let config = ClientConfig {
        timeout,
        connect_timeout: timeout.min(Duration::from_secs(3)),
        read_retries: 1,
        ..ClientConfig::default()
    };
    Ok(AdminClient::with_config(
        &format!("http://{host}:{port}"),
        token,
        config,
    )?)
}

/// The IP of a pod that runs and is not being deleted.
pub fn running_ip(pod: &Pod) -> Option<String> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Running") {
        return None;
    }
    status.pod_ip.clone().filter(|ip| !ip.is_empty())
}

/// True when the pod reports the Ready condition.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// 32 bytes from the kernel CSPRNG, as 64 lowercase hex digits.
pub fn random_hex32() -> Result<String, Error> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
