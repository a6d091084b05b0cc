//! Static pods with the same full name start one at a time, in arrival order
//! (upstream `allowStaticPodStart` in `pod_workers.go`).

use crate::workers::State;

/// True if `uid` may start: no other static pod with `fullname` is started
/// and `uid` is the first valid one waiting.
pub(crate) fn allow_static_pod_start(state: &mut State, fullname: &str, uid: &str) -> bool {
    if let Some(started) = state.started_static_pods_by_fullname.get(fullname) {
        return started == uid;
    }
    let waiting = state
        .waiting_to_start_static_pods_by_fullname
        .remove(fullname)
        .unwrap_or_default();
    let mut rest = waiting.as_slice();
    while let Some((first, tail)) = rest.split_first() {
        let valid = state
            .statuses
            .get(first)
            .is_some_and(|s| !s.is_termination_requested() && !s.is_terminated());
        if !valid {
            rest = tail;
            continue;
        }
        if first != uid {
            // Another pod is next in line.
            state
                .waiting_to_start_static_pods_by_fullname
                .insert(fullname.to_string(), rest.to_vec());
            return false;
        }
        rest = tail;
        break;
    }
    if !rest.is_empty() {
        state
            .waiting_to_start_static_pods_by_fullname
            .insert(fullname.to_string(), rest.to_vec());
    }
    state
        .started_static_pods_by_fullname
        .insert(fullname.to_string(), uid.to_string());
    true
}
