#!/usr/bin/env bash
# Stops the kubelet-rs node started by hack/kubelet-rs-node-up.sh, exactly as
# hack/upstream-kubelet-down.sh stops an upstream node (krs_node_down in
# hack/lib/cluster-node.sh): pods deleted through the apiserver, kubelet stopped, Node
# deleted, the node's containerd torn down, mounts, cgroups and lo address removed.
#
#   hack/kubelet-rs-node-down.sh           # node $KRS_RS_NODE (default krs-kubelet-rs)
#   hack/kubelet-rs-node-down.sh --all     # every node, upstream or kubelet-rs
# Idempotent.
set -euo pipefail
HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/cluster.sh
source "$HACK/lib/cluster.sh"
# shellcheck source=lib/cluster-node.sh
source "$HACK/lib/cluster-node.sh"
krs_node_down_main "${KRS_RS_NODE:-krs-kubelet-rs}" "$@"
