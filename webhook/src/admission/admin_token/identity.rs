//! AT-U1: the identity of the static material cannot change: the cluster reference (as
//! written, so spelling out the own namespace counts as a change), whether a template exists,
//! and the template's name, data keys and endpoint switch (as written, not their defaults).
//! Labels and annotations of the template may change.

use shared_types::garage_admin_token::GarageAdminToken;

use crate::admission::Verdict;

/// AT-U1 on an UPDATE from `old` to `new`.
pub fn check(old: &GarageAdminToken, new: &GarageAdminToken, verdict: &mut Verdict) {
    let identity = |t: &GarageAdminToken| {
        let template = t.spec.secret_template.as_ref().map(|s| {
            (
                s.name.clone(),
                s.token_key.clone(),
                s.endpoint_key.clone(),
                s.include_endpoint,
            )
        });
        (t.spec.cluster_ref.clone(), template)
    };
    if identity(old) != identity(new) {
        verdict.deny(
            "AT-U1",
            "spec",
            "clusterRef and secretTemplate name/tokenKey/endpointKey are immutable; create a new GarageAdminToken instead of orphaning static bootstrap material",
        );
    }
}
