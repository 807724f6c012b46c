//! Feeds arbitrary bytes to the conversion entry points the API server
//! reaches: a ConversionReview, and single objects converted to either
//! version. Any panic is a finding; errors are the expected answer to junk.

#![no_main]

use kube::core::conversion::ConversionReview;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(review) = serde_json::from_slice::<ConversionReview>(data) {
        let _ = webhook::convert::convert_review(review);
    }
    if let Ok(object) = serde_json::from_slice::<serde_json::Value>(data) {
        for version in [
            "garage.rajsingh.info/v1beta1",
            "garage.rajsingh.info/v1beta2",
        ] {
            let _ = webhook::convert::convert_object(object.clone(), version);
        }
    }
});
