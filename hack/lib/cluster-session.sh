#!/usr/bin/env bash
# Test entry point: runs a command with the test control plane up, then tears everything
# down (hack/cluster-down.sh: nodes, control plane, private containerd).
#
#   hack/lib/cluster-session.sh [--upstream-kubelet] [--] COMMAND [ARGS...]
#
#   --upstream-kubelet  also start the upstream kubelet reference node (and the runtime)
# The cluster is started before COMMAND (building the binaries if needed, with progress on
# stderr), so Rust tests calling kubelet_e2e::cluster::ensure() find it running and reuse
# it. COMMAND sees KUBECONFIG and KRS_CLUSTER_* in its environment. Exit status is
# COMMAND's (or cluster-up's if that fails). KRS_KEEP_CLUSTER=1 skips the teardown;
# KRS_KEEP_RUNTIME=1 tears down the cluster but leaves the private containerd running.
set -euo pipefail
HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

upstream=0
while (($#)); do
  case $1 in
    --upstream-kubelet) upstream=1; shift ;;
    --) shift; break ;;
    *) break ;;
  esac
done
(($#)) || { echo "usage: cluster-session.sh [--upstream-kubelet] [--] COMMAND [ARGS...]" >&2; exit 2; }

teardown() {
  local rc=$?
  if [[ ${KRS_KEEP_CLUSTER:-0} == 1 ]]; then
    echo "cluster-session: KRS_KEEP_CLUSTER=1, leaving the cluster up" >&2
  else
    local args=()
    [[ ${KRS_KEEP_RUNTIME:-0} == 1 ]] && args+=(--keep-runtime)
    "$HACK/cluster-down.sh" "${args[@]}" || rc=1
  fi
  exit "$rc"
}
trap teardown EXIT

start=$(date +%s)
while IFS= read -r line; do
  [[ $line == *=* ]] && export "${line?}"
done < <("$HACK/cluster-up.sh")
[[ -n ${KUBECONFIG:-} ]] || { echo "cluster-session: hack/cluster-up.sh failed" >&2; exit 1; }
if ((upstream)); then
  "$HACK/upstream-kubelet-up.sh" --no-smoke >/dev/null
fi
echo "cluster-session: environment up in $(( $(date +%s) - start ))s; running: $*" >&2
"$@"
