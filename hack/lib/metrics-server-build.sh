#!/usr/bin/env bash
# Builds metrics-server from the harness's Go module e2e/metrics-server (pinned in its
# go.mod/go.sum, fetched through the Go module proxy like the other harness components)
# into _output/bin/metrics-server. CGO off, stripped, nice 10, as cluster-build.sh.
#
# Usage: hack/lib/metrics-server-build.sh [--force]
#   Skips the build when the binary exists and is newer than the module and this script.
#   KRS_METRICS_SERVER_BIN overrides the output directory (default _output/bin).
set -euo pipefail

KRS_REPO_ROOT=${KRS_REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
MODULE_DIR="$KRS_REPO_ROOT/e2e/metrics-server"
BIN_DIR=${KRS_METRICS_SERVER_BIN:-$KRS_REPO_ROOT/_output/bin}
# shellcheck source=go-module-build.sh
source "$KRS_REPO_ROOT/hack/lib/go-module-build.sh"

if [[ "${1:-}" != "--force" ]] &&
  krs_binaries_up_to_date "$MODULE_DIR" "$BIN_DIR" "${BASH_SOURCE[0]}" metrics-server; then
  echo "metrics-server-build: $BIN_DIR/metrics-server is up to date"
  exit 0
fi
[[ -x /usr/local/go/bin/go ]] && ! command -v go >/dev/null && PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || { echo "metrics-server-build: go is not on PATH" >&2; exit 1; }
mkdir -p "$BIN_DIR"
version=$(cd "$MODULE_DIR" && go list -m -f '{{.Version}}' sigs.k8s.io/metrics-server)
echo "metrics-server-build: building metrics-server $version into $BIN_DIR"
start=$(date +%s)
(
  cd "$MODULE_DIR"
  CGO_ENABLED=0 nice -n "${KRS_BUILD_NICE:-10}" \
    go build -ldflags "-s -w -X sigs.k8s.io/metrics-server/pkg/version.gitVersion=$version" \
    -o "$BIN_DIR/" sigs.k8s.io/metrics-server/cmd/metrics-server
)
touch "$BIN_DIR/metrics-server"
echo "metrics-server-build: done in $(( $(date +%s) - start ))s"
