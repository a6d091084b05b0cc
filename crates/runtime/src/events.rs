//! The runtime manager's events: `kubecontainer.FilterEventRecorder` (events about an
//! implicitly required container are dropped) and `recordContainerEvent`
//! (`kuberuntime_container.go`: the container's reference, the container ID in the message
//! replaced by the container name so repeats count as one event).

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ObjectReference, Pod as ApiPod};
use kubelet_container::events::{EventRecorder, EventType, container_ref, pod_ref};

/// `kubecontainer.ImplicitContainerPrefix`: the field path `container_ref` gives a container
/// the pod does not declare.
const IMPLICIT_CONTAINER_PREFIX: &str = "implicitly required container ";

/// `FilterEventRecorder(recorder)`.
#[derive(Clone, Debug)]
pub struct FilteredRecorder(Arc<dyn EventRecorder>);

impl FilteredRecorder {
    pub fn new(recorder: Arc<dyn EventRecorder>) -> Self {
        Self(recorder)
    }

    /// Records unless `object` is an implicitly required container.
    pub fn event(&self, object: &ObjectReference, t: EventType, reason: &str, message: &str) {
        let implicit = object
            .field_path
            .as_deref()
            .is_some_and(|p| p.starts_with(IMPLICIT_CONTAINER_PREFIX));
        if !implicit {
            self.0.event(object, t, reason, message);
        }
    }

    /// An event about the pod (`ref.GetReference(pod)`).
    pub fn pod_event(&self, pod: &ApiPod, t: EventType, reason: &str, message: &str) {
        self.event(&pod_ref(pod), t, reason, message);
    }

    /// `recordContainerEvent`.
    pub fn container_event(
        &self,
        pod: &ApiPod,
        container: &str,
        container_id: &str,
        t: EventType,
        reason: &str,
        message: &str,
    ) {
        let message = if container_id.is_empty() {
            message.to_string()
        } else {
            message.replace(container_id, container)
        };
        self.event(&container_ref(pod, container), t, reason, &message);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use kubelet_container::events::FakeRecorder;

    #[test]
    fn implicit_containers_are_filtered_and_ids_replaced_by_names() {
        let fake = Arc::new(FakeRecorder::new());
        let r = FilteredRecorder::new(fake.clone());
        let mut pod = ApiPod::default();
        pod.metadata.name = Some("web".into());
        pod.spec = Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                ..Container::default()
            }],
            ..PodSpec::default()
        });
        r.container_event(
            &pod,
            "app",
            "0123abcd",
            EventType::Warning,
            "Failed",
            "Error: container 0123abcd failed (0123abcd)",
        );
        // A container the pod does not declare (a restored or implicit one): dropped.
        r.container_event(&pod, "POD", "", EventType::Normal, "Killing", "x");
        r.pod_event(&pod, EventType::Normal, "SandboxChanged", "y");
        let got = fake.lines();
        assert_eq!(
            got,
            [
                "Warning Failed Error: container app failed (app)",
                "Normal SandboxChanged y"
            ]
        );
        assert_eq!(
            fake.events()[0].object.field_path.as_deref(),
            Some("spec.containers{app}")
        );
    }
}
