#!/usr/bin/env bash
# Tear down the private containerd test runtime of kubelet-rs (idempotent).
#
#   hack/runtime-down.sh           # stop every container and the daemon, unmount, remove krs0
#   hack/runtime-down.sh --purge   # ...and delete $KRS_RUNTIME_DIR (images are rebuilt next up)
#
# Leaves no process (containerd, shims, containers) and no mount under
# $KRS_RUNTIME_DIR behind. See hack/README.md.
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib/runtime.sh
source "$HACK_DIR/lib/runtime.sh"
# shellcheck source=lib/runtime-daemon.sh
source "$HACK_DIR/lib/runtime-daemon.sh"
# shellcheck source=lib/runtime-cni.sh
source "$HACK_DIR/lib/runtime-cni.sh"
# shellcheck source=lib/runtime-cleanup.sh
source "$HACK_DIR/lib/runtime-cleanup.sh"

purge=0
for arg in "$@"; do
	case "$arg" in
	--purge) purge=1 ;;
	-h | --help)
		sed -n '2,8p' "$0"
		exit 0
		;;
	*) krs_die "unknown argument '$arg' (usage: runtime-down.sh [--purge])" ;;
	esac
done
[ "$(id -u)" -eq 0 ] || krs_die "runtime-down.sh must run as root"

start_ms="$(krs_now_ms)"

# kill_leftovers : shims serving our socket (the daemon may already be dead)
# and the container processes under them.
kill_leftovers() {
	local shim child
	for shim in $(krs_shim_pids); do
		# shellcheck disable=SC2013 # one pid per line
		for child in $(awk -v p="$shim" '$4 == p { print $1 }' /proc/[0-9]*/stat 2>/dev/null); do
			kill -KILL "$child" 2>/dev/null || true
		done
		kill -KILL "$shim" 2>/dev/null || true
	done
}

# start_for_cleanup : when the daemon died (killed with its shims, e.g. at the end
# of a session) its metadata still lists the containers and sandboxes, which a
# later up would show as exited/NOTREADY. Start it once to delete them properly.
start_for_cleanup() {
	krs_find_daemon_pid >/dev/null && return 0
	[ -f "$KRS_CONFIG" ] && [ -d "$KRS_RUNTIME_DIR/root/io.containerd.metadata.v1.bolt" ] || return 0
	command -v containerd >/dev/null || return 0
	krs_log "containerd is not running; starting it to delete leftover containers"
	(krs_start_daemon) || krs_log "could not start containerd; cleaning up without it"
}

if [ -d "$KRS_RUNTIME_DIR" ]; then
	krs_lock
	start_for_cleanup
	krs_remove_workloads
	krs_stop_daemon
	kill_leftovers
	krs_unmount_under "$KRS_RUNTIME_DIR"
	krs_remove_stale_cri_state
	rm -rf "${KRS_CNI_IPAM_DIR:?}"/* "$KRS_RUNTIME_DIR/runc"/* 2>/dev/null || true
fi
krs_cni_cleanup_iptables
if ip link show "$KRS_CNI_BRIDGE" >/dev/null 2>&1; then
	ip link delete "$KRS_CNI_BRIDGE" || krs_log "could not delete bridge $KRS_CNI_BRIDGE"
fi

leftover="$(krs_mounts_under "$KRS_RUNTIME_DIR")"
[ -z "$leftover" ] || krs_die "mounts left under $KRS_RUNTIME_DIR: $leftover"
[ -z "$(krs_shim_pids)" ] || krs_die "containerd shims still running for $KRS_SOCK"

if [ "$purge" = 1 ] && [ -d "$KRS_RUNTIME_DIR" ]; then
	krs_log "purging $KRS_RUNTIME_DIR"
	rm -rf "$KRS_RUNTIME_DIR"
fi
krs_log "runtime down in $(($(krs_now_ms) - start_ms)) ms"
