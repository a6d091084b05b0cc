#!/usr/bin/env bash
# Stops everything hack/cluster-up.sh and hack/upstream-kubelet-up.sh started: upstream
# kubelet nodes (pods deleted first), kube-scheduler, kube-controller-manager,
# kube-apiserver, etcd, then the private containerd (hack/runtime-down.sh), and removes the
# harness's lo addresses. Leaves no process and no mount behind, and fails if it would.
#
#   hack/cluster-down.sh [--keep-runtime] [--purge]
#
#   --keep-runtime  leave the private containerd running
#   --purge         also delete $KRS_CLUSTER_DIR (etcd data, PKI, logs)
# Idempotent: running it with nothing up is a no-op.
set -euo pipefail
HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/cluster.sh
source "$HACK/lib/cluster.sh"

keep_runtime=0 purge=0
for arg in "$@"; do
  case $arg in
    --keep-runtime) keep_runtime=1 ;;
    --purge) purge=1 ;;
    *) krs_die "unknown argument $arg (usage: cluster-down.sh [--keep-runtime] [--purge])" ;;
  esac
done
[[ $(id -u) == 0 ]] || krs_die "cluster-down.sh must run as root"

if [[ -d $KRS_CLUSTER_DIR ]]; then
  "$HACK/upstream-kubelet-down.sh" --all
  krs_cluster_lock
  for ((i = ${#KRS_CONTROL_PLANE[@]} - 1; i >= 0; i--)); do
    krs_stop "${KRS_CONTROL_PLANE[i]}" 30
  done
fi
krs_remove_lo_ip "$KRS_CLUSTER_HOST_IP"
if ((!keep_runtime)) && [[ -x $HACK/runtime-down.sh ]]; then
  "$HACK/runtime-down.sh"
fi

# Anything still running one of our binaries (e.g. a pid file was lost) is ours: report it
# and stop it by pid.
leftover=()
bin_dir=$(readlink -f "$KRS_CLUSTER_BIN" 2>/dev/null || echo "$KRS_CLUSTER_BIN")
for exe in /proc/[0-9]*/exe; do
  target=$(readlink "$exe" 2>/dev/null) || continue
  [[ ${target% (deleted)} == "$bin_dir"/* ]] || continue
  pid=${exe#/proc/}; pid=${pid%/exe}
  leftover+=("$pid:${target##*/}")
  kill -KILL "$pid" 2>/dev/null || true
done
((${#leftover[@]} == 0)) || krs_log "killed leftover harness processes: ${leftover[*]}"

left=$(krs_mounts_under "$KRS_CLUSTER_DIR")
[[ -z $left ]] || krs_die "mounts left under $KRS_CLUSTER_DIR: $left"
if ((purge)); then
  krs_log "purging $KRS_CLUSTER_DIR"
  rm -rf "$KRS_CLUSTER_DIR"
fi
krs_log "cluster down"
