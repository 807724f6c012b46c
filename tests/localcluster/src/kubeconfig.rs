//! Kubeconfig files with embedded credentials, for the admin user and for
//! the control-plane components.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::Error;
use crate::pki::{Pair, write_private};

/// Writes a kubeconfig for `user` at `path`, trusting `ca` and talking to
/// `server`.
pub fn write(path: &Path, server: &str, ca: &Pair, user: &Pair) -> Result<(), Error> {
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": "localcluster",
            "cluster": {
                "server": server,
                "certificate-authority-data": STANDARD.encode(&ca.cert_pem),
            }
        }],
        "users": [{
            "name": "localcluster",
            "user": {
                "client-certificate-data": STANDARD.encode(&user.cert_pem),
                "client-key-data": STANDARD.encode(&user.key_pem),
            }
        }],
        "contexts": [{
            "name": "localcluster",
            "context": { "cluster": "localcluster", "user": "localcluster" }
        }],
        "current-context": "localcluster",
    });
    // JSON is valid YAML, so every kubeconfig reader accepts it.
    write_private(path, &serde_json::to_string_pretty(&doc)?)
}
