//! The Go operator installed as its own manifests install it, minus the Deployment: its CRDs
//! with the conversion webhook, its admission webhooks, and a ServiceAccount of its own. The
//! webhooks point at the manager run on this machine (`https://127.0.0.1:9443`), the only
//! address the API server can reach it at.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use localcluster::wait_until;
use serde_json::{Value, json};

/// The namespace and ServiceAccount the Go operator's manifests run it as.
pub const OPERATOR_NS: &str = "garage-operator-system";
/// Its ServiceAccount.
pub const SERVICE_ACCOUNT: &str = "garage-operator-controller-manager";
/// Where its webhook server listens (controller-runtime's default port).
const WEBHOOK_BASE: &str = "https://127.0.0.1:9443";

/// What the manager needs to run as installed: its certificate directory and kubeconfig.
pub struct Installed {
    /// `tls.crt` and `tls.key` for its webhook server.
    pub cert_dir: PathBuf,
    /// A kubeconfig with its ServiceAccount's token.
    pub kubeconfig: PathBuf,
}

/// Installs the Go operator's CRDs and webhooks from its `source` tree, and its identity.
pub async fn install(
    client: &Client,
    source: &Path,
    server: &str,
    ca_pem: &str,
    dir: &Path,
) -> Result<Installed> {
    certs::install_default_provider();
    let now = SystemTime::now();
    let ca = certs::generate::new_authority(now, Duration::from_secs(86_400))?;
    let leaf = certs::generate::issue_serving(
        &ca,
        &["127.0.0.1".to_owned()],
        now,
        Duration::from_secs(86_400),
    )?;
    let cert_dir = dir.join("go-webhook-certs");
    std::fs::create_dir_all(&cert_dir)?;
    std::fs::write(cert_dir.join("tls.crt"), &leaf.cert_pem)?;
    std::fs::write(cert_dir.join("tls.key"), &leaf.key_pem)?;
    let ca_bundle = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(&ca.cert_pem)
    };
    install_crds(client, &source.join("config/crd/bases"), &ca_bundle).await?;
    install_webhooks(
        client,
        &source.join("config/webhook/manifests.yaml"),
        &ca_bundle,
    )
    .await?;
    let token = identity(client).await?;
    let kubeconfig = dir.join("go-manager.kubeconfig");
    std::fs::write(&kubeconfig, kubeconfig_text(server, ca_pem, &token))?;
    Ok(Installed {
        cert_dir,
        kubeconfig,
    })
}

fn client_config(path: &str, ca_bundle: &str) -> Value {
    json!({"url": format!("{WEBHOOK_BASE}{path}"), "caBundle": ca_bundle})
}

async fn install_crds(client: &Client, dir: &Path, ca_bundle: &str) -> Result<()> {
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let mut crd: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path)?)
            .with_context(|| format!("parsing {}", path.display()))?;
        if crd["spec"]["conversion"]["strategy"] == "Webhook" {
            crd["spec"]["conversion"]["webhook"]["clientConfig"] =
                client_config("/convert", ca_bundle);
        }
        let crd: CustomResourceDefinition = serde_json::from_value(crd)?;
        names.push(crd.metadata.name.clone().unwrap_or_default());
        api.create(&PostParams::default(), &crd).await?;
    }
    if names.is_empty() {
        bail!("no CRD in {}", dir.display());
    }
    wait_until("the CRDs are established", Duration::from_secs(60), || {
        let (api, names) = (api.clone(), names.clone());
        async move {
            for name in &names {
                let established = api
                    .get(name)
                    .await?
                    .status
                    .and_then(|s| s.conditions)
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c.type_ == "Established" && c.status == "True")
                    });
                if !established {
                    return Ok(false);
                }
            }
            Ok(true)
        }
    })
    .await
}

/// The webhook configurations, each webhook's Service reference replaced by the local URL.
async fn install_webhooks(client: &Client, path: &Path, ca_bundle: &str) -> Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    for doc in text.split("\n---").filter(|d| d.contains("kind:")) {
        let mut config: Value = serde_saphyr::from_str(doc)?;
        for webhook in config["webhooks"].as_array_mut().into_iter().flatten() {
            let path = webhook["clientConfig"]["service"]["path"]
                .as_str()
                .unwrap_or("/")
                .to_owned();
            webhook["clientConfig"] = client_config(&path, ca_bundle);
        }
        let kind = config["kind"]
            .as_str()
            .context("webhook configuration kind")?
            .to_owned();
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
            "admissionregistration.k8s.io",
            "v1",
            &kind,
        ));
        Api::<DynamicObject>::all_with(client.clone(), &resource)
            .create(&PostParams::default(), &serde_json::from_value(config)?)
            .await?;
    }
    Ok(())
}

/// The ServiceAccount the manager runs as, bound to cluster-admin (its own ClusterRole is
/// narrower; what it may do is not what this recording looks at), and a token of it.
async fn identity(client: &Client) -> Result<String> {
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": OPERATOR_NS}}))?,
        )
        .await?;
    let accounts = Api::<ServiceAccount>::namespaced(client.clone(), OPERATOR_NS);
    accounts
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": SERVICE_ACCOUNT}}))?,
        )
        .await?;
    let binding = json!({
        "metadata": {"name": "go-operator-manager"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": OPERATOR_NS}],
    });
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(&PostParams::default(), &serde_json::from_value(binding)?)
        .await?;
    let request: TokenRequest =
        serde_json::from_value(json!({"spec": {"expirationSeconds": 86_400}}))?;
    let answer = accounts
        .create_token_request(SERVICE_ACCOUNT, &PostParams::default(), &request)
        .await?;
    answer
        .status
        .and_then(|s| s.token)
        .context("no token in the TokenRequest's answer")
}

fn kubeconfig_text(server: &str, ca_pem: &str, token: &str) -> String {
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: go-operator\n  user:\n    token: {token}\ncontexts:\n- name: local\n  context:\n    cluster: local\n    user: go-operator\ncurrent-context: local\n"
    )
}
