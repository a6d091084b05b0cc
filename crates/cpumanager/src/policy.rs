//! The policy interface (upstream `policy.go`) and the `none` policy (`policy_none.go`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use kubelet_apimachinery::CpuSet;

use crate::policy_static::{StaticPolicy, StaticPolicyError};
use crate::state::State;
use kubelet_topologymanager::{Store, TopologyHint};

/// `PolicyNone`.
pub const POLICY_NONE: &str = "none";

/// An error of a policy.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The `none` policy was given options (Go's `%v` of the map).
    #[error("None policy: received unsupported options={0}")]
    NoneOptions(String),
    /// The static policy's errors.
    #[error(transparent)]
    Static(#[from] StaticPolicyError),
}

/// Upstream `Policy`. Topology hints: `None` is upstream's nil map (no opinion),
/// `Some(hints)` the hints for the `cpu` resource.
pub trait Policy: Send {
    /// `Name`.
    fn name(&self) -> &'static str;
    /// `Start`.
    fn start(&mut self, s: &mut dyn State) -> Result<(), PolicyError>;
    /// `Allocate`.
    fn allocate(
        &mut self,
        s: &mut dyn State,
        pod: &Pod,
        container: &Container,
    ) -> Result<(), PolicyError>;
    /// `RemoveContainer`.
    fn remove_container(&mut self, s: &mut dyn State, pod_uid: &str, container_name: &str);
    /// `GetTopologyHints`.
    fn get_topology_hints(
        &self,
        s: &dyn State,
        pod: &Pod,
        container: &Container,
    ) -> Option<Vec<TopologyHint>>;
    /// `GetPodTopologyHints`.
    fn get_pod_topology_hints(&self, s: &dyn State, pod: &Pod) -> Option<Vec<TopologyHint>>;
    /// `GetAllocatableCPUs`.
    fn get_allocatable_cpus(&self, s: &dyn State) -> CpuSet;
}

/// The `none` policy: no exclusive CPUs.
#[derive(Clone, Copy, Debug, Default)]
pub struct NonePolicy;

impl NonePolicy {
    /// `NewNonePolicy`: refuses any option.
    pub fn new(cpu_policy_options: &BTreeMap<String, String>) -> Result<NonePolicy, PolicyError> {
        if !cpu_policy_options.is_empty() {
            let items: Vec<String> = cpu_policy_options
                .iter()
                .map(|(k, v)| format!("{k}:{v}"))
                .collect();
            return Err(PolicyError::NoneOptions(format!(
                "map[{}]",
                items.join(" ")
            )));
        }
        Ok(NonePolicy)
    }
}

impl Policy for NonePolicy {
    fn name(&self) -> &'static str {
        POLICY_NONE
    }

    fn start(&mut self, _s: &mut dyn State) -> Result<(), PolicyError> {
        tracing::info!("Start");
        Ok(())
    }

    fn allocate(
        &mut self,
        _s: &mut dyn State,
        _pod: &Pod,
        _container: &Container,
    ) -> Result<(), PolicyError> {
        Ok(())
    }

    fn remove_container(&mut self, _s: &mut dyn State, _pod_uid: &str, _container_name: &str) {}

    fn get_topology_hints(
        &self,
        _s: &dyn State,
        _pod: &Pod,
        _container: &Container,
    ) -> Option<Vec<TopologyHint>> {
        None
    }

    fn get_pod_topology_hints(&self, _s: &dyn State, _pod: &Pod) -> Option<Vec<TopologyHint>> {
        None
    }

    fn get_allocatable_cpus(&self, _s: &dyn State) -> CpuSet {
        CpuSet::new()
    }
}

impl<A: Store> Policy for StaticPolicy<A> {
    fn name(&self) -> &'static str {
        StaticPolicy::name(self)
    }

    fn start(&mut self, s: &mut dyn State) -> Result<(), PolicyError> {
        Ok(StaticPolicy::start(self, s)?)
    }

    fn allocate(
        &mut self,
        s: &mut dyn State,
        pod: &Pod,
        container: &Container,
    ) -> Result<(), PolicyError> {
        Ok(StaticPolicy::allocate(self, s, pod, container)?)
    }

    fn remove_container(&mut self, s: &mut dyn State, pod_uid: &str, container_name: &str) {
        StaticPolicy::remove_container(self, s, pod_uid, container_name);
    }

    fn get_topology_hints(
        &self,
        s: &dyn State,
        pod: &Pod,
        container: &Container,
    ) -> Option<Vec<TopologyHint>> {
        StaticPolicy::get_topology_hints(self, s, pod, container)
    }

    fn get_pod_topology_hints(&self, s: &dyn State, pod: &Pod) -> Option<Vec<TopologyHint>> {
        StaticPolicy::get_pod_topology_hints(self, s, pod)
    }

    fn get_allocatable_cpus(&self, s: &dyn State) -> CpuSet {
        StaticPolicy::get_allocatable_cpus(self, s)
    }
}

#[cfg(test)]
mod tests {
    //! Upstream `policy_none_test.go`.
    #![allow(clippy::unwrap_used)]

    use k8s_openapi::api::core::v1::PodSpec;

    use super::*;
    use crate::state::StateMemory;

    fn pod() -> Pod {
        let mut pod = Pod::default();
        pod.metadata.uid = Some("fakePod".into());
        pod.spec = Some(PodSpec {
            containers: vec![Container {
                name: "fakeContainer".into(),
                ..Container::default()
            }],
            ..PodSpec::default()
        });
        pod
    }

    fn state() -> StateMemory {
        let mut st = StateMemory::new();
        st.set_default_cpu_set((1..8).collect());
        st
    }

    #[test]
    fn test_none_policy() {
        let mut policy = NonePolicy::new(&BTreeMap::new()).unwrap();
        assert_eq!(policy.name(), "none");
        let mut st = state();
        let pod = pod();
        let container = pod.spec.as_ref().unwrap().containers[0].clone();
        policy.start(&mut st).unwrap();
        policy.allocate(&mut st, &pod, &container).unwrap();
        policy.remove_container(&mut st, "fakePod", "fakeContainer");
        assert_eq!(st, state());
        assert!(policy.get_allocatable_cpus(&st).is_empty());
        assert_eq!(policy.get_topology_hints(&st, &pod, &container), None);
        assert_eq!(policy.get_pod_topology_hints(&st, &pod), None);
    }

    #[test]
    fn test_none_policy_options() {
        let opts = BTreeMap::from([
            ("full-pcpus-only".to_owned(), "true".to_owned()),
            ("align-by-socket".to_owned(), "x".to_owned()),
        ]);
        assert_eq!(
            NonePolicy::new(&opts).unwrap_err().to_string(),
            "None policy: received unsupported options=map[align-by-socket:x full-pcpus-only:true]"
        );
    }
}
