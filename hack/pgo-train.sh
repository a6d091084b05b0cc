#!/usr/bin/env bash
# Records the PGO profile hack/build-release.sh builds with (pgo/kubelet-rs.profdata.gz and
# pgo/llvm-version): an instrumented release kubelet-rs runs the node of the benchmark —
# node `krs-pgo` of the test control plane (hack/cluster-up.sh), 30 busybox pods started,
# a minute idle, a `/stats/summary`, `/metrics`, `/metrics/resource` scrape, `kubectl logs` and
# `exec`, the pods deleted, the kubelet stopped (SIGTERM: the profile is written at exit) —
# and the raw profile is merged with llvm-profdata of rustup's llvm-tools (LLVM of this rustc).
#
#   hack/pgo-train.sh            # about 3 minutes after the instrumented build
#
# KRS_PGO_INSTRUMENTED_BIN names an instrumented binary (built with -Cprofile-generate) to use
# instead of building one.
#
# Re-run it when the code the node runs changed much (an old profile still builds; changed
# functions are optimised as without PGO). Needs root, the cluster harness and rustup.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
GEN="$TARGET/pgo-gen"
RAW="$GEN/raw"
NODE=krs-pgo
log() { printf '>>> %s\n' "$*" >&2; }

rustup component add llvm-tools >&2
sysroot="$(rustc --print sysroot)"
host="$(rustc -vV | sed -n 's/^host: //p')"
profdata="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
[[ -x $profdata ]] || { echo "pgo-train: no $profdata" >&2; exit 1; }

rm -rf "$RAW"
mkdir -p "$GEN"
BIN="$GEN/kubelet-rs-instrumented"
if [[ -n ${KRS_PGO_INSTRUMENTED_BIN:-} ]]; then
  cp "$KRS_PGO_INSTRUMENTED_BIN" "$BIN"
else
  log "building the instrumented kubelet-rs"
  (cd "$REPO" && RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$RAW" \
    cargo build --release -q -p kubelet-rs --target-dir "$GEN/target" >&2)
  cp "$GEN/target/release/kubelet-rs" "$BIN"
fi
# The kubelet inherits this: the raw profile lands in $RAW whatever path was built in.
export LLVM_PROFILE_FILE="$RAW/kubelet-rs-%p.profraw"

eval "$("$REPO/hack/cluster-up.sh" | grep -E '^(KUBECONFIG|KRS_CLUSTER_BIN)=' | sed 's/^/export /')"
K="$KRS_CLUSTER_BIN/kubectl"
node_down() { KRS_RS_NODE=$NODE "$REPO/hack/kubelet-rs-node-down.sh" >&2 || true; }
node_down
trap node_down EXIT
KRS_KUBELET_RS_BIN="$BIN" KRS_RS_NODE=$NODE KRS_RS_NODE_IP=198.18.255.18 KRS_RS_KUBELET_PORT=10268 \
  KRS_NODE_TAINTS=krs/pgo=true:NoSchedule "$REPO/hack/kubelet-rs-node-up.sh" --no-smoke >&2

log "30 pods on $NODE"
"$K" create namespace pgo >/dev/null 2>&1 || true
for i in $(seq 1 30); do
  cat <<EOF
---
apiVersion: v1
kind: Pod
metadata: {name: p$i, namespace: pgo}
spec:
  nodeName: $NODE
  terminationGracePeriodSeconds: 1
  tolerations: [{key: krs/pgo, operator: Exists}]
  containers: [{name: c, image: docker.io/library/busybox:1.36, imagePullPolicy: Never, command: [sh, -c, "echo started; sleep 3600"]}]
EOF
done | "$K" apply -f - >/dev/null
for _ in $(seq 1 120); do
  n="$("$K" get pods -n pgo --no-headers 2>/dev/null | grep -c Running || true)"
  [[ $n == 30 ]] && break
  sleep 1
done
log "$n pods Running; a minute idle"
sleep 65
for path in stats/summary metrics metrics/resource metrics/cadvisor; do
  "$K" get --raw "/api/v1/nodes/$NODE/proxy/$path" >/dev/null
done
"$K" logs -n pgo p1 >/dev/null
"$K" exec -n pgo p1 -- true >/dev/null || true
"$K" delete namespace pgo --wait=true >/dev/null
node_down
trap - EXIT

mkdir -p "$REPO/pgo"
"$profdata" merge -o "$GEN/kubelet-rs.profdata" "$RAW"/*.profraw
gzip -9 -c "$GEN/kubelet-rs.profdata" >"$REPO/pgo/kubelet-rs.profdata.gz"
rustc -vV | sed -n 's/^LLVM version: //p' >"$REPO/pgo/llvm-version"
log "wrote pgo/kubelet-rs.profdata.gz ($(du -h "$REPO/pgo/kubelet-rs.profdata.gz" | cut -f1)), LLVM $(cat "$REPO/pgo/llvm-version")"
