//! Is the shared runtime free for a kubelet run?
//!
//! The private containerd of `hack/runtime-up.sh` is shared by every test on the machine. A
//! kubelet started by the benchmark treats every pod it did not create as an orphan and kills
//! it (upstream `HandlePodCleanups`), and any other kubelet running would do the same to the
//! benchmark's pods. So before each run the benchmark waits until no other kubelet process runs
//! and no foreign sandbox is ready; kubelet runs are refused (recorded as failed) if that does
//! not happen in time.

use std::time::{Duration, Instant};

use kubelet_cri::RemoteRuntimeService;
use kubelet_cri::RuntimeService;

use crate::cri_ops::{is_bench_sandbox, is_ready};
use crate::env::other_kubelets;
use crate::error::{BenchError, BenchResult};

/// What else uses the machine's runtime right now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Busy {
    /// Other kubelet processes (pid, name).
    pub kubelets: Vec<(u32, String)>,
    /// Ready sandboxes not created by the benchmark (`namespace/name`).
    pub foreign_pods: Vec<String>,
}

impl Busy {
    /// Nothing else is there.
    pub fn is_quiet(&self) -> bool {
        self.kubelets.is_empty() && self.foreign_pods.is_empty()
    }

    /// One line for messages, with at most three examples of each.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.kubelets.is_empty() {
            let ex: Vec<String> = self
                .kubelets
                .iter()
                .take(3)
                .map(|(pid, name)| format!("{name} pid {pid}"))
                .collect();
            parts.push(format!(
                "{} other kubelet process(es) ({})",
                self.kubelets.len(),
                ex.join(", ")
            ));
        }
        if !self.foreign_pods.is_empty() {
            let ex: Vec<&str> = self
                .foreign_pods
                .iter()
                .take(3)
                .map(String::as_str)
                .collect();
            parts.push(format!(
                "{} pod(s) not created by the benchmark on the shared containerd (e.g. {})",
                self.foreign_pods.len(),
                ex.join(", ")
            ));
        }
        if parts.is_empty() {
            "quiet".to_owned()
        } else {
            parts.join("; ")
        }
    }
}

/// Looks at the processes and the runtime once.
pub async fn check(rt: &RemoteRuntimeService) -> BenchResult<Busy> {
    let sandboxes = rt
        .list_pod_sandbox(None)
        .await
        .map_err(BenchError::cri("ListPodSandbox"))?;
    let foreign_pods = sandboxes
        .iter()
        .filter(|s| is_ready(s) && !is_bench_sandbox(s))
        .map(|s| {
            s.metadata
                .as_ref()
                .map_or_else(|| s.id.clone(), |m| format!("{}/{}", m.namespace, m.name))
        })
        .collect();
    Ok(Busy {
        kubelets: other_kubelets(&[]),
        foreign_pods,
    })
}

/// Polls every second until [`check`] is quiet or `timeout` passes; returns the last state.
pub async fn wait_quiet(rt: &RemoteRuntimeService, timeout: Duration) -> BenchResult<Busy> {
    let t0 = Instant::now();
    let mut said = false;
    loop {
        let busy = check(rt).await?;
        if busy.is_quiet() || t0.elapsed() >= timeout {
            return Ok(busy);
        }
        if !said {
            eprintln!(
                "[bench] waiting up to {} s for the machine to be free: {}",
                timeout.as_secs(),
                busy.describe()
            );
            said = true;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The error recorded for a kubelet run refused because the runtime is shared right now.
pub fn refused_message(busy: &Busy, waited: Duration) -> String {
    format!(
        "not run: after waiting {} s there are still {}; a kubelet started now would kill pods it does not own (and another kubelet would kill the benchmark's). Retry when the machine is free, or pass --allow-foreign-pods",
        waited.as_secs(),
        busy.describe()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_and_descriptions() {
        let quiet = Busy::default();
        assert!(quiet.is_quiet());
        assert_eq!(quiet.describe(), "quiet");
        let busy = Busy {
            kubelets: vec![(42, "kubelet".into())],
            foreign_pods: vec![
                "default/a".into(),
                "default/b".into(),
                "x/c".into(),
                "x/d".into(),
            ],
        };
        assert!(!busy.is_quiet());
        assert_eq!(
            busy.describe(),
            "1 other kubelet process(es) (kubelet pid 42); 4 pod(s) not created by the benchmark on the shared containerd (e.g. default/a, default/b, x/c)"
        );
        let msg = refused_message(&busy, Duration::from_secs(120));
        assert!(
            msg.starts_with("not run: after waiting 120 s there are still 1 other kubelet"),
            "{msg}"
        );
        assert!(msg.ends_with("--allow-foreign-pods"), "{msg}");
    }
}
