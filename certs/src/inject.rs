//! Writing the CA bundle into this install's ValidatingWebhookConfigurations,
//! MutatingWebhookConfigurations and CRD conversion stanzas, and putting it back when someone
//! changes it. Only objects carrying the install label are touched.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use json_patch::Patch as JsonPatch;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::bundle::bundle_matches;
use crate::{Error, InstallLabel, inspect};

/// JSON Patch operations that set the caBundle of every webhook whose bundle differs from
/// `bundle_pem`, or `None` when all match. `webhooks` holds each webhook's name and current
/// caBundle in list order; a `test` on the name keeps a concurrent reordering from pointing
/// the write at another webhook.
pub fn webhooks_patch(webhooks: &[(&str, Option<&[u8]>)], bundle_pem: &str) -> Option<JsonPatch> {
    let encoded = STANDARD.encode(bundle_pem.as_bytes());
    let mut ops = Vec::new();
    for (index, (name, current)) in webhooks.iter().enumerate() {
        if bundle_matches(*current, bundle_pem.as_bytes()) {
            continue;
        }
        ops.push(json!({"op": "test", "path": format!("/webhooks/{index}/name"), "value": name}));
        ops.push(json!({
            "op": "add",
            "path": format!("/webhooks/{index}/clientConfig/caBundle"),
            "value": encoded,
        }));
    }
    if ops.is_empty() {
        return None;
    }
    serde_json::from_value(Value::Array(ops)).ok()
}

/// The JSON Patch that sets the conversion webhook's caBundle of `crd`, or `None` when the CRD
/// has no webhook conversion or already carries `bundle_pem`.
pub fn crd_patch(crd: &CustomResourceDefinition, bundle_pem: &str) -> Option<JsonPatch> {
    let conversion = crd.spec.conversion.as_ref()?;
    if conversion.strategy != "Webhook" {
        return None;
    }
    let client_config = conversion.webhook.as_ref()?.client_config.as_ref()?;
    let current = client_config.ca_bundle.as_ref().map(|b| b.0.as_slice());
    if bundle_matches(current, bundle_pem.as_bytes()) {
        return None;
    }
    let ops = json!([
        {"op": "test", "path": "/spec/conversion/strategy", "value": "Webhook"},
        {
            "op": "add",
            "path": "/spec/conversion/webhook/clientConfig/caBundle",
            "value": STANDARD.encode(bundle_pem.as_bytes()),
        },
    ]);
    serde_json::from_value(ops).ok()
}

/// The `(name, clientConfig)` pairs of a webhook configuration, validating or mutating.
trait Hooks {
    fn hooks(&self) -> Vec<(&str, &WebhookClientConfig)>;
}

impl Hooks for ValidatingWebhookConfiguration {
    fn hooks(&self) -> Vec<(&str, &WebhookClientConfig)> {
        let hooks = self.webhooks.iter().flatten();
        hooks.map(|w| (w.name.as_str(), &w.client_config)).collect()
    }
}

impl Hooks for MutatingWebhookConfiguration {
    fn hooks(&self) -> Vec<(&str, &WebhookClientConfig)> {
        let hooks = self.webhooks.iter().flatten();
        hooks.map(|w| (w.name.as_str(), &w.client_config)).collect()
    }
}

/// [`webhooks_patch`] of a webhook configuration.
fn configuration_patch(configuration: &dyn Hooks, bundle_pem: &str) -> Option<JsonPatch> {
    let hooks: Vec<_> = configuration
        .hooks()
        .into_iter()
        .map(|(name, config)| (name, current(config)))
        .collect();
    webhooks_patch(&hooks, bundle_pem)
}

fn current(config: &WebhookClientConfig) -> Option<&[u8]> {
    config.ca_bundle.as_ref().map(|b| b.0.as_slice())
}

fn crd_bundle(crd: &CustomResourceDefinition) -> Option<&[u8]> {
    let conversion = crd.spec.conversion.as_ref()?;
    let config = conversion.webhook.as_ref()?.client_config.as_ref()?;
    config.ca_bundle.as_ref().map(|b| b.0.as_slice())
}

/// Every certificate (DER, each once, in order of first appearance) of the caBundles
/// installed on `validating`, `mutating` and `crds`: what the API server trusts for this
/// install now. A caBundle that does not parse contributes nothing.
pub fn installed_certificates(
    validating: &[ValidatingWebhookConfiguration],
    mutating: &[MutatingWebhookConfiguration],
    crds: &[CustomResourceDefinition],
) -> Vec<Vec<u8>> {
    let hooks = validating
        .iter()
        .map(|c| c as &dyn Hooks)
        .chain(mutating.iter().map(|c| c as &dyn Hooks))
        .flat_map(|c| {
            c.hooks()
                .into_iter()
                .filter_map(|(_, config)| current(config))
        });
    let bundles = hooks.chain(crds.iter().filter_map(crd_bundle));
    let mut out: Vec<Vec<u8>> = Vec::new();
    for bundle in bundles {
        for der in inspect::certificates_der(bundle, "installed caBundle").unwrap_or_default() {
            if !out.contains(&der) {
                out.push(der);
            }
        }
    }
    out
}

/// Publishes the CA bundle of one install.
#[derive(Clone)]
pub struct Injector {
    client: Client,
    label: InstallLabel,
    manager: String,
}

impl Injector {
    /// An injector for objects labelled `label`; `manager` is the field manager of its writes.
    pub fn new(client: Client, label: InstallLabel, manager: &str) -> Self {
        Injector {
            client,
            label,
            manager: manager.to_owned(),
        }
    }

    /// The label selecting this install's objects.
    pub fn label(&self) -> &InstallLabel {
        &self.label
    }

    /// The certificates the API server trusts for this install now
    /// ([`installed_certificates`] of every labelled webhook configuration and CRD). Fails when
    /// any list fails: a caller replacing the CA must not guess what is trusted.
    pub async fn installed(&self) -> Result<Vec<Vec<u8>>, Error> {
        let list = ListParams::default().labels(&self.label.selector());
        let validating = self.list::<ValidatingWebhookConfiguration>(&list).await?;
        let mutating = self.list::<MutatingWebhookConfiguration>(&list).await?;
        let crds = self.list::<CustomResourceDefinition>(&list).await?;
        Ok(installed_certificates(&validating, &mutating, &crds))
    }

    async fn list<K>(&self, list: &ListParams) -> Result<Vec<K>, Error>
    where
        K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        let api: Api<K> = Api::all(self.client.clone());
        match api.list(list).await {
            Ok(objects) => Ok(objects.items),
            Err(e) => Err(Error::kube(format!("listing {}s", K::kind(&())), e)),
        }
    }

    fn params(&self) -> PatchParams {
        PatchParams {
            field_manager: Some(self.manager.clone()),
            ..PatchParams::default()
        }
    }

    /// Makes every labelled webhook configuration and CRD trust `bundle_pem`. Returns how many
    /// objects were patched (0 in the steady state: nothing is written when all match). Every
    /// object is tried even when one fails; the first failure is returned.
    pub async fn reconcile(&self, bundle_pem: &str) -> Result<usize, Error> {
        let list = ListParams::default().labels(&self.label.selector());

        let mut outcome = (0, None);
        let webhooks = |o: &dyn Hooks| configuration_patch(o, bundle_pem);
        self.reconcile_kind::<ValidatingWebhookConfiguration>(&list, |o| webhooks(o), &mut outcome)
            .await;
        self.reconcile_kind::<MutatingWebhookConfiguration>(&list, |o| webhooks(o), &mut outcome)
            .await;
        self.reconcile_kind::<CustomResourceDefinition>(
            &list,
            |o| crd_patch(o, bundle_pem),
            &mut outcome,
        )
        .await;
        let (patched, first_error) = outcome;
        match first_error {
            Some(e) => Err(e),
            None => Ok(patched),
        }
    }

    /// Patches every listed object of `kind` whose `patch_of` is not `None`, counting patches
    /// and keeping the first failure in `outcome`.
    async fn reconcile_kind<K>(
        &self,
        list: &ListParams,
        patch_of: impl Fn(&K) -> Option<JsonPatch>,
        outcome: &mut (usize, Option<Error>),
    ) where
        K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        let kind = K::kind(&());
        let api: Api<K> = Api::all(self.client.clone());
        let objects = match self.list::<K>(list).await {
            Ok(objects) => objects,
            Err(e) => {
                outcome.1.get_or_insert(e);
                return;
            }
        };
        for object in objects {
            let Some(patch) = patch_of(&object) else {
                continue;
            };
            let name = object.meta().name.clone().unwrap_or_default();
            let what = format!("{kind} {name}");
            match api
                .patch(&name, &self.params(), &Patch::<()>::Json(patch))
                .await
            {
                Ok(_) => {
                    tracing::info!(object = %what, "caBundle written");
                    outcome.0 += 1;
                }
                // A concurrent edit (the object changed between list and patch) is retried on
                // the next pass, which the change itself triggers.
                Err(kube::Error::Api(status)) if status.is_invalid() || status.is_conflict() => {
                    tracing::debug!(object = %what, "caBundle patch raced another write; retrying later");
                }
                Err(e) => {
                    outcome
                        .1
                        .get_or_insert(Error::kube(format!("patching the caBundle of {what}"), e));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::generate::new_authority;

    fn pem() -> String {
        new_authority(SystemTime::now(), Duration::from_secs(600))
            .unwrap()
            .cert_pem
    }

    #[test]
    fn only_differing_webhooks_are_patched() {
        let bundle = pem();
        let other = pem();
        let hooks = [
            ("a.example", Some(bundle.as_bytes())),
            ("b.example", Some(other.as_bytes())),
            ("c.example", None),
        ];
        let patch = webhooks_patch(&hooks, &bundle).unwrap();
        let ops = serde_json::to_value(&patch).unwrap();
        let paths: Vec<_> = ops
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["path"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            paths,
            [
                "/webhooks/1/name",
                "/webhooks/1/clientConfig/caBundle",
                "/webhooks/2/name",
                "/webhooks/2/clientConfig/caBundle"
            ]
        );
        assert_eq!(
            ops[1]["value"].as_str().unwrap(),
            STANDARD.encode(bundle.as_bytes())
        );
        let all_good = [("a.example", Some(bundle.as_bytes()))];
        assert!(webhooks_patch(&all_good, &bundle).is_none());
    }

    /// The GarageCluster CRD converting through a webhook reached with `client_config`.
    fn conversion_crd(client_config: Value) -> CustomResourceDefinition {
        serde_json::from_value(json!({
            "metadata": {"name": "garageclusters.garage.rajsingh.info"},
            "spec": {
                "group": "garage.rajsingh.info",
                "names": {"kind": "GarageCluster", "plural": "garageclusters"},
                "scope": "Namespaced",
                "versions": [],
                "conversion": {"strategy": "Webhook", "webhook": {
                    "clientConfig": client_config,
                    "conversionReviewVersions": ["v1"]
                }}
            }
        }))
        .unwrap()
    }

    #[test]
    fn crds_without_webhook_conversion_are_left_alone() {
        let bundle = pem();
        let mut crd = conversion_crd(json!({"url": "https://127.0.0.1:1/convert"}));
        assert!(crd_patch(&crd, &bundle).is_some());
        if let Some(c) = crd.spec.conversion.as_mut() {
            c.strategy = "None".into();
        }
        assert!(crd_patch(&crd, &bundle).is_none());
        crd.spec.conversion = None;
        assert!(crd_patch(&crd, &bundle).is_none());
    }

    #[test]
    fn installed_certificates_are_collected_once_from_every_object() {
        let a = pem();
        let b = pem();
        let der = |p: &str| {
            inspect::certificates_der(p.as_bytes(), "p")
                .unwrap()
                .remove(0)
        };
        let hook = |bundle: Option<&str>| {
            json!({"name": "h.example", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                "clientConfig": {"url": "https://x/", "caBundle": bundle.map(|b| STANDARD.encode(b))}})
        };
        let validating: ValidatingWebhookConfiguration = serde_json::from_value(json!({
            "metadata": {"name": "v"},
            "webhooks": [hook(Some(&a)), hook(None), hook(Some("garbage"))]
        }))
        .unwrap();
        let mutating: MutatingWebhookConfiguration = serde_json::from_value(json!({
            "metadata": {"name": "m"},
            "webhooks": [hook(Some(&format!("{a}{b}")))]
        }))
        .unwrap();
        let crd =
            conversion_crd(json!({"url": "https://x/convert", "caBundle": STANDARD.encode(&b)}));
        assert_eq!(
            installed_certificates(&[validating], &[mutating], &[crd]),
            [der(&a), der(&b)]
        );
        assert!(installed_certificates(&[], &[], &[]).is_empty());
    }
}
