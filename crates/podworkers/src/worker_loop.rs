//! The per-pod worker task (upstream `podWorkerLoop`, `startPodSync` and the
//! `complete*` transitions in `pod_workers.go`).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod as ApiPod;
use kubelet_container::PodStatus;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, warn};

use crate::known_pods::requeue_last_pod_update;
use crate::static_pods::allow_static_pod_start;
use crate::types::{PodStatusFn, PodSyncError, PodWorkerState, UpdatePodOptions};
use crate::workers::{Inner, State, TRANSIENT_ERROR_BACKOFF};

/// Work consumed from `pending_update` (upstream `podWork` + context).
struct Work {
    cancel: CancellationToken,
    work_type: PodWorkerState,
    options: UpdatePodOptions,
}

enum Start {
    /// Nothing to do (spurious wake-up).
    Nothing,
    /// Not allowed to start yet; wait for the next update.
    NotYet,
    /// Can never start (terminated before starting); the worker exits.
    Never,
    /// Run this work.
    Run(Work),
}

/// Runs one pod's updates in order until the pod is finished or forgotten.
pub(crate) async fn pod_worker_loop(inner: Arc<Inner>, uid: String, mut rx: mpsc::Receiver<()>) {
    let mut last_sync_time: Option<Instant> = None;
    loop {
        tokio::select! {
            biased;
            () = inner.shutdown.cancelled() => return,
            msg = rx.recv() => if msg.is_none() { break },
        }
        let work = match start_pod_sync(&inner, &uid) {
            Start::Nothing | Start::NotYet => continue,
            Start::Never => break,
            Start::Run(work) => work,
        };
        // Signals that arrived meanwhile are covered by `complete_work`'s re-check.
        while rx.try_recv().is_ok() {}
        let (result, is_terminal) = run_cancellable(&inner, &uid, &work, last_sync_time).await;
        last_sync_time = Some(Instant::now());
        let mut phase_transition = false;
        match (&result, work.work_type) {
            (Err(PodSyncError::Cancelled), _) => debug!(%uid, "sync exited on cancellation"),
            (Err(e), _) => {
                error!(%uid, error = %e, work = work.work_type.as_str(), "error syncing pod, will retry")
            }
            (Ok(()), PodWorkerState::Terminated) => {
                complete_terminated(&inner, &uid);
                observe_worker_duration("terminated", &work.options);
                break;
            }
            (Ok(()), PodWorkerState::Terminating) if work.options.running_pod.is_some() => {
                complete_terminating_runtime_pod(&inner, &uid);
                observe_worker_duration(work.options.update_type.as_str(), &work.options);
                break;
            }
            (Ok(()), PodWorkerState::Terminating) => {
                complete_terminating(&inner, &uid);
                phase_transition = true;
            }
            (Ok(()), PodWorkerState::Sync) if is_terminal => {
                complete_sync(&inner, &uid);
                phase_transition = true;
            }
            (Ok(()), PodWorkerState::Sync) => {}
        }
        complete_work(&inner, &uid, phase_transition, result.err());
        observe_worker_duration(work.options.update_type.as_str(), &work.options);
    }
    debug!(%uid, "pod worker has stopped");
}

/// `kubelet_pod_worker_duration_seconds{operation_type}` from the update's start time
/// (upstream observes it after each processed update, and `terminated` once a pod is
/// done or can never start).
fn observe_worker_duration(operation_type: &str, options: &UpdatePodOptions) {
    if let Some(start) = options.start_time {
        let secs = start.elapsed().as_secs_f64();
        kubelet_metrics::with(|m| {
            m.pod_worker_duration
                .with_label_values(&[operation_type])
                .observe(secs);
        });
    }
}

/// Consumes the pending update and decides whether the pod may run
/// (upstream `startPodSync`).
fn start_pod_sync(inner: &Inner, uid: &str) -> Start {
    let mut guard = inner.lock();
    let state = &mut *guard;
    let Some(status) = state.statuses.get_mut(uid) else {
        return Start::Nothing;
    };
    let Some(mut options) = status.pending_update.take() else {
        status.working = false;
        return Start::Nothing;
    };
    let work_type = status.work_type();
    if work_type == PodWorkerState::Terminating {
        let kill = options
            .kill_pod_options
            .get_or_insert_with(Default::default);
        if kill.grace_period_override.is_none() && status.grace_period > 0 {
            kill.grace_period_override = Some(status.grace_period);
        }
    }
    let cancel = match &status.cancel {
        Some(c) if !c.is_cancelled() => c.clone(),
        _ => {
            let c = inner.shutdown.child_token();
            status.cancel = Some(c.clone());
            c
        }
    };
    let work = |options| {
        Start::Run(Work {
            cancel,
            work_type,
            options,
        })
    };

    if status.is_started()
        || (options.running_pod.is_some() && work_type == PodWorkerState::Terminating)
    {
        status.merge_last_update(&options);
        return work(options);
    }
    let Some(pod) = options.pod.clone() else {
        status.merge_last_update(&options);
        warn!(%uid, "running pod can never start");
        return Start::Never;
    };
    match allow_pod_start(state, uid, &pod) {
        (_, false) => {
            cleanup_unstarted_pod(state, uid);
            observe_worker_duration("terminated", &options);
            Start::Never
        }
        (false, true) => {
            if let Some(status) = state.statuses.get_mut(uid) {
                status.pending_update = Some(options);
                status.working = false;
            }
            inner
                .work_queue
                .enqueue(uid, inner.delay(inner.config.backoff_period));
            Start::NotYet
        }
        (true, true) => {
            let Some(status) = state.statuses.get_mut(uid) else {
                return Start::Nothing;
            };
            status.started_at = Some(Instant::now());
            status.merge_last_update(&options);
            work(options)
        }
    }
}

/// (can start now, can ever start) (upstream `allowPodStart`).
fn allow_pod_start(state: &mut State, uid: &str, pod: &ApiPod) -> (bool, bool) {
    if !kubelet_container::kubetypes::is_static_pod(pod) {
        return (true, true);
    }
    let Some(status) = state.statuses.get(uid) else {
        return (false, false);
    };
    if status.is_termination_requested() {
        return (false, false);
    }
    let fullname = status.fullname.clone();
    (allow_static_pod_start(state, &fullname, uid), true)
}

/// Status for the sync: none for runtime-only pods, otherwise the first cache
/// entry newer than the previous sync (waits for the PLEG).
async fn pod_status_for(
    inner: &Inner,
    uid: &str,
    work: &Work,
    last: Option<Instant>,
) -> Result<PodStatus, PodSyncError> {
    if work.options.running_pod.is_some() {
        return Ok(PodStatus::default());
    }
    tokio::select! {
        r = inner.cache.get_newer_than(uid, last) => r.map_err(|e| PodSyncError::Failed(format!("error determining status: {e}"))),
        () = work.cancel.cancelled() => Err(PodSyncError::Cancelled),
    }
}

/// Runs the work until it finishes or its cancellation token fires, whichever comes first.
///
/// Upstream hands the sync a context that `UpdatePod` cancels when the pod starts terminating
/// or its grace period is shortened; every CRI call made under it (a hung `PullImage`, a
/// postStart `ExecSync` that never returns, a slow `RunPodSandbox`) is cancelled with it.
/// Here the in-flight `PodSyncer` future is dropped, which cancels the gRPC calls it is
/// awaiting (tonic resets the stream) and releases what it holds; the worker then picks up
/// the pending kill. A syncer that notices the token itself and returns early is fine too.
async fn run_cancellable(
    inner: &Inner,
    uid: &str,
    work: &Work,
    last: Option<Instant>,
) -> (Result<(), PodSyncError>, bool) {
    tokio::select! {
        biased;
        r = run_sync(inner, uid, work, last) => r,
        () = work.cancel.cancelled() => (Err(PodSyncError::Cancelled), false),
    }
}

async fn run_sync(
    inner: &Inner,
    uid: &str,
    work: &Work,
    last: Option<Instant>,
) -> (Result<(), PodSyncError>, bool) {
    let status = match pod_status_for(inner, uid, work, last).await {
        Ok(s) => s,
        Err(e) => return (Err(e), false),
    };
    let syncer = &inner.syncer;
    let cancel = &work.cancel;
    let opts = &work.options;
    let pod = opts.pod.as_deref();
    match (work.work_type, pod) {
        (PodWorkerState::Terminating, _) => {
            let grace = opts
                .kill_pod_options
                .as_ref()
                .and_then(|k| k.grace_period_override);
            let status_fn = acknowledge_terminating(inner, uid);
            let result = match (&opts.running_pod, pod) {
                (Some(rp), _) => syncer.sync_terminating_runtime_pod(cancel, rp).await,
                (None, Some(pod)) => {
                    syncer
                        .sync_terminating_pod(cancel, pod, &status, grace, status_fn.as_ref())
                        .await
                }
                (None, None) => Err(PodSyncError::Failed(
                    "terminating update without pod".into(),
                )),
            };
            (result, false)
        }
        (PodWorkerState::Terminated, Some(pod)) => (
            syncer.sync_terminated_pod(cancel, pod, &status).await,
            false,
        ),
        (PodWorkerState::Sync, Some(pod)) => {
            match syncer
                .sync_pod(
                    cancel,
                    opts.update_type,
                    pod,
                    opts.mirror_pod.as_deref(),
                    &status,
                )
                .await
            {
                Ok(terminal) => (Ok(()), terminal),
                Err(e) => (Err(e), false),
            }
        }
        (_, None) => (
            Err(PodSyncError::Failed("update without pod".into())),
            false,
        ),
    }
}

/// Marks that the worker saw the termination (no new containers will start)
/// and returns the status override to apply (upstream `acknowledgeTerminating`).
fn acknowledge_terminating(inner: &Inner, uid: &str) -> Option<PodStatusFn> {
    let mut guard = inner.lock();
    let status = guard.statuses.get_mut(uid)?;
    if status.is_termination_requested() && !status.started_terminating {
        debug!(%uid, "pod worker has observed request to terminate");
        status.started_terminating = true;
    }
    status.status_post_terminating.last().cloned()
}

/// `sync_pod` reported a terminal pod: start terminating (upstream `completeSync`).
fn complete_sync(inner: &Inner, uid: &str) {
    let mut guard = inner.lock();
    let Some(status) = guard.statuses.get_mut(uid) else {
        return;
    };
    if status.terminating_at.is_none() {
        status.terminating_at = Some(Instant::now());
    }
    status.started_terminating = true;
    requeue_last_pod_update(&mut guard, uid);
}

/// All containers stopped: move to terminated (upstream `completeTerminating`).
fn complete_terminating(inner: &Inner, uid: &str) {
    let mut guard = inner.lock();
    let Some(status) = guard.statuses.get_mut(uid) else {
        return;
    };
    status.terminated_at = Some(Instant::now());
    status.complete_waiters();
    status.status_post_terminating.clear();
    requeue_last_pod_update(&mut guard, uid);
}

/// Orphaned runtime pod stopped: forget it entirely (upstream `completeTerminatingRuntimePod`).
fn complete_terminating_runtime_pod(inner: &Inner, uid: &str) {
    let mut guard = inner.lock();
    guard.last_termination = Some(Instant::now());
    guard.pod_updates.remove(uid);
    if let Some(mut status) = guard.statuses.remove(uid) {
        status.complete_waiters();
        forget_started_static(&mut guard, uid, &status.fullname);
    }
}

/// `sync_terminated_pod` succeeded: the pod is finished (upstream `completeTerminated`).
fn complete_terminated(inner: &Inner, uid: &str) {
    let mut guard = inner.lock();
    guard.last_termination = Some(Instant::now());
    guard.pod_updates.remove(uid);
    let Some(status) = guard.statuses.get_mut(uid) else {
        return;
    };
    status.finished = true;
    status.working = false;
    status.complete_waiters();
    let fullname = status.fullname.clone();
    forget_started_static(&mut guard, uid, &fullname);
}

/// A pod terminated before it ever started (upstream `cleanupUnstartedPod`).
fn cleanup_unstarted_pod(state: &mut State, uid: &str) {
    state.last_termination = Some(Instant::now());
    state.pod_updates.remove(uid);
    let Some(status) = state.statuses.get_mut(uid) else {
        return;
    };
    status.finished = true;
    status.working = false;
    status.terminated_at = Some(Instant::now());
    status.complete_waiters();
    let fullname = status.fullname.clone();
    forget_started_static(state, uid, &fullname);
}

fn forget_started_static(state: &mut State, uid: &str, fullname: &str) {
    if state
        .started_static_pods_by_fullname
        .get(fullname)
        .is_some_and(|u| u == uid)
    {
        state.started_static_pods_by_fullname.remove(fullname);
    }
}

/// Schedules the next sync and re-wakes the worker if an update is pending
/// (upstream `completeWork`).
fn complete_work(inner: &Inner, uid: &str, phase_transition: bool, err: Option<PodSyncError>) {
    let delay = match err {
        _ if phase_transition => std::time::Duration::ZERO,
        None => inner.delay(inner.config.resync_interval),
        Some(PodSyncError::NetworkNotReady(_)) => inner.delay(TRANSIENT_ERROR_BACKOFF),
        Some(_) => inner.delay(inner.config.backoff_period),
    };
    inner.work_queue.enqueue(uid, delay);
    let mut guard = inner.lock();
    let State {
        statuses,
        pod_updates,
        ..
    } = &mut *guard;
    let Some(status) = statuses.get_mut(uid) else {
        return;
    };
    if status.pending_update.is_some() {
        if let Some(tx) = pod_updates.get(uid) {
            let _ = tx.try_send(());
        }
    } else {
        status.working = false;
    }
}
