#!/usr/bin/env bash
# Builds the upstream Kubernetes v1.35.4 components, etcd, agnhost and the harness's own
# krs-pki from the Go module in e2e/cluster/ into _output/bin/ (one `go build` call, so every
# shared package compiles once). GOCACHE/GOMODCACHE stay at Go's defaults so a machine that
# keeps them (developer box, CI runner) rebuilds in seconds.
#
# Usage: hack/lib/cluster-build.sh [--force]
#   Skips the build when every binary exists and is newer than go.mod, go.sum and the
#   module's own Go sources. KRS_CLUSTER_BIN overrides the output directory.
set -euo pipefail

KRS_REPO_ROOT=${KRS_REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
MODULE_DIR="$KRS_REPO_ROOT/e2e/cluster"
BIN_DIR=${KRS_CLUSTER_BIN:-$KRS_REPO_ROOT/_output/bin}
# shellcheck source=go-module-build.sh
source "$KRS_REPO_ROOT/hack/lib/go-module-build.sh"

# go build names each binary after the last element of its package path.
PACKAGES=(
  ./cmd/etcd                                    # upstream etcd's main, named etcd
  k8s.io/kubernetes/cmd/kube-apiserver
  k8s.io/kubernetes/cmd/kube-controller-manager
  k8s.io/kubernetes/cmd/kube-scheduler
  k8s.io/kubernetes/cmd/kubectl
  k8s.io/kubernetes/cmd/kubelet
  k8s.io/kubernetes/test/images/agnhost
  ./cmd/krs-pki
)
BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet agnhost krs-pki)

if [[ "${1:-}" != "--force" ]] &&
  krs_binaries_up_to_date "$MODULE_DIR" "$BIN_DIR" "${BASH_SOURCE[0]}" "${BINARIES[@]}"; then
  echo "cluster-build: binaries in $BIN_DIR are up to date"
  exit 0
fi

# The official tarball's location, for shells (sudo, CI) whose PATH lacks it.
[[ -x /usr/local/go/bin/go ]] && ! command -v go >/dev/null && PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || { echo "cluster-build: go is not on PATH (need Go >= 1.25)" >&2; exit 1; }
mkdir -p "$BIN_DIR"
ldflags=$(krs_k8s_ldflags)

echo "cluster-build: building ${BINARIES[*]} into $BIN_DIR (cold: ~12 min on 2 cores)"
start=$(date +%s)
(
  cd "$MODULE_DIR"
  # CGO off: static binaries (agnhost runs in an image without libc) and one compile
  # cache for all. go build replaces each output file only when its link changed.
  CGO_ENABLED=0 nice -n "${KRS_BUILD_NICE:-10}" \
    go build -ldflags "$ldflags" -o "$BIN_DIR/" "${PACKAGES[@]}"
)
touch "${BINARIES[@]/#/$BIN_DIR/}"
echo "cluster-build: done in $(( $(date +%s) - start ))s"
