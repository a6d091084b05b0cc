#!/usr/bin/env bash
# Builds upstream's conformance binaries from the harness's Go module (e2e/cluster, the same
# k8s.io/kubernetes v1.35.4 pins as hack/lib/cluster-build.sh) into _output/bin/:
#   e2e.test    `go test -c k8s.io/kubernetes/test/e2e` (the whole upstream suite, as
#               upstream's build does; e2e/cluster/conformance/deps.go keeps its test-only
#               imports in go.mod/go.sum)
#   ginkgo      github.com/onsi/ginkgo/v2/ginkgo at the version k8s.io/kubernetes pins (a
#               `tool` of the module), for parallel runs
#   nonewprivs  k8s.io/kubernetes/test/images/nonewprivs, the binary of the nonewprivs test
#               image (images/conformance/build.sh packs it)
# Same flags as cluster-build.sh (CGO off, -s -w, version stamped v1.35.4, nice 10).
#
# Usage: hack/lib/conformance-build.sh [--force]
#   Skips the build when every binary exists and is newer than go.mod, go.sum, the module's
#   Go sources and this script. KRS_CONFORMANCE_BIN overrides the output directory
#   (default _output/bin of this checkout; KRS_CLUSTER_BIN is left to the cluster binaries).
set -euo pipefail

KRS_REPO_ROOT=${KRS_REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
MODULE_DIR="$KRS_REPO_ROOT/e2e/cluster"
BIN_DIR=${KRS_CONFORMANCE_BIN:-$KRS_REPO_ROOT/_output/bin}
# shellcheck source=go-module-build.sh
source "$KRS_REPO_ROOT/hack/lib/go-module-build.sh"
BINARIES=(e2e.test ginkgo nonewprivs)

if [[ "${1:-}" != "--force" ]] &&
  krs_binaries_up_to_date "$MODULE_DIR" "$BIN_DIR" "${BASH_SOURCE[0]}" "${BINARIES[@]}"; then
  echo "conformance-build: binaries in $BIN_DIR are up to date"
  exit 0
fi

[[ -x /usr/local/go/bin/go ]] && ! command -v go >/dev/null && PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || { echo "conformance-build: go is not on PATH (need Go >= 1.25)" >&2; exit 1; }
mkdir -p "$BIN_DIR"
ldflags=$(krs_k8s_ldflags)

avail_gb() { df -BG --output=avail "${1:-/}" | tail -n1 | tr -dc 0-9; }
if (($(avail_gb "$(go env GOCACHE)") < 8)); then
  echo "conformance-build: less than 8 GB free for $(go env GOCACHE); a cold e2e.test build adds ~3 GB" >&2
fi

echo "conformance-build: building ${BINARIES[*]} into $BIN_DIR (cold e2e.test: ~11 min on 2 busy cores)"
start=$(date +%s)
(
  cd "$MODULE_DIR"
  # One go build for the two programs, one go test -c for the suite (go cannot mix them).
  CGO_ENABLED=0 nice -n "${KRS_BUILD_NICE:-10}" \
    go build -ldflags "$ldflags" -o "$BIN_DIR/" \
    github.com/onsi/ginkgo/v2/ginkgo k8s.io/kubernetes/test/images/nonewprivs
  CGO_ENABLED=0 nice -n "${KRS_BUILD_NICE:-10}" \
    go test -c -vet=off -ldflags "$ldflags" -o "$BIN_DIR/e2e.test" k8s.io/kubernetes/test/e2e
)
touch "${BINARIES[@]/#/$BIN_DIR/}"
echo "conformance-build: done in $(( $(date +%s) - start ))s"
