#!/usr/bin/env bash
# Reference run: the upstream kubelet (v1.35.4, built by hack/lib/cluster-build.sh) joins the
# test control plane (hack/cluster-up.sh) on the private containerd (hack/runtime-up.sh),
# the node becomes Ready, and a busybox pod created with kubectl reaches Running and
# `kubectl logs` shows its output. This is the baseline kubelet-rs is compared with.
#
#   hack/upstream-kubelet-up.sh [--no-smoke]
#
#   --no-smoke   only start the kubelet and wait for the node to be Ready.
# Environment: KRS_UPSTREAM_NODE (default krs-upstream), KRS_UPSTREAM_NODE_IP (198.18.255.2,
# added to lo), KRS_UPSTREAM_KUBELET_PORT (10250), plus hack/lib/cluster.sh's settings.
# Idempotent. Last lines of output: NODE_NAME=..., KUBECONFIG=...
# Stop with hack/upstream-kubelet-down.sh (or hack/cluster-down.sh, which calls it).
set -euo pipefail
HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/cluster.sh
source "$HACK/lib/cluster.sh"
# shellcheck source=lib/cluster-node.sh
source "$HACK/lib/cluster-node.sh"

NODE=${KRS_UPSTREAM_NODE:-krs-upstream}
NODE_IP=${KRS_UPSTREAM_NODE_IP:-198.18.255.2}
PORT=${KRS_UPSTREAM_KUBELET_PORT:-10250}
smoke=1
case "${1:-}" in
  "") ;;
  --no-smoke) smoke=0 ;;
  *) krs_die "unknown argument $1 (usage: upstream-kubelet-up.sh [--no-smoke])" ;;
esac
[[ $(id -u) == 0 ]] || krs_die "upstream-kubelet-up.sh must run as root"

"$HACK/cluster-up.sh" >/dev/null
runtime_out=$("$HACK/runtime-up.sh") || krs_die "hack/runtime-up.sh failed"
runtime_var() { sed -n "s/^$1=//p" <<<"$runtime_out" | tail -n1; }
ENDPOINT=$(runtime_var CONTAINER_RUNTIME_ENDPOINT)
SNAPSHOTTER=$(runtime_var KRS_SNAPSHOTTER)
BUSYBOX=$(runtime_var KRS_BUSYBOX_IMAGE)
[[ $ENDPOINT == unix://* ]] || krs_die "runtime-up.sh printed no CONTAINER_RUNTIME_ENDPOINT"
"$KRS_REPO_ROOT/images/agnhost/build.sh" --address "${ENDPOINT#unix://}" \
  ${SNAPSHOTTER:+--snapshotter "$SNAPSHOTTER"} >/dev/null

krs_cluster_lock
krs_ensure_lo_ip "$NODE_IP"
krs_node_pki "$NODE" "$NODE_IP"
krs_node_cgroups_create "$NODE"
krs_node_write_config "$NODE" "$NODE_IP" "$ENDPOINT" "$PORT"
DIR=$(krs_node_dir "$NODE")
krs_start "kubelet-$NODE" "$KRS_CLUSTER_BIN/kubelet" \
  --config "$DIR/config.yaml" --kubeconfig "$DIR/pki/kubelet.kubeconfig" \
  --root-dir "$DIR/root" --hostname-override "$NODE" --node-ip "$NODE_IP" --v 2
flock -u 8

node_ready() {
  [[ "$(krs_kubectl get node "$NODE" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}
if ! krs_wait 180 "node $NODE Ready" node_ready; then
  tail -n 40 "$KRS_LOG_DIR/kubelet-$NODE.log" >&2
  krs_die "node $NODE did not become Ready (log: $KRS_LOG_DIR/kubelet-$NODE.log)"
fi
krs_log "node $NODE is Ready"
krs_kubectl get nodes -o wide >&2

if ((smoke)); then
  POD=smoke-busybox-$NODE
  krs_kubectl delete pod "$POD" --ignore-not-found --wait >/dev/null
  krs_kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $POD
  namespace: default
spec:
  nodeSelector:
    kubernetes.io/hostname: $NODE
  terminationGracePeriodSeconds: 5
  containers:
  - name: busybox
    image: ${BUSYBOX:-docker.io/library/busybox:1.36}
    command: ["sh", "-c", "trap 'exit 0' TERM; echo hello from \$(hostname) on $NODE; while true; do sleep 1; done"]
EOF
  if ! krs_kubectl wait pod "$POD" --for=jsonpath='{.status.phase}'=Running --timeout=120s >&2; then
    krs_kubectl describe pod "$POD" >&2 || true
    krs_die "pod $POD did not reach Running"
  fi
  krs_wait 30 "logs of $POD" bash -c "[[ -n \"\$(\"$KRS_CLUSTER_BIN/kubectl\" --kubeconfig \"$KRS_ADMIN_KUBECONFIG\" logs $POD)\" ]]" ||
    krs_die "kubectl logs $POD returned nothing"
  krs_log "kubectl logs $POD: $(krs_kubectl logs "$POD")"
  krs_kubectl get pod "$POD" -o wide >&2
  krs_kubectl delete pod "$POD" --wait --timeout=60s >/dev/null
  krs_log "smoke test passed: busybox Running on $NODE, logs served through the apiserver"
fi
echo "NODE_NAME=$NODE"
echo "KUBECONFIG=$KRS_ADMIN_KUBECONFIG"
