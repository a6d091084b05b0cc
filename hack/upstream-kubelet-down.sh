#!/usr/bin/env bash
# Stops the upstream kubelet node(s) started by hack/upstream-kubelet-up.sh and cleans up
# after them: static pods removed and pods on the node deleted through the apiserver first
# (so the kubelet itself stops their containers), then the kubelet is stopped, the Node
# object deleted, the node's own containerd torn down (hack/runtime-down.sh), mounts under
# the node's directory unmounted, its cgroups and its lo address removed.
#
#   hack/upstream-kubelet-down.sh          # node $KRS_UPSTREAM_NODE (default krs-upstream)
#   hack/upstream-kubelet-down.sh --all    # every node, upstream or kubelet-rs
# Idempotent. hack/cluster-down.sh runs it with --all.
set -euo pipefail
HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/cluster.sh
source "$HACK/lib/cluster.sh"
# shellcheck source=lib/cluster-node.sh
source "$HACK/lib/cluster-node.sh"
krs_node_down_main "${KRS_UPSTREAM_NODE:-krs-upstream}" "$@"
