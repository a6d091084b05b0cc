#!/usr/bin/env bash
# A kubelet-rs node joins the test control plane (hack/cluster-up.sh): the same node as
# hack/upstream-kubelet-up.sh's (node PKI, own containerd, bridge and pod subnet,
# KubeletConfiguration, `--kubeconfig`; hack/lib/cluster-node.sh, krs_node_up), with
# kubelet-rs as the kubelet. Both nodes can be up at once.
#
#   hack/kubelet-rs-node-up.sh [--no-smoke]
#
#   --no-smoke   only start kubelet-rs and wait for the node to be Ready.
# kubelet-rs is built with `cargo build --release -p kubelet-rs` (into $CARGO_TARGET_DIR or
# target/) unless KRS_KUBELET_RS_BIN names a binary to run.
# Environment: KRS_RS_NODE (default krs-kubelet-rs), KRS_RS_NODE_IP (198.18.255.3, added to
# lo), KRS_RS_KUBELET_PORT (10250), KRS_NODE_MAX_PODS, KRS_NODE_TAINTS, KRS_NODE_MEMORY_AVAILABLE
# (evictionHard memory.available), KRS_NODE_EVICTION_HARD
# (more evictionHard lines), KRS_NODE_EXTRA_CONFIG (more config lines), KRS_NODE_POD_SUBNET, plus
# hack/lib/cluster.sh's settings. Idempotent. Last lines of output: NODE_NAME=, NODE_DIR=,
# CONTAINER_RUNTIME_ENDPOINT=, KUBECONFIG=. Stop with hack/kubelet-rs-node-down.sh.
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
  *) krs_die "unknown argument $1 (usage: kubelet-rs-node-up.sh [--no-smoke])" ;;
esac
krs_node_up kubelet-rs "${KRS_RS_NODE:-krs-kubelet-rs}" "${KRS_RS_NODE_IP:-198.18.255.3}" \
  "${KRS_RS_KUBELET_PORT:-10250}" "$smoke"
