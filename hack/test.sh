#!/usr/bin/env bash
# The whole test suite, as README and .ci/run run it (as root).
#
# 1. brings up the real test environment (idempotent; installs what is missing):
#    - hack/runtime-up.sh: a private containerd + runc + CNI with locally built images;
#    - hack/cluster-up.sh (through hack/lib/cluster-session.sh): etcd, kube-apiserver,
#      controller-manager and scheduler built from Go modules;
# 2. fuzzes the kubelet API for a bounded time (hack/fuzz.sh, KRS_FUZZ_SECONDS), then runs
#    every Rust test of the workspace (unit, in-process, process-level tests of the binary,
#    and tests against the real runtime and control plane);
# 3. tears the control plane and the runtime down again (KRS_KEEP_CLUSTER=1 or
#    KRS_KEEP_RUNTIME=1 keep them).
# KRS_SKIP_RUNTIME_TESTS=1 / KRS_SKIP_CLUSTER_TESTS=1 run without the runtime / the control
# plane: the tests that need them are then built as #[ignore] and cargo's summary counts
# them as "ignored", never as passed (e2e/build.rs). CI sets neither: without them, a
# runtime or control plane that cannot be brought up or reached fails its tests.
# Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '>>> %s\n' "$*" >&2; }

hack/check-architecture.sh >&2

if [[ "${KRS_SKIP_RUNTIME_TESTS:-0}" == 1 ]]; then
  log "KRS_SKIP_RUNTIME_TESTS=1: no container runtime; its tests are reported as ignored"
else
  log "bringing up the private containerd (hack/runtime-up.sh)"
  hack/runtime-up.sh >/dev/null
fi

# Coverage-guided fuzzing of the kubelet API on stable Rust, bounded in time
# (KRS_FUZZ_SECONDS per target, default 30; 0 skips it): see hack/fuzz.sh.
if [[ "${KRS_FUZZ_SECONDS:-30}" != 0 ]]; then
  log "fuzzing the kubelet API for ${KRS_FUZZ_SECONDS:-30}s per target (hack/fuzz.sh)"
  hack/fuzz.sh "${KRS_FUZZ_SECONDS:-30}"
fi

if [[ "${KRS_SKIP_CLUSTER_TESTS:-0}" == 1 ]]; then
  log "KRS_SKIP_CLUSTER_TESTS=1: no control plane; its tests are reported as ignored"
  exec cargo test --workspace --no-fail-fast "$@"
fi
log "cargo test --workspace, with the control plane up (hack/lib/cluster-session.sh)"
exec hack/lib/cluster-session.sh -- cargo test --workspace --no-fail-fast "$@"
