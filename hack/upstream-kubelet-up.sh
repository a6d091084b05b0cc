#!/usr/bin/env bash
# Reference run: the upstream kubelet (v1.35.4, built by hack/lib/cluster-build.sh) joins the
# test control plane (hack/cluster-up.sh) on its own containerd (hack/runtime-up.sh with
# KRS_RUNTIME_DIR=$KRS_CLUSTER_DIR/nodes/<name>/runtime, own bridge and pod subnet), the node
# becomes Ready, and a busybox pod created with kubectl reaches Running and `kubectl logs`
# shows its output. This is the baseline kubelet-rs is compared with; it shares everything
# but the binary with hack/kubelet-rs-node-up.sh (hack/lib/cluster-node.sh, krs_node_up).
#
#   hack/upstream-kubelet-up.sh [--no-smoke]
#
#   --no-smoke   only start the kubelet and wait for the node to be Ready.
# Environment: KRS_UPSTREAM_NODE (default krs-upstream), KRS_UPSTREAM_NODE_IP (198.18.255.2,
# added to lo), KRS_UPSTREAM_KUBELET_PORT (10250), KRS_NODE_MAX_PODS, KRS_NODE_TAINTS, KRS_NODE_MEMORY_AVAILABLE
# (evictionHard memory.available), KRS_NODE_EVICTION_HARD
# (more evictionHard lines), KRS_NODE_EXTRA_CONFIG (more config lines),
# KRS_NODE_POD_SUBNET,
# plus hack/lib/cluster.sh's settings. A second upstream node runs beside it with another
# name and IP, e.g. KRS_UPSTREAM_NODE=krs-upstream2 KRS_UPSTREAM_NODE_IP=198.18.255.4.
# Idempotent. Last lines of output: NODE_NAME=, NODE_DIR=, CONTAINER_RUNTIME_ENDPOINT=,
# KUBECONFIG=. Stop with hack/upstream-kubelet-down.sh (or hack/cluster-down.sh).
set -euo pipefail
HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/cluster.sh
source "$HACK/lib/cluster.sh"
# shellcheck source=lib/cluster-node.sh
source "$HACK/lib/cluster-node.sh"

smoke=1
case "${1:-}" in
  "") ;;
  --no-smoke) smoke=0 ;;
  *) krs_die "unknown argument $1 (usage: upstream-kubelet-up.sh [--no-smoke])" ;;
esac
krs_node_up upstream "${KRS_UPSTREAM_NODE:-krs-upstream}" "${KRS_UPSTREAM_NODE_IP:-198.18.255.2}" \
  "${KRS_UPSTREAM_KUBELET_PORT:-10250}" "$smoke"
