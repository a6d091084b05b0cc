#!/usr/bin/env bash
# Starts the test control plane: etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler (upstream v1.35.4, built from e2e/cluster/ when missing or stale), all on
# 127.0.0.1, with all state in $KRS_CLUSTER_DIR (default /var/lib/kubelet-rs-test/cluster).
#
# Idempotent: components already running are kept; the script returns once /readyz is ok,
# the controllers and scheduler are healthy and the default ServiceAccount exists.
# Prints KRS_CLUSTER_DIR=, KRS_CLUSTER_BIN=, KRS_APISERVER_URL= and, last,
# KUBECONFIG=<admin kubeconfig path> on stdout (progress goes to stderr).
#
# Settings: see hack/lib/cluster.sh. Stop with hack/cluster-down.sh.
set -euo pipefail
# shellcheck source=lib/cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"

[[ $(id -u) == 0 ]] || krs_die "cluster-up.sh must run as root (it adds $KRS_CLUSTER_HOST_IP to lo)"
mkdir -p "$KRS_CLUSTER_DIR" "$KRS_RUN_DIR" "$KRS_LOG_DIR"
# One cluster-up/down at a time (several test processes may call this concurrently).
krs_cluster_lock

"$KRS_REPO_ROOT/hack/lib/cluster-build.sh" >&2
krs_ensure_lo_ip "$KRS_CLUSTER_HOST_IP"
"$KRS_CLUSTER_BIN/krs-pki" control-plane --dir "$KRS_PKI_DIR" --server "$KRS_APISERVER_URL" \
  --advertise-ip "$KRS_CLUSTER_HOST_IP" --service-ip "$KRS_SERVICE_IP" >&2

P=$KRS_PKI_DIR
ETCD_URL="http://127.0.0.1:$KRS_ETCD_PORT"
ETCD_PEER_URL="http://127.0.0.1:$((KRS_ETCD_PORT + 1))"

start_etcd() {
  mkdir -p "$KRS_CLUSTER_DIR/etcd" && chmod 700 "$KRS_CLUSTER_DIR/etcd"
  krs_start etcd "$KRS_CLUSTER_BIN/etcd" \
    --name krs --data-dir "$KRS_CLUSTER_DIR/etcd" \
    --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
    --listen-peer-urls "$ETCD_PEER_URL" --initial-advertise-peer-urls "$ETCD_PEER_URL" \
    --initial-cluster "krs=$ETCD_PEER_URL" \
    --unsafe-no-fsync --log-level warn
  krs_wait 60 "etcd health" curl -fsS "$ETCD_URL/health"
}

# Audit log of the requests the kubelets make (users in group system:nodes, one line per
# request at ResponseComplete): bench/ counts API requests per node from it.
write_audit_policy() {
  cat > "$KRS_CLUSTER_DIR/audit-policy.yaml" <<'EOF_POLICY'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  userGroups: ["system:nodes"]
- level: None
EOF_POLICY
}

start_apiserver() {
  write_audit_policy
  krs_start kube-apiserver "$KRS_CLUSTER_BIN/kube-apiserver" \
    --etcd-servers "$ETCD_URL" \
    --bind-address 127.0.0.1 --secure-port "$KRS_APISERVER_PORT" \
    --advertise-address "$KRS_CLUSTER_HOST_IP" \
    --tls-cert-file "$P/apiserver.crt" --tls-private-key-file "$P/apiserver.key" \
    --client-ca-file "$P/ca.crt" \
    --requestheader-client-ca-file "$P/front-proxy-ca.crt" \
    --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User \
    --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$P/front-proxy-client.crt" \
    --proxy-client-key-file "$P/front-proxy-client.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$P/sa.pub" --service-account-signing-key-file "$P/sa.key" \
    --service-cluster-ip-range "$KRS_SERVICE_CIDR" \
    --authorization-mode Node,RBAC \
    --enable-bootstrap-token-auth \
    --enable-admission-plugins NodeRestriction \
    --allow-privileged=true \
    --kubelet-client-certificate "$P/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$P/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$P/kubelet-ca.crt" \
    --kubelet-preferred-address-types InternalIP,Hostname \
    --cert-dir "$KRS_CLUSTER_DIR/apiserver-certs" \
    --audit-policy-file "$KRS_CLUSTER_DIR/audit-policy.yaml" \
    --audit-log-path "$KRS_LOG_DIR/audit.log" --audit-log-format json \
    --audit-log-maxsize 200 --audit-log-maxbackup 1 \
    --v 1
  krs_wait 180 "kube-apiserver /readyz" readyz_ok
}

readyz_ok() { [[ "$(krs_kubectl get --raw /readyz 2>/dev/null)" == ok ]]; }

start_controller_manager() {
  local kc="$P/controller-manager.kubeconfig"
  krs_start kube-controller-manager "$KRS_CLUSTER_BIN/kube-controller-manager" \
    --kubeconfig "$kc" --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
    --bind-address 127.0.0.1 --secure-port "$KRS_KCM_PORT" \
    --leader-elect=false --use-service-account-credentials=true \
    --controllers '*,bootstrapsigner,tokencleaner' \
    --service-account-private-key-file "$P/sa.key" --root-ca-file "$P/ca.crt" \
    --cluster-signing-cert-file "$P/ca.crt" --cluster-signing-key-file "$P/ca.key" \
    --service-cluster-ip-range "$KRS_SERVICE_CIDR" \
    --v 1
}

start_scheduler() {
  local kc="$P/scheduler.kubeconfig"
  krs_start kube-scheduler "$KRS_CLUSTER_BIN/kube-scheduler" \
    --kubeconfig "$kc" --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
    --bind-address 127.0.0.1 --secure-port "$KRS_SCHEDULER_PORT" \
    --leader-elect=false --v 1
}

healthz_ok() { [[ "$(curl -fsSk "https://127.0.0.1:$1/healthz" 2>/dev/null)" == ok ]]; }

# The apiserver authenticates to kubelets as kube-apiserver-kubelet-client; this grants it
# the kubelet API (logs, exec, attach, port-forward) through the kubelets' webhook authz.
bind_kubelet_api_admin() {
  krs_kubectl create clusterrolebinding kube-apiserver-kubelet-api-admin \
    --clusterrole system:kubelet-api-admin --user kube-apiserver-kubelet-client \
    --dry-run=client -o yaml | krs_kubectl apply -f - >/dev/null
}

# TLS bootstrap as kubeadm sets it up (`kubeadm init` phase bootstrap-token): bootstrap
# tokens (hack/cluster-bootstrap-token.sh) carry the group
# system:bootstrappers:kubeadm:default-node-token, which may create node client CSRs, and
# the controller-manager's csrapproving approves them (nodeclient) and the renewals nodes
# request with their own certificate (selfnodeclient). Serving CSRs (kubelet-serving) are
# not auto-approved, as upstream: `kubectl certificate approve` them.
bind_node_bootstrap() {
  local group=system:bootstrappers:kubeadm:default-node-token
  {
    krs_kubectl create clusterrolebinding kubeadm:kubelet-bootstrap \
      --clusterrole system:node-bootstrapper --group "$group" --dry-run=client -o yaml
    echo ---
    krs_kubectl create clusterrolebinding kubeadm:node-autoapprove-bootstrap \
      --clusterrole system:certificates.k8s.io:certificatesigningrequests:nodeclient \
      --group "$group" --dry-run=client -o yaml
    echo ---
    krs_kubectl create clusterrolebinding kubeadm:node-autoapprove-certificate-rotation \
      --clusterrole system:certificates.k8s.io:certificatesigningrequests:selfnodeclient \
      --group system:nodes --dry-run=client -o yaml
  } | krs_kubectl apply -f - >/dev/null
}

# A control plane started by an older cluster-up.sh keeps its flags (components already
# running are kept): say which ones it lacks.
warn_stale_flags() {
  local pid
  pid=$(krs_pid kube-apiserver) && ! tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- --enable-bootstrap-token-auth &&
    krs_log "warning: the running kube-apiserver does not accept bootstrap tokens (started without --enable-bootstrap-token-auth); restart the control plane (hack/cluster-down.sh, hack/cluster-up.sh) for TLS bootstrap"
  return 0
}

die_with_log() {
  echo "---- last lines of $KRS_LOG_DIR/$1.log ----" >&2
  tail -n 30 "$KRS_LOG_DIR/$1.log" >&2 || true
  krs_die "$1 did not become ready"
}

start_etcd || die_with_log etcd
start_apiserver || die_with_log kube-apiserver
start_controller_manager
start_scheduler
krs_wait 60 "kube-controller-manager /healthz" healthz_ok "$KRS_KCM_PORT" || die_with_log kube-controller-manager
krs_wait 60 "kube-scheduler /healthz" healthz_ok "$KRS_SCHEDULER_PORT" || die_with_log kube-scheduler
bind_kubelet_api_admin
bind_node_bootstrap
warn_stale_flags
# Pods can be created once the controllers made the default ServiceAccount and published
# kube-root-ca.crt (both needed by the projected service-account token volume).
krs_wait 60 "default ServiceAccount" krs_kubectl -n default get serviceaccount default ||
  die_with_log kube-controller-manager
krs_wait 60 "kube-root-ca.crt ConfigMap" krs_kubectl -n default get configmap kube-root-ca.crt ||
  die_with_log kube-controller-manager
krs_log "control plane ready: $KRS_APISERVER_URL (state in $KRS_CLUSTER_DIR)"
echo "KRS_CLUSTER_DIR=$KRS_CLUSTER_DIR"
echo "KRS_CLUSTER_BIN=$KRS_CLUSTER_BIN"
echo "KRS_APISERVER_URL=$KRS_APISERVER_URL"
echo "KUBECONFIG=$KRS_ADMIN_KUBECONFIG"
