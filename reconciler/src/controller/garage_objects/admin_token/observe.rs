//! What a GarageAdminToken pass reads before it decides: the token's Secret as it is, and a
//! new random token when that Secret does not exist (drawn here: the plan is pure, and the
//! status it publishes names the new token's digest).

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use shared_types::garage_admin_token::GarageAdminToken;
use shared_types::garage_cluster::v1beta2::GarageCluster;

use crate::controller::Error;
use crate::controller::garage_access::random_hex32;
use decide::garage_objects::admin_token::plan::Observed;
use decide::garage_objects::admin_token::secret_location;

/// The facts of a pass over a live token whose cluster is `cluster` (`None`: absent).
pub async fn observe(
    t: &GarageAdminToken,
    cluster: Option<GarageCluster>,
    secrets: &Api<Secret>,
) -> Result<Observed, Error> {
    let secret = self::secret(t, secrets).await?;
    let fresh = match secret {
        None => Some(random_hex32()?),
        Some(_) => None,
    };
    Ok(Observed {
        token: t.clone(),
        cluster,
        secret,
        fresh,
    })
}

/// The token's Secret, as it is.
pub async fn secret(t: &GarageAdminToken, secrets: &Api<Secret>) -> Result<Option<Secret>, Error> {
    Ok(secrets.get_opt(&secret_location(t).0).await?)
}
