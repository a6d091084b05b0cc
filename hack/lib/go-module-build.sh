# shellcheck shell=bash
# Shared by hack/lib/cluster-build.sh and hack/lib/conformance-build.sh: the Kubernetes
# version both stamp into their binaries, and their "nothing to rebuild" check. Source it.

K8S_VERSION=v1.35.4
# The proxy's .info time for k8s.io/kubernetes@v1.35.4; fixed so the link stays cacheable.
BUILD_DATE=2026-04-15T18:01:22Z

# krs_k8s_ldflags : -ldflags for upstream binaries: stripped, and the version stamped into
# both k8s.io/component-base/version and k8s.io/client-go/pkg/version.
krs_k8s_ldflags() {
  local pkg flags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=35"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$BUILD_DATE"
  done
  echo "$flags"
}

# krs_binaries_up_to_date MODULE_DIR BIN_DIR SCRIPT BINARY... : true when every BINARY in
# BIN_DIR is executable and newer than SCRIPT, this file and the newest go.mod, go.sum and Go
# source of MODULE_DIR (cmd/krs-upstream-dump excluded: hack/update-upstream-dump.sh runs it).
krs_binaries_up_to_date() {
  local module=$1 bin_dir=$2 script=$3 b newest
  shift 3
  newest=$(find "$module" -path "$module/cmd/krs-upstream-dump" -prune -o \
    \( -name '*.go' -o -name go.mod -o -name go.sum \) -printf '%T@ %p\n' |
    sort -n | tail -n1 | cut -d' ' -f2-)
  for b in "$@"; do
    [[ -x "$bin_dir/$b" && "$bin_dir/$b" -nt "$newest" && "$bin_dir/$b" -nt "$script" &&
      "$bin_dir/$b" -nt "${BASH_SOURCE[0]}" ]] || return 1
  done
}
