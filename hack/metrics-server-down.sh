#!/usr/bin/env bash
# Stops what hack/metrics-server-up.sh started: the APIService, its Service, metrics-server.
set -euo pipefail
KRS_REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/cluster.sh
source "$KRS_REPO_ROOT/hack/lib/cluster.sh"
krs_cluster_lock
if [[ -f "$KRS_ADMIN_KUBECONFIG" ]]; then
  krs_kubectl delete apiservice v1beta1.metrics.k8s.io --ignore-not-found >/dev/null || true
  krs_kubectl -n kube-system delete service metrics-server --ignore-not-found >/dev/null || true
fi
krs_stop metrics-server
