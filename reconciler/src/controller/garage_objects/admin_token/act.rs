//! Runs a GarageAdminToken [`Plan`]: its Secret steps in order, then the status and the
//! requeue of its outcome. Nothing here decides.

use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use shared_types::garage_admin_token::GarageAdminToken;
use shared_types::keys::finalizer as finalizers;

use crate::controller::garage_objects::{action, patch_status_if_changed};
use crate::controller::{Context, Error, finalizer, write};
use decide::garage_objects::admin_token::plan::{Plan, Step};

/// Runs `plan` for token `t`; `secrets` is the Secrets of its namespace.
pub async fn act(
    api: &Api<GarageAdminToken>,
    secrets: &Api<Secret>,
    ctx: &Context,
    t: &GarageAdminToken,
    plan: Plan,
) -> Result<Action, Error> {
    for step in plan.steps {
        match step {
            Step::CreateSecret(secret) => {
                ctx.metrics.wrote();
                secrets.create(&PostParams::default(), &secret).await?;
                tracing::info!(token = %t.name_any(), secret = %secret.name_any(), "admin token Secret created");
            }
            Step::Foreign { name } => {
                return Err(Error::Foreign {
                    kind: "Secret",
                    name,
                    owner: format!(
                        "GarageAdminToken {}/{}",
                        t.namespace().unwrap_or_default(),
                        t.name_any()
                    ),
                });
            }
            Step::DeleteSecret(name) => {
                write::delete_if_present(secrets, &ctx.metrics, &name, &Default::default()).await?;
            }
            Step::RemoveFinalizer => {
                finalizer::set(
                    api,
                    &ctx.metrics,
                    t,
                    finalizers::FINALIZER_ADMIN_TOKEN,
                    false,
                )
                .await?;
            }
        }
    }
    if let Some(status) = &plan.status {
        patch_status_if_changed(api, ctx, t, t.status.as_ref(), status).await?;
    }
    Ok(action(&plan.outcome, ctx.config.resync))
}
