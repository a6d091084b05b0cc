# shellcheck shell=bash disable=SC2034
# Shared settings and helpers for hack/cluster-*.sh and hack/upstream-kubelet-*.sh.
# Source it; it defines variables and functions only (no side effects).
#
# Every setting can be overridden from the environment:
#   KRS_CLUSTER_DIR      state directory (default /var/lib/kubelet-rs-test/cluster)
#   KRS_CLUSTER_BIN      built binaries (default <repo>/_output/bin)
#   KRS_APISERVER_PORT   6443     KRS_ETCD_PORT 2379 (peer: +1)
#   KRS_KCM_PORT         10257    KRS_SCHEDULER_PORT 10259
#   KRS_CLUSTER_HOST_IP  198.18.255.1  apiserver advertise address, added to lo as a /32
#   KRS_SERVICE_CIDR     198.18.254.0/24
# All listeners are on 127.0.0.1, except kubelets, which must listen on their node IP
# (a 198.18.255.0/24 address on lo: the kubelet refuses a loopback node IP).

KRS_REPO_ROOT=${KRS_REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
KRS_CLUSTER_DIR=${KRS_CLUSTER_DIR:-/var/lib/kubelet-rs-test/cluster}
KRS_CLUSTER_BIN=${KRS_CLUSTER_BIN:-$KRS_REPO_ROOT/_output/bin}
KRS_APISERVER_PORT=${KRS_APISERVER_PORT:-6443}
KRS_ETCD_PORT=${KRS_ETCD_PORT:-2379}
KRS_KCM_PORT=${KRS_KCM_PORT:-10257}
KRS_SCHEDULER_PORT=${KRS_SCHEDULER_PORT:-10259}
KRS_CLUSTER_HOST_IP=${KRS_CLUSTER_HOST_IP:-198.18.255.1}
KRS_SERVICE_CIDR=${KRS_SERVICE_CIDR:-198.18.254.0/24}
KRS_SERVICE_IP=${KRS_SERVICE_IP:-198.18.254.1}
KRS_APISERVER_URL="https://127.0.0.1:$KRS_APISERVER_PORT"

KRS_PKI_DIR="$KRS_CLUSTER_DIR/pki"
KRS_RUN_DIR="$KRS_CLUSTER_DIR/run"
KRS_LOG_DIR="$KRS_CLUSTER_DIR/logs"
KRS_ADMIN_KUBECONFIG="$KRS_PKI_DIR/admin.kubeconfig"
# Control-plane components in start order; cluster-down stops them in reverse.
KRS_CONTROL_PLANE=(etcd kube-apiserver kube-controller-manager kube-scheduler)

krs_log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
krs_die() { echo "error: $*" >&2; exit 1; }

# krs_cluster_lock: serializes cluster-up/down and node scripts (fd 8; daemons started by
# krs_start do not inherit it). Released when the calling script exits.
krs_cluster_lock() {
  mkdir -p "$KRS_CLUSTER_DIR"
  exec 8>"$KRS_CLUSTER_DIR/.lock"
  flock 8
}

krs_kubectl() { "$KRS_CLUSTER_BIN/kubectl" --kubeconfig "$KRS_ADMIN_KUBECONFIG" "$@"; }

# krs_pid NAME: prints the pid recorded for NAME if that process is still alive and still
# runs the binary we started (guards against pid reuse); returns 1 otherwise.
krs_pid() {
  local pidfile="$KRS_RUN_DIR/$1.pid" pid exe
  [[ -f "$pidfile" ]] || return 1
  read -r pid exe < "$pidfile" || return 1
  [[ -n "$pid" && -d "/proc/$pid" ]] || return 1
  local running
  running=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  # A rebuilt binary shows as "<path> (deleted)" for processes started before the rebuild.
  [[ "${running% (deleted)}" == "$exe" ]] || return 1
  echo "$pid"
}

# krs_start NAME BINARY ARGS...: starts BINARY detached (own session, so it outlives the
# caller and can be stopped as a group), logging to $KRS_LOG_DIR/NAME.log.
krs_start() {
  local name=$1 bin=$2; shift 2
  mkdir -p "$KRS_RUN_DIR" "$KRS_LOG_DIR"
  if krs_pid "$name" >/dev/null; then
    krs_log "$name already running (pid $(krs_pid "$name"))"
    return 0
  fi
  krs_log "starting $name (log: $KRS_LOG_DIR/$name.log)"
  setsid "$bin" "$@" >>"$KRS_LOG_DIR/$name.log" 2>&1 < /dev/null 8>&- 9>&- &
  echo "$! $(readlink -f "$bin")" > "$KRS_RUN_DIR/$name.pid"
}

# krs_stop NAME [TIMEOUT_S]: SIGTERM to NAME's session, SIGKILL after TIMEOUT_S (default 15).
krs_stop() {
  local name=$1 timeout=${2:-15} pid i
  if ! pid=$(krs_pid "$name"); then
    rm -f "$KRS_RUN_DIR/$name.pid"
    return 0
  fi
  krs_log "stopping $name (pid $pid)"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < timeout * 10; i++)); do
    [[ -d "/proc/$pid" ]] || break
    sleep 0.1
  done
  if [[ -d "/proc/$pid" ]]; then
    krs_log "$name did not exit in ${timeout}s; killing"
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do [[ -d "/proc/$pid" ]] || break; sleep 0.1; done
  fi
  rm -f "$KRS_RUN_DIR/$name.pid"
}

# krs_wait TIMEOUT_S WHAT CMD...: retries CMD every 0.5 s until it succeeds.
krs_wait() {
  local timeout=$1 what=$2 deadline; shift 2
  deadline=$(( $(date +%s) + timeout ))
  until "$@" >/dev/null 2>&1; do
    if (( $(date +%s) >= deadline )); then
      krs_log "timed out after ${timeout}s waiting for $what"
      return 1
    fi
    sleep 0.5
  done
}

# krs_ensure_lo_ip IP: adds IP/32 to lo (idempotent). Such an address is local-only, like
# 127.0.0.1, but is not "loopback" to the kubelet's node-IP validation.
# (grep without -q: with pipefail, grep -q exiting early could fail `ip` with SIGPIPE.)
krs_ensure_lo_ip() {
  ip -4 addr show dev lo | grep -F " $1/32 " >/dev/null || ip addr add "$1/32" dev lo
}

krs_remove_lo_ip() {
  if ip -4 addr show dev lo | grep -F " $1/32 " >/dev/null; then ip addr del "$1/32" dev lo; fi
}

# krs_unmount_under DIR: unmounts everything mounted at or below DIR, deepest first.
krs_unmount_under() {
  local dir mp
  dir=$(readlink -f "$1" 2>/dev/null) || return 0
  awk '{print $5}' /proc/self/mountinfo | sed 's/\\040/ /g' | sort -r | while read -r mp; do
    if [[ "$mp" == "$dir" || "$mp" == "$dir"/* ]]; then
      umount "$mp" 2>/dev/null || umount -l "$mp" || true
    fi
  done
}

# krs_mounts_under DIR: prints mount points at or below DIR (empty output = none left).
krs_mounts_under() {
  local dir
  dir=$(readlink -f "$1" 2>/dev/null) || return 0
  awk -v d="$dir" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo
}
