# shellcheck shell=bash disable=SC2034
# Common settings and helpers for hack/runtime-up.sh and hack/runtime-down.sh:
# the private containerd test runtime of kubelet-rs.
#
# Everything lives under one directory, $KRS_RUNTIME_DIR:
#   containerd.sock      gRPC socket (CRI + containerd API); ttrpc is containerd.sock.ttrpc
#   containerd.pid/.log  the daemon's pidfile and log
#   config.toml          containerd config (version 2)
#   root/ state/         containerd root and state (netns mounts under state/)
#   runc/                runc state of CRI containers (private runc --root)
#   cni/net.d/ cni/networks/   CNI conflist and host-local IPAM data
#   images/              cached OCI image tars built from images/
#   lock                 flock(1) lock serialising up/down
#
# Callers must `set -euo pipefail` before sourcing this file.

KRS_REPO_ROOT="${KRS_REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
KRS_RUNTIME_DIR="${KRS_RUNTIME_DIR:-/var/lib/kubelet-rs-test/runtime}"
KRS_SOCK="$KRS_RUNTIME_DIR/containerd.sock"
KRS_PIDFILE="$KRS_RUNTIME_DIR/containerd.pid"
KRS_LOG="$KRS_RUNTIME_DIR/containerd.log"
KRS_CONFIG="$KRS_RUNTIME_DIR/config.toml"
KRS_LOCK="$KRS_RUNTIME_DIR/lock"
KRS_CNI_CONF_DIR="$KRS_RUNTIME_DIR/cni/net.d"
KRS_CNI_IPAM_DIR="$KRS_RUNTIME_DIR/cni/networks"
KRS_CNI_BIN_DIR="${KRS_CNI_BIN_DIR:-/usr/lib/cni}"
# The CNI network. Test traffic never leaves 198.18.0.0/16 (RFC 2544 benchmarking range):
# every pod's only route is KRS_CNI_ROUTE, through its bridge.
#
# The default runtime (the one every Rust test uses) has bridge krs0 on the whole /16 and
# gives pods addresses from the lower half only, 198.18.0.2-198.18.127.254. The upper half
# is for the runtimes of cluster nodes (hack/lib/cluster-node.sh: one containerd per node,
# each with its own bridge and a /20 out of 198.18.128.0/17), except 198.18.254.0/24
# (service IPs) and 198.18.255.0/24 (the control plane's and the nodes' addresses on lo;
# see hack/lib/cluster.sh).
#
# Another runtime is chosen by the environment: KRS_RUNTIME_DIR, KRS_CNI_BRIDGE,
# KRS_CNI_SUBNET (its pods' range is the subnet without network, gateway and broadcast
# address) and KRS_CNI_NETWORK (the CNI network name; portmap's iptables comments name it).
# runtime-up.sh records them in $KRS_RUNTIME_DIR/network.env, which later runs (down, up)
# read for the settings the environment does not give.
KRS_CNI_ROUTE="198.18.0.0/16"
KRS_CNI_NETWORK_ENV="$KRS_RUNTIME_DIR/network.env"
krs_saved_network() {
	[ -f "$KRS_CNI_NETWORK_ENV" ] && sed -n "s/^$1=//p" "$KRS_CNI_NETWORK_ENV" | tail -n1
	return 0
}
KRS_CNI_BRIDGE="${KRS_CNI_BRIDGE:-$(krs_saved_network KRS_CNI_BRIDGE)}"
KRS_CNI_BRIDGE="${KRS_CNI_BRIDGE:-krs0}"
KRS_CNI_SUBNET="${KRS_CNI_SUBNET:-$(krs_saved_network KRS_CNI_SUBNET)}"
KRS_CNI_SUBNET="${KRS_CNI_SUBNET:-198.18.0.0/16}"
KRS_CNI_NETWORK="${KRS_CNI_NETWORK:-$(krs_saved_network KRS_CNI_NETWORK)}"
KRS_CNI_NETWORK="${KRS_CNI_NETWORK:-krs-bridge}"
if [ "$KRS_CNI_SUBNET" = 198.18.0.0/16 ]; then
	KRS_CNI_RANGE_START="198.18.0.2"
	KRS_CNI_RANGE_END="198.18.127.254"
else
	# A node subnet: everything but the network, gateway (.1) and broadcast addresses.
	KRS_CNI_RANGE_START=""
	KRS_CNI_RANGE_END=""
fi
# Tools live in sbin on Debian; CI may run with a minimal PATH.
case ":$PATH:" in
*:/usr/sbin:*) ;;
*) PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin" ;;
esac
export PATH

# krs_log MSG... : progress to stderr (stdout carries only the endpoint line).
krs_log() {
	printf '[runtime] %s\n' "$*" >&2
}

krs_die() {
	printf '[runtime] ERROR: %s\n' "$*" >&2
	exit 1
}

# krs_ctr ARGS... : ctr against our private socket.
krs_ctr() {
	ctr --address "$KRS_SOCK" "$@"
}

# krs_lock : take the exclusive lock on fd 9 (released when the script exits).
# The daemon must be started with `9>&-` so it does not inherit the lock.
krs_lock() {
	mkdir -p "$KRS_RUNTIME_DIR"
	exec 9>"$KRS_LOCK"
	if ! flock -w 600 9; then
		krs_die "could not lock $KRS_LOCK within 600s"
	fi
}

# krs_daemon_pid : print the pid of OUR containerd if it is alive.
# A pid is ours only if its command line names our config file, so a stale
# pidfile whose pid was reused by another process is never trusted.
krs_daemon_pid() {
	local pid
	[ -f "$KRS_PIDFILE" ] || return 1
	pid="$(cat "$KRS_PIDFILE" 2>/dev/null || true)"
	case "$pid" in '' | *[!0-9]*) return 1 ;; esac
	krs_alive "$pid" || return 1
	krs_cmdline "$pid" || return 1
	case "$KRS_CMDLINE" in
	*containerd*"$KRS_CONFIG"*) printf '%s\n' "$pid" ;;
	*) return 1 ;;
	esac
}

# krs_alive PID : the process exists and is not a zombie.
krs_alive() {
	local state
	state="$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" || return 1
	[ -n "$state" ] && [ "$state" != Z ]
}

# krs_socket_answers : true when `ctr version` gets an answer from the daemon.
krs_socket_answers() {
	[ -S "$KRS_SOCK" ] && krs_ctr version >/dev/null 2>&1
}

# krs_cmdline PID : set KRS_CMDLINE to the process's arguments joined by spaces.
# Bash builtins only, no subshell: scanning every process stays cheap.
krs_cmdline() {
	local -a args=()
	KRS_CMDLINE=""
	mapfile -d '' -t args 2>/dev/null <"/proc/$1/cmdline" || return 1
	KRS_CMDLINE="${args[*]-}"
}

# krs_shim_pids : pids of containerd-shim-runc-v2 processes serving our socket.
krs_shim_pids() {
	local d
	for d in /proc/[0-9]*; do
		krs_cmdline "${d#/proc/}" || continue
		case "$KRS_CMDLINE " in
		*containerd-shim*"-address $KRS_SOCK "*) printf '%s\n' "${d#/proc/}" ;;
		esac
	done
}

# krs_mounts_under DIR : mount points strictly under DIR, deepest first.
krs_mounts_under() {
	local dir="$1"
	awk -v d="$dir/" 'index($5, d) == 1 { print length($5) " " $5 }' /proc/self/mountinfo |
		sort -rn | cut -d' ' -f2- | uniq
}

# krs_unmount_under DIR : unmount everything mounted under DIR, deepest first.
krs_unmount_under() {
	local m
	for m in $(krs_mounts_under "$1"); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || krs_log "could not unmount $m"
	done
}

# krs_now_ms : wall clock in milliseconds, for timings in the log.
krs_now_ms() {
	date +%s%3N
}
