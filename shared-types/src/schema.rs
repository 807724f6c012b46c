//! Schema adjustments attached to individual fields with
//! `#[schemars(transform = ...)]`.

use schemars::Schema;

/// The resource.Quantity grammar Kubernetes validates quantities against
/// (`10Gi`, `500M`, `1.5e3`), so a malformed capacity such as `100GB` is
/// rejected by the API server instead of by the operator later.
pub const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// Adds [`QUANTITY_PATTERN`] to a quantity field's schema.
pub fn quantity(schema: &mut Schema) {
    schema.insert("pattern".to_owned(), QUANTITY_PATTERN.into());
}
