//! Old/current runtime pod records and the state diff that produces events
//! (upstream `podRecords`, `computeEvents`, `generateEvents` in `generic.go`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kubelet_container::{Container, ContainerId, ContainerState, Pod};

use crate::event::{PodLifecycleEvent, PodLifecycleEventType};

/// Container state as the PLEG compares it (upstream `plegContainerState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlegContainerState {
    /// Running.
    Running,
    /// Exited.
    Exited,
    /// Created or unknown (the kubelet does not use "created" yet).
    Unknown,
    /// Not present in the listing.
    NonExistent,
}

fn convert_state(state: ContainerState) -> PlegContainerState {
    match state {
        ContainerState::Running => PlegContainerState::Running,
        ContainerState::Exited => PlegContainerState::Exited,
        ContainerState::Created | ContainerState::Unknown => PlegContainerState::Unknown,
    }
}

/// State of container/sandbox `cid` in `pod` (upstream `getContainerState`).
pub fn container_state(pod: Option<&Pod>, cid: &ContainerId) -> PlegContainerState {
    let Some(pod) = pod else {
        return PlegContainerState::NonExistent;
    };
    pod.find_container_by_id(cid)
        .or_else(|| pod.find_sandbox_by_id(cid))
        .map_or(PlegContainerState::NonExistent, |c| convert_state(c.state))
}

/// Events for one container moving from `old` to `new` (upstream `generateEvents`).
pub fn generate_events(
    pod_id: &str,
    cid: &str,
    old: PlegContainerState,
    new: PlegContainerState,
) -> Vec<PodLifecycleEvent> {
    use PlegContainerState as S;
    use PodLifecycleEventType as E;
    let ev = |t| PodLifecycleEvent::new(pod_id, t, cid);
    if old == new {
        return Vec::new();
    }
    match (new, old) {
        (S::Running, _) => vec![ev(E::ContainerStarted)],
        (S::Exited, _) => vec![ev(E::ContainerDied)],
        (S::Unknown, _) => vec![ev(E::ContainerChanged)],
        // Already reported dead before.
        (S::NonExistent, S::Exited) => vec![ev(E::ContainerRemoved)],
        (S::NonExistent, _) => vec![ev(E::ContainerDied), ev(E::ContainerRemoved)],
    }
}

/// Containers and sandboxes of both pods, deduplicated by ID (upstream `getContainersFromPods`).
fn containers_of(pods: [Option<&Pod>; 2]) -> Vec<&Container> {
    let mut seen = HashSet::new();
    pods.into_iter()
        .flatten()
        .flat_map(|p| p.containers.iter().chain(p.sandboxes.iter()))
        .filter(|c| seen.insert(c.id.id.clone()))
        .collect()
}

/// Events between two listings of the same pod (upstream `computeEvents` per container).
pub fn compute_pod_events(old: Option<&Pod>, new: Option<&Pod>) -> Vec<PodLifecycleEvent> {
    let pod_id = old.or(new).map(|p| p.id.as_str()).unwrap_or_default();
    containers_of([old, new])
        .into_iter()
        .flat_map(|c| {
            generate_events(
                pod_id,
                &c.id.id,
                container_state(old, &c.id),
                container_state(new, &c.id),
            )
        })
        .collect()
}

#[derive(Debug, Default)]
struct Record {
    old: Option<Arc<Pod>>,
    current: Option<Arc<Pod>>,
}

/// Last acknowledged and current listing per pod UID (upstream `podRecords`).
#[derive(Debug, Default)]
pub struct PodRecords(HashMap<String, Record>);

impl PodRecords {
    /// Replaces every `current` with the new listing (upstream `setCurrent`).
    pub fn set_current(&mut self, pods: &[Arc<Pod>]) {
        self.0.values_mut().for_each(|r| r.current = None);
        for pod in pods {
            self.0.entry(pod.id.clone()).or_default().current = Some(pod.clone());
        }
    }

    /// UIDs with a record.
    pub fn uids(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }

    /// Old listing of the pod.
    pub fn old(&self, uid: &str) -> Option<&Pod> {
        self.0.get(uid)?.old.as_deref()
    }

    /// Current listing of the pod.
    pub fn current(&self, uid: &str) -> Option<&Pod> {
        self.0.get(uid)?.current.as_deref()
    }

    /// Acknowledges the current listing: it becomes `old`, or the record goes
    /// away when the pod vanished (upstream `update`).
    pub fn update(&mut self, uid: &str) {
        let Some(record) = self.0.get_mut(uid) else {
            return;
        };
        match record.current.take() {
            Some(current) => record.old = Some(current),
            None => {
                self.0.remove(uid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PlegContainerState as S;
    use PodLifecycleEventType as E;

    fn container(id: &str, state: ContainerState) -> Container {
        Container {
            id: ContainerId::new("fake", id),
            state,
            ..Container::default()
        }
    }

    fn pod(containers: Vec<Container>) -> Pod {
        Pod {
            id: "u".into(),
            containers,
            ..Pod::default()
        }
    }

    fn types(events: &[PodLifecycleEvent]) -> Vec<E> {
        events.iter().map(|e| e.type_).collect()
    }

    #[test]
    fn transition_table() {
        let cases = [
            (S::NonExistent, S::Running, vec![E::ContainerStarted]),
            (S::Running, S::Exited, vec![E::ContainerDied]),
            (S::Running, S::Unknown, vec![E::ContainerChanged]),
            (S::Exited, S::NonExistent, vec![E::ContainerRemoved]),
            (
                S::Running,
                S::NonExistent,
                vec![E::ContainerDied, E::ContainerRemoved],
            ),
            (
                S::Unknown,
                S::NonExistent,
                vec![E::ContainerDied, E::ContainerRemoved],
            ),
            (S::Running, S::Running, vec![]),
        ];
        for (old, new, want) in cases {
            assert_eq!(
                types(&generate_events("u", "c", old, new)),
                want,
                "{old:?} -> {new:?}"
            );
        }
    }

    #[test]
    fn compute_covers_containers_and_sandboxes_of_both_listings() {
        let mut old = pod(vec![
            container("c1", ContainerState::Running),
            container("c2", ContainerState::Exited),
        ]);
        old.sandboxes.push(container("s1", ContainerState::Running));
        let new = pod(vec![
            container("c1", ContainerState::Exited),
            container("c3", ContainerState::Created),
        ]);
        let events = compute_pod_events(Some(&old), Some(&new));
        let got: Vec<(E, &str)> = events.iter().map(|e| (e.type_, e.data.as_str())).collect();
        assert_eq!(
            got,
            [
                (E::ContainerDied, "c1"),
                (E::ContainerRemoved, "c2"),
                (E::ContainerDied, "s1"),
                (E::ContainerRemoved, "s1"),
                (E::ContainerChanged, "c3"),
            ]
        );
        assert!(events.iter().all(|e| e.id == "u"));
    }

    #[test]
    fn records_update_and_forget() {
        let mut records = PodRecords::default();
        records.set_current(&[Arc::new(pod(vec![]))]);
        assert!(records.old("u").is_none() && records.current("u").is_some());
        records.update("u");
        assert!(records.old("u").is_some() && records.current("u").is_none());
        records.set_current(&[]);
        records.update("u");
        assert!(records.uids().is_empty());
    }
}
