//! Pod admission: the checks a pod must pass before the kubelet runs it (upstream
//! `pkg/kubelet/lifecycle`, `pkg/kubelet/sysctl`, and the admission half of
//! `pkg/kubelet/allocation` `canAdmitPod`).
//!
//! | Rust module           | Upstream Go file                                             |
//! |-----------------------|--------------------------------------------------------------|
//! | this file             | `lifecycle/interfaces.go` (`PodAdmitHandler`, attributes, result), `allocation_manager.go` `canAdmitPod` |
//! | [`features`]          | none: kubelet-rs refuses pod fields it does not implement yet (reason `UnsupportedPodFeature`) |
//! | [`sysctl`]            | `sysctl/allowlist.go`, `component-helpers/node/util/sysctl`   |
//! | [`safe_sysctls`]      | `sysctl/safe_sysctls.go`, `pkg/util/kernel/constants.go`      |
//! | [`predicate`]         | `lifecycle/predicate.go`, `scheduler/eventhandlers.go` `AdmissionCheck`, `noderesources.Fits` |
//! | [`preemption`]        | `preemption/preemption.go` (`CriticalPodAdmissionHandler`)    |
//! | [`resources`]         | `component-helpers/resource/helpers.go` `PodRequests`         |
//! | [`taints`]            | `component-helpers/scheduling/corev1/helpers.go` `FindMatchingUntoleratedTaint`, `core/v1/toleration.go` `ToleratesTaint` |
//!
//! The kubelet builds one [`PodAdmitHandlers`] at start ([`PodAdmitHandlers::new`])
//! and asks it about every pod it is given for the first time (`HandlePodAdditions`). A
//! rejected pod is never started: the caller records it `Failed` with the result's reason
//! and `"Pod was rejected: " + message` (upstream `rejectPod`, see [`rejection_message`]).

pub mod features;
pub mod predicate;
pub mod preemption;
pub mod resources;
pub mod safe_sysctls;
pub mod sysctl;
pub mod taints;

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

pub use features::{
    UNSUPPORTED_POD_FEATURE_REASON, UNSUPPORTED_POD_FEATURES, UnsupportedPodFeatures,
};
pub use predicate::{Allocatable, NodeGetter, NodeInfo, PredicateAdmitHandler};
pub use sysctl::{FORBIDDEN_REASON as SYSCTL_FORBIDDEN_REASON, SysctlAllowlist};

/// A configuration the admit handlers cannot be built from (the kubelet refuses to start).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionError {
    /// An `allowedUnsafeSysctls` entry that is not a valid pattern.
    #[error("sysctl {pattern:?} must have at most 253 characters and match regex {regex}")]
    InvalidSysctlPattern {
        /// The pattern.
        pattern: String,
        /// The regular expression it must match.
        regex: &'static str,
    },
    /// An `allowedUnsafeSysctls` entry outside the IPC and network namespaces.
    #[error("the sysctls {0:?} are not known to be namespaced")]
    SysctlNotNamespaced(String),
}

/// What a handler is asked about (upstream `PodAdmitAttributes`).
#[derive(Debug, Clone, Copy)]
pub struct PodAdmitAttributes<'a> {
    /// The pod to evaluate for admission.
    pub pod: &'a Pod,
    /// All admitted, active pods bound to the kubelet, without the pod being evaluated.
    pub other_pods: &'a [&'a Pod],
}

/// A handler's answer (upstream `PodAdmitResult`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodAdmitResult {
    /// The pod may run.
    pub admit: bool,
    /// One CamelCase word saying why it may not.
    pub reason: String,
    /// A message explaining why it may not.
    pub message: String,
    /// UIDs of the pods to preempt before the admitted pod runs (upstream's critical pod
    /// admission handler kills them itself; here the caller does, see [`preemption`]).
    pub preempt: Vec<String>,
}

impl PodAdmitResult {
    /// The pod is admitted.
    pub fn admit() -> Self {
        Self {
            admit: true,
            ..Self::default()
        }
    }

    /// The pod is rejected for `reason`.
    pub fn reject(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            admit: false,
            reason: reason.into(),
            message: message.into(),
            preempt: Vec::new(),
        }
    }
}

/// One admission check (upstream `PodAdmitHandler`).
pub trait PodAdmitHandler: Send + Sync {
    /// Evaluates whether the pod can be admitted.
    fn admit(&self, attrs: &PodAdmitAttributes<'_>) -> PodAdmitResult;
}

/// The handlers, run in order; the first rejection wins (upstream `PodAdmitHandlers` and
/// `canAdmitPod`).
#[derive(Default)]
pub struct PodAdmitHandlers {
    handlers: Vec<Box<dyn PodAdmitHandler>>,
}

impl std::fmt::Debug for PodAdmitHandlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodAdmitHandlers")
            .field("handlers", &self.handlers.len())
            .finish()
    }
}

/// What the kubelet's handlers are built from.
#[derive(Debug, Clone)]
pub struct AdmissionConfig<'a> {
    /// `allowedUnsafeSysctls`.
    pub allowed_unsafe_sysctls: &'a [String],
    /// The running kernel's release (`/proc/sys/kernel/osrelease`), for the safe sysctls
    /// that are only namespaced from some kernel on.
    pub kernel_version: &'a str,
    /// The node as the predicates see it: a fixed [`NodeInfo`] in standalone mode
    /// (upstream `initialNode`), the node informer's Node in API server mode.
    pub node: Arc<dyn NodeGetter>,
    /// The `TaintTolerationComparisonOperators` feature gate.
    pub taint_toleration_comparison_operators: bool,
}

impl PodAdmitHandlers {
    /// Adds a handler (upstream `AddPodAdmitHandler`).
    pub fn add(&mut self, handler: impl PodAdmitHandler + 'static) {
        self.handlers.push(Box::new(handler));
    }

    /// The kubelet's handlers, in upstream's order (`NewMainKubelet`, the same in both
    /// modes): the sysctl allowlist, then the general predicates; kubelet-rs puts its
    /// unsupported-feature check first, so a pod is never judged on parts kubelet-rs would
    /// not run.
    pub fn new(cfg: AdmissionConfig<'_>) -> Result<Self, AdmissionError> {
        let mut handlers = Self::default();
        handlers.add(UnsupportedPodFeatures);
        let mut patterns = safe_sysctls::safe_sysctl_allowlist(cfg.kernel_version);
        patterns.extend(cfg.allowed_unsafe_sysctls.iter().cloned());
        handlers.add(SysctlAllowlist::new(&patterns)?);
        handlers.add(PredicateAdmitHandler::with_node_getter(
            cfg.node,
            cfg.taint_toleration_comparison_operators,
        ));
        Ok(handlers)
    }

    /// Inserts a handler at `index` (0 runs first); the kubelet puts the eviction admit
    /// handler right after the unsupported-feature check, where upstream's `NewMainKubelet`
    /// puts it first.
    pub fn insert(&mut self, index: usize, handler: impl PodAdmitHandler + 'static) {
        let index = index.min(self.handlers.len());
        self.handlers.insert(index, Box::new(handler));
    }

    /// Runs every handler until one rejects (upstream `canAdmitPod`); an admitting result
    /// may name pods to preempt.
    pub fn can_admit_pod(&self, attrs: &PodAdmitAttributes<'_>) -> PodAdmitResult {
        let mut preempt = Vec::new();
        for h in &self.handlers {
            let r = h.admit(attrs);
            if !r.admit {
                return r;
            }
            preempt.extend(r.preempt);
        }
        PodAdmitResult {
            preempt,
            ..PodAdmitResult::admit()
        }
    }
}

/// Checks `allowedUnsafeSysctls` the way building the handlers does, for callers that must
/// refuse a configuration before anything starts (`--print-config`): upstream fails
/// `NewMainKubelet` with this error.
pub fn validate_allowed_unsafe_sysctls(patterns: &[String]) -> Result<(), AdmissionError> {
    SysctlAllowlist::new(patterns).map(|_| ())
}

/// The pod status message of a rejected pod (upstream `rejectPod`).
pub fn rejection_message(message: &str) -> String {
    format!("Pod was rejected: {message}")
}
