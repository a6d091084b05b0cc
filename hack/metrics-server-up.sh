#!/usr/bin/env bash
# Starts metrics-server (built by hack/lib/metrics-server-build.sh from e2e/metrics-server)
# for the test control plane of hack/cluster-up.sh, so `kubectl top` works:
#   * metrics-server on 127.0.0.1:$KRS_METRICS_SERVER_PORT (default 4443), detached, with the
#     admin kubeconfig (API, delegated authentication/authorization, and its client
#     certificate towards the kubelets, which authorize it as system:masters), scraping every
#     kubelet's `/metrics/resource` on the node's InternalIP and status port every
#     $KRS_METRICS_RESOLUTION (default 15s), kubelet serving certificates checked against the
#     harness's kubelet CA;
#   * the APIService v1beta1.metrics.k8s.io, reached through Service kube-system/metrics-server
#     of type ExternalName `localhost` (the aggregator resolves an ExternalName service to
#     its name; there is no kube-proxy for a ClusterIP), TLS not verified (self-signed).
# Idempotent; the last stdout line is METRICS_SERVER=https://127.0.0.1:<port>.
# Needs the control plane up (hack/cluster-up.sh). Stop with hack/metrics-server-down.sh.
set -euo pipefail
KRS_REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/cluster.sh
source "$KRS_REPO_ROOT/hack/lib/cluster.sh"
PORT=${KRS_METRICS_SERVER_PORT:-4443}
RESOLUTION=${KRS_METRICS_RESOLUTION:-15s}
MS_BIN=${KRS_METRICS_SERVER_BIN:-$KRS_REPO_ROOT/_output/bin}

KRS_METRICS_SERVER_BIN=$MS_BIN "$KRS_REPO_ROOT/hack/lib/metrics-server-build.sh" >&2
krs_cluster_lock
P=$KRS_PKI_DIR
[[ -f "$KRS_ADMIN_KUBECONFIG" ]] || krs_die "no control plane (run hack/cluster-up.sh)"
mkdir -p "$KRS_CLUSTER_DIR/metrics-server"
krs_start metrics-server "$MS_BIN/metrics-server" \
  --kubeconfig "$KRS_ADMIN_KUBECONFIG" \
  --authentication-kubeconfig "$KRS_ADMIN_KUBECONFIG" \
  --authorization-kubeconfig "$KRS_ADMIN_KUBECONFIG" \
  --bind-address 127.0.0.1 --secure-port "$PORT" \
  --cert-dir "$KRS_CLUSTER_DIR/metrics-server" \
  --kubelet-use-node-status-port \
  --kubelet-preferred-address-types InternalIP,Hostname \
  --kubelet-certificate-authority "$P/kubelet-ca.crt" \
  --metric-resolution "$RESOLUTION" \
  --v 1

krs_kubectl apply -f - >/dev/null <<EOF_OBJECTS
apiVersion: v1
kind: Service
metadata:
  name: metrics-server
  namespace: kube-system
  labels: {app.kubernetes.io/managed-by: kubelet-rs-harness}
spec:
  type: ExternalName
  externalName: localhost
  ports:
  - {name: https, port: $PORT, protocol: TCP}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.metrics.k8s.io
  labels: {app.kubernetes.io/managed-by: kubelet-rs-harness}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service: {name: metrics-server, namespace: kube-system, port: $PORT}
EOF_OBJECTS
available() {
  [[ "$(krs_kubectl get apiservice v1beta1.metrics.k8s.io \
    -o jsonpath='{.status.conditions[?(@.type=="Available")].status}')" == True ]]
}
krs_wait 120 "APIService v1beta1.metrics.k8s.io Available" available ||
  krs_die "metrics-server not available; see $KRS_LOG_DIR/metrics-server.log"
echo "METRICS_SERVER=https://127.0.0.1:$PORT"
