//! Rendering the Helm chart for tests: the value combinations the chart supports, `helm lint`
//! and `helm template` through the pinned helm binary, and the rendered objects as JSON.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};
use localcluster::tools::Tool;
use serde_json::Value;

/// Release name used by the tests (the chart's own name, as in the install bundle).
pub const RELEASE: &str = "garage-operator";
/// Release namespace used by the tests.
pub const NAMESPACE: &str = "garage-operator";
/// Kubernetes version the chart is rendered for without a cluster.
pub const KUBE_VERSION: &str = "1.36.2";
/// Namespaces of the namespace-scoped combination.
pub const WATCHED: [&str; 2] = ["team-a", "team-b"];

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The chart directory.
pub fn chart() -> PathBuf {
    repo().join("charts/garage-operator")
}

/// One value combination: a name and the helm arguments that select it.
#[derive(Debug, Clone)]
pub struct Combo {
    /// Short name for messages.
    pub name: &'static str,
    /// `--set` / `-f` arguments.
    pub args: Vec<String>,
}

/// Every combination the chart is tested with.
pub fn combos() -> Vec<Combo> {
    let set = |pairs: &[&str]| -> Vec<String> {
        pairs
            .iter()
            .flat_map(|p| ["--set".to_owned(), (*p).to_owned()])
            .collect()
    };
    vec![
        Combo {
            name: "self-managed",
            args: Vec::new(),
        },
        Combo {
            name: "cert-manager",
            args: set(&["certificates.mode=cert-manager"]),
        },
        Combo {
            name: "namespace-scoped",
            args: set(&[&format!("watchNamespaces={{{}}}", WATCHED.join(","))]),
        },
        Combo {
            name: "webhooks-disabled",
            args: set(&["webhooks.enabled=false"]),
        },
        Combo {
            name: "monitoring",
            args: set(&[
                "serviceMonitor.enabled=true",
                "networkPolicy.enabled=true",
                "networkPolicy.apiServerSourceCIDRs={10.0.0.0/24}",
                "garageNetworkPolicy.enabled=true",
                "defaultGarageImage=registry.example/garage:v2.5.0",
            ]),
        },
        Combo {
            name: "go-chart-values",
            args: vec![
                "-f".into(),
                repo()
                    .join("tests/fixtures/upstream-helm-values.yaml")
                    .to_string_lossy()
                    .into_owned(),
            ],
        },
    ]
}

/// The pinned helm binary, or an error saying how to build it.
pub fn helm() -> Result<PathBuf> {
    Ok(Tool::Helm.require()?)
}

/// Runs helm with `args`; the error carries helm's stderr.
pub fn run_helm(args: &[String]) -> Result<String> {
    let helm = helm()?;
    let output = Command::new(&helm)
        .args(args)
        .output()
        .with_context(|| format!("running {}", helm.display()))?;
    if !output.status.success() {
        bail!(
            "helm {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    String::from_utf8(output.stdout).context("helm printed non-UTF-8 output")
}

/// `helm lint` of the chart with extra arguments.
pub fn lint(extra: &[String]) -> Result<String> {
    let mut args = vec![
        "lint".to_owned(),
        chart().to_string_lossy().into_owned(),
        "--strict".into(),
        "--kube-version".into(),
        KUBE_VERSION.into(),
    ];
    args.extend_from_slice(extra);
    run_helm(&args)
}

/// `helm template` of the chart as [`RELEASE`] in `namespace`, as text.
pub fn template_text(namespace: &str, extra: &[String]) -> Result<String> {
    let mut args = vec![
        "template".to_owned(),
        RELEASE.into(),
        chart().to_string_lossy().into_owned(),
        "--namespace".into(),
        namespace.into(),
        "--kube-version".into(),
        KUBE_VERSION.into(),
    ];
    args.extend_from_slice(extra);
    run_helm(&args)
}

/// `helm template` in [`NAMESPACE`], parsed: every non-empty document.
pub fn template(extra: &[String]) -> Result<Vec<Value>> {
    parse_documents(&template_text(NAMESPACE, extra)?)
}

/// Every non-empty YAML document of `text` as JSON.
pub fn parse_documents(text: &str) -> Result<Vec<Value>> {
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(text).context("parsing rendered YAML")?;
    Ok(documents.into_iter().filter(|d| !d.is_null()).collect())
}

/// The objects of one kind.
pub fn of_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

/// The Deployment of `component` (`webhook` or `reconciler`).
pub fn deployment<'a>(objects: &'a [Value], component: &str) -> Option<&'a Value> {
    of_kind(objects, "Deployment")
        .into_iter()
        .find(|d| d["metadata"]["labels"]["app.kubernetes.io/component"] == component)
}

/// The value of the environment variable `name` of `container`.
pub fn env<'a>(container: &'a Value, name: &str) -> Option<&'a Value> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .map(|e| &e["value"])
}

/// The one object of `kind` named `name`.
pub fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
}

/// The chart's CRDs and webhook configurations (default values) pointed at a webhook served
/// at `base` (`https://host:port`) instead of the in-cluster Service: for tests that run the
/// webhook in their own process, so that they register exactly what the chart registers.
/// The objects keep the chart's labels, so a self-managed webhook with install label
/// `app.kubernetes.io/instance=`[`RELEASE`] keeps their caBundle.
pub fn registrations_by_url(base: &str) -> Result<Vec<Value>> {
    let mut objects = Vec::new();
    for mut object in template(&[])? {
        match object["kind"].as_str() {
            Some("CustomResourceDefinition") => {
                if let Some(client) = object
                    .pointer_mut("/spec/conversion/webhook/clientConfig")
                    .and_then(Value::as_object_mut)
                {
                    client.remove("service");
                    client.insert("url".into(), format!("{base}/convert").into());
                }
            }
            Some("ValidatingWebhookConfiguration") | Some("MutatingWebhookConfiguration") => {
                for hook in object["webhooks"].as_array_mut().into_iter().flatten() {
                    let path = hook["clientConfig"]["service"]["path"]
                        .as_str()
                        .context("a webhook without a service path")?
                        .to_owned();
                    hook["clientConfig"] = serde_json::json!({ "url": format!("{base}{path}") });
                }
            }
            _ => continue,
        }
        objects.push(object);
    }
    Ok(objects)
}

/// The rules of every Role and ClusterRole bound to the ServiceAccount `account`, each with
/// the namespace its binding grants it in (`None` for a ClusterRoleBinding: everywhere).
/// Panics when a binding names a role that is not rendered.
pub fn bound_rules(objects: &[Value], account: &str) -> Vec<(Option<String>, Value)> {
    let mut rules = Vec::new();
    for binding in of_kind(objects, "RoleBinding")
        .into_iter()
        .chain(of_kind(objects, "ClusterRoleBinding"))
    {
        let bound = binding["subjects"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| s["kind"] == "ServiceAccount" && s["name"] == account);
        if !bound {
            continue;
        }
        let role_kind = binding["roleRef"]["kind"].as_str().unwrap_or_default();
        let role_name = &binding["roleRef"]["name"];
        let namespace = binding["metadata"]["namespace"].as_str().map(str::to_owned);
        let role = objects.iter().find(|o| {
            o["kind"] == role_kind
                && o["metadata"]["name"] == *role_name
                && (role_kind == "ClusterRole"
                    || o["metadata"]["namespace"].as_str() == namespace.as_deref())
        });
        let Some(role) = role else {
            panic!("{role_kind} {role_name} is bound to {account} but not rendered");
        };
        for rule in role["rules"].as_array().into_iter().flatten() {
            rules.push((namespace.clone(), rule.clone()));
        }
    }
    rules
}
