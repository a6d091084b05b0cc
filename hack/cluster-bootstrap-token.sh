#!/usr/bin/env bash
# Creates a bootstrap token in the test cluster (hack/cluster-up.sh), as
# `kubeadm token create` does: Secret kube-system/bootstrap-token-<id> of type
# bootstrap.kubernetes.io/token, usable for authentication and signing, in the group
# system:bootstrappers:kubeadm:default-node-token (which cluster-up lets create node client
# CSRs that the controller-manager approves).
#
# Usage: hack/cluster-bootstrap-token.sh [--ttl-seconds N (default 3600)] [--kubeconfig PATH]
#   --kubeconfig PATH   also write a bootstrap kubeconfig there (the cluster's server and CA,
#                       user = the token): a kubelet's --bootstrap-kubeconfig.
# Prints BOOTSTRAP_TOKEN=<id>.<secret> on stdout.
set -euo pipefail
# shellcheck source=lib/cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"

ttl=3600 kubeconfig=
while [[ $# -gt 0 ]]; do
  case $1 in
    --ttl-seconds) ttl=$2; shift 2 ;;
    --kubeconfig) kubeconfig=$2; shift 2 ;;
    *) krs_die "unknown argument $1 (see the header of $0)" ;;
  esac
done
[[ $ttl =~ ^[0-9]+$ ]] || krs_die "--ttl-seconds must be a number of seconds"

rand() { LC_ALL=C tr -dc 'a-z0-9' < /dev/urandom | head -c "$1" || true; }
id=$(rand 6) secret=$(rand 16)
expiration=$(date -u -d "+$ttl seconds" +%Y-%m-%dT%H:%M:%SZ)

krs_kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: bootstrap-token-$id
  namespace: kube-system
type: bootstrap.kubernetes.io/token
stringData:
  description: "kubelet-rs test bootstrap token (hack/cluster-bootstrap-token.sh)"
  token-id: "$id"
  token-secret: "$secret"
  expiration: "$expiration"
  usage-bootstrap-authentication: "true"
  usage-bootstrap-signing: "true"
  auth-extra-groups: "system:bootstrappers:kubeadm:default-node-token"
YAML

if [[ -n $kubeconfig ]]; then
  mkdir -p "$(dirname "$kubeconfig")"
  (umask 077 && cat > "$kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: krs
  cluster:
    server: $KRS_APISERVER_URL
    certificate-authority: $KRS_PKI_DIR/ca.crt
users:
- name: kubelet-bootstrap
  user:
    token: $id.$secret
contexts:
- name: krs
  context:
    cluster: krs
    user: kubelet-bootstrap
current-context: krs
YAML
  )
  krs_log "wrote bootstrap kubeconfig $kubeconfig (token expires $expiration)"
fi
echo "BOOTSTRAP_TOKEN=$id.$secret"
