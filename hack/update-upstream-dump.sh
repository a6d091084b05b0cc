#!/usr/bin/env bash
# Regenerates crates/config/testdata/upstream-kubelet.json: every flag, feature gate and
# KubeletConfiguration v1beta1 field of the upstream kubelet at the version the harness
# pins (e2e/cluster/go.mod, k8s.io/kubernetes v1.35.4), dumped from upstream's own code by
# e2e/cluster/cmd/krs-upstream-dump. kubelet-rs's tests compare their tables with it.
#
# Usage: hack/update-upstream-dump.sh [--check]
#   --check: regenerate into a temporary file and fail (exit 1, with a diff) when the
#            checked-in dump differs from it.
# Uses the harness's Go module and the same build settings as hack/lib/cluster-build.sh,
# so its Go build cache makes this a link plus a run (seconds) once the harness is built.
set -euo pipefail

KRS_REPO_ROOT=${KRS_REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
MODULE_DIR="$KRS_REPO_ROOT/e2e/cluster"
OUT="$KRS_REPO_ROOT/crates/config/testdata/upstream-kubelet.json"

[[ -x /usr/local/go/bin/go ]] && ! command -v go >/dev/null && PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || { echo "update-upstream-dump: go is not on PATH (need Go >= 1.25)" >&2; exit 1; }

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
(
  cd "$MODULE_DIR"
  CGO_ENABLED=0 nice -n "${KRS_BUILD_NICE:-10}" go run ./cmd/krs-upstream-dump >"$tmp"
)

if [[ "${1:-}" == "--check" ]]; then
  if ! diff -u "$OUT" "$tmp"; then
    echo "update-upstream-dump: $OUT is stale; run hack/update-upstream-dump.sh" >&2
    exit 1
  fi
  echo "update-upstream-dump: $OUT is up to date"
  exit 0
fi
mkdir -p "$(dirname "$OUT")"
mv "$tmp" "$OUT"
trap - EXIT
echo "update-upstream-dump: wrote $OUT"
