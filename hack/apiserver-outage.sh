#!/usr/bin/env bash
# Takes the test kube-apiserver away for SECONDS seconds, then brings it back with
# hack/cluster-up.sh and returns once it is ready (for tests of how kubelets live through an
# API server outage).
#
#   hack/apiserver-outage.sh SECONDS
#
# Every user of the control plane sees the outage. It is serialised with other disruptions
# by $KRS_DISRUPT_LOCK (default /var/lib/kubelet-rs-test/cluster-disrupt.lock, waited for up
# to 1500 s), and it holds the cluster lock while the API server is down, so a concurrent
# hack/cluster-up.sh waits instead of restarting it early. Prints APISERVER_STOPPED=<unix ms>
# and APISERVER_RETURNED=<unix ms> (when /readyz answered ok again).
set -euo pipefail
HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/cluster.sh
source "$HACK/lib/cluster.sh"

secs=${1:-}
[[ $secs =~ ^[0-9]+$ ]] || krs_die "usage: apiserver-outage.sh SECONDS"
[[ $(id -u) == 0 ]] || krs_die "apiserver-outage.sh must run as root"
lock=${KRS_DISRUPT_LOCK:-$(dirname "$KRS_CLUSTER_DIR")/cluster-disrupt.lock}

exec 7>"$lock"
flock -w 1500 7 || krs_die "could not take $lock within 1500 s"
krs_cluster_lock
krs_pid kube-apiserver >/dev/null || krs_die "kube-apiserver is not running (hack/cluster-up.sh)"
krs_stop kube-apiserver 30
echo "APISERVER_STOPPED=$(date +%s%3N)"
krs_log "kube-apiserver stopped for ${secs}s"
sleep "$secs"
flock -u 8
exec 8>&-
# cluster-up.sh starts the API server again; neither it nor the daemon inherits fd 7.
"$HACK/cluster-up.sh" 7>&- >/dev/null
echo "APISERVER_RETURNED=$(date +%s%3N)"
krs_log "kube-apiserver is back"
