//! Serving certificates of the garage-operator webhook.
//!
//! Two modes, chosen at start:
//!
//! - **Self-managed** (default, [`SelfManaged`]): a CA and a serving certificate made with rcgen
//!   and kept in one Kubernetes Secret, so every webhook replica serves the same chain. Replicas
//!   create and renew it with optimistic concurrency and converge on whatever the first writer
//!   stored. The serving certificate is renewed at two thirds of its life and hot-swapped into
//!   rustls through [`CertResolver`]; the CA bundle is written into this install's webhook
//!   configurations and the GarageCluster CRD's conversion stanza ([`inject`]) and put back when
//!   someone changes it. A CA that may still have signed a certificate in use stays in the
//!   bundle, also across a deleted Secret (read back from the installed caBundles); how
//!   injection goes is recorded in [`InjectionHealth`].
//! - **cert-manager** ([`Mounted`]): the keypair cert-manager keeps in a mounted Secret,
//!   reloaded when the files change; cert-manager's cainjector owns the caBundle.
//!
//! The decisions (what to generate, when to renew, whether a bundle matches) are pure functions
//! in [`generate`], [`renewal`] and [`bundle`]; the rest reads and writes the API server.
//!
//! Only ring is used as the rustls crypto provider; [`install_default_provider`] installs it.

mod config;
mod error;
mod health;
mod mounted;
mod resolver;
mod self_managed;

pub mod bundle;
pub mod generate;
pub mod inject;
pub mod inspect;
pub mod renewal;
pub mod secret;

use std::sync::Arc;

pub use config::{
    DEFAULT_INSTALL_LABEL_KEY, InstallLabel, Lifetimes, MountedConfig, SelfManagedConfig,
};
pub use error::Error;
pub use health::InjectionHealth;
pub use mounted::{Mounted, Poll};
pub use resolver::{
    CertResolver, certified_key, install_default_provider, provider, server_config,
};
pub use self_managed::{FIELD_MANAGER, SelfManaged};

/// Where the serving keypair comes from.
#[derive(Clone, Debug)]
pub enum Mode {
    /// A CA and serving certificate this process makes and keeps in a Secret.
    SelfManaged(SelfManagedConfig),
    /// A keypair cert-manager mounts into the pod.
    CertManager(MountedConfig),
}

/// Keeps `resolver` serving a current keypair, forever. Self-managed mode needs a client;
/// cert-manager mode ignores it.
pub async fn run(
    mode: Mode,
    client: Option<kube::Client>,
    resolver: Arc<CertResolver>,
) -> Result<(), Error> {
    match mode {
        Mode::SelfManaged(config) => {
            let client = client.ok_or_else(|| {
                Error::Config("self-managed certificates need a Kubernetes client".to_owned())
            })?;
            SelfManaged::new(client, config, resolver)?.run().await;
        }
        Mode::CertManager(config) => Mounted::new(config, resolver).run().await,
    }
    Ok(())
}
