//! Kubernetes Events for what a user should see in `kubectl describe`: layout applies,
//! teardown steps, refusals. An Event that cannot be written is logged, never fatal.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

pub use decide::note::Note;

/// Publishes Events as the reconciler.
#[derive(Clone)]
pub struct Events {
    recorder: Recorder,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events").finish_non_exhaustive()
    }
}

impl Events {
    /// A publisher reporting as `garage-reconciler`.
    pub fn new(client: kube::Client) -> Self {
        Self {
            recorder: Recorder::new(
                client,
                Reporter {
                    controller: "garage-reconciler".into(),
                    instance: std::env::var("POD_NAME").ok(),
                },
            ),
        }
    }

    /// Publishes `notes` about `object`.
    pub async fn publish<K>(&self, object: &K, notes: &[Note])
    where
        K: Resource<DynamicType = ()>,
    {
        if notes.is_empty() {
            return;
        }
        let reference: ObjectReference = object.object_ref(&());
        for note in notes {
            let event = Event {
                type_: if note.warning {
                    EventType::Warning
                } else {
                    EventType::Normal
                },
                reason: note.reason.into(),
                note: Some(cap(&note.message)),
                action: note.action.into(),
                secondary: None,
            };
            if let Err(e) = self.recorder.publish(&event, &reference).await {
                tracing::debug!(error = %e, reason = note.reason, "event not recorded");
            }
        }
    }
}

/// Event notes are limited to 1 KiB by the API server.
fn cap(message: &str) -> String {
    let mut end = message.len().min(1000);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message[..end].to_owned()
}
