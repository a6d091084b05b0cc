#!/usr/bin/env bash
# Stops the upstream kubelet node(s) started by hack/upstream-kubelet-up.sh and cleans up
# after them: pods on the node are deleted through the apiserver first (so the kubelet
# itself stops their containers), then the kubelet is stopped, the Node object deleted,
# mounts under the node's directory unmounted, its cgroups and its lo address removed.
#
#   hack/upstream-kubelet-down.sh          # node $KRS_UPSTREAM_NODE (default krs-upstream)
#   hack/upstream-kubelet-down.sh --all    # every node with a kubelet-<name>.pid
# Idempotent. Containers that outlive this (e.g. the kubelet had crashed) are removed by
# hack/runtime-down.sh, which hack/cluster-down.sh runs.
set -euo pipefail
HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/cluster.sh
source "$HACK/lib/cluster.sh"
# shellcheck source=lib/cluster-node.sh
source "$HACK/lib/cluster-node.sh"
[[ $(id -u) == 0 ]] || krs_die "upstream-kubelet-down.sh must run as root"

nodes=()
case "${1:-}" in
  "") nodes=("${KRS_UPSTREAM_NODE:-krs-upstream}") ;;
  --all)
    for f in "$KRS_RUN_DIR"/kubelet-*.pid "$KRS_CLUSTER_DIR"/nodes/*/; do
      [[ -e $f ]] || continue
      if [[ $f == *.pid ]]; then n=$(basename "$f" .pid); n=${n#kubelet-}; else n=$(basename "$f"); fi
      [[ " ${nodes[*]} " == *" $n "* ]] || nodes+=("$n")
    done ;;
  *) krs_die "unknown argument $1 (usage: upstream-kubelet-down.sh [--all])" ;;
esac

apiserver_up() { [[ "$(krs_kubectl get --raw /readyz 2>/dev/null)" == ok ]]; }

node_ip() {
  local cfg
  cfg="$(krs_node_dir "$1")/config.yaml"
  [[ -f $cfg ]] && sed -n 's/^address: //p' "$cfg"
}

down_node() {
  local node=$1 ip
  if krs_pid "kubelet-$node" >/dev/null && apiserver_up; then
    krs_log "deleting pods on $node"
    krs_kubectl delete pods --all-namespaces --field-selector "spec.nodeName=$node" \
      --wait --timeout=60s >/dev/null 2>&1 || krs_log "pods on $node did not all go away in 60s"
  fi
  krs_stop "kubelet-$node" 30
  if apiserver_up; then
    krs_kubectl delete node "$node" --ignore-not-found >/dev/null 2>&1 || true
  fi
  krs_unmount_under "$(krs_node_dir "$node")"
  krs_node_cgroups_remove "$node"
  ip=$(node_ip "$node" || true)
  [[ -n $ip ]] && krs_remove_lo_ip "$ip"
  local left
  left=$(krs_mounts_under "$(krs_node_dir "$node")")
  [[ -z $left ]] || krs_die "mounts left under $(krs_node_dir "$node"): $left"
  krs_log "node $node is down"
}

krs_cluster_lock
for n in "${nodes[@]}"; do down_node "$n"; done
