#!/usr/bin/env bash
# The whole test suite, as README and .ci/run run it.
#
# 1. brings up the real test environment (idempotent):
#    - hack/runtime-up.sh: a private containerd + runc + CNI with locally built images;
#    - hack/cluster-up.sh: etcd, kube-apiserver, controller-manager, scheduler built from
#      Go modules (skipped when KRS_SKIP_CLUSTER_TESTS=1);
# 2. runs every Rust test of the workspace (unit, in-process, and tests against the
#    real runtime and control plane), which use that environment.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '>>> %s\n' "$*" >&2; }

log "bringing up the private containerd (hack/runtime-up.sh)"
hack/runtime-up.sh >/dev/null

if [[ "${KRS_SKIP_CLUSTER_TESTS:-0}" != 1 && -x hack/cluster-up.sh ]]; then
  log "bringing up the control plane (hack/cluster-up.sh)"
  hack/cluster-up.sh >/dev/null
fi

log "cargo test --workspace"
cargo test --workspace --no-fail-fast "$@"
