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

# remove_workloads : through the live daemon, kill every task, tear down the
# network of every CRI sandbox, delete tasks and containers (with snapshots).
remove_workloads() {
	local ns id netns
	krs_socket_answers || return 0
	for ns in $(krs_ctr namespaces ls -q); do
		for id in $(krs_ctr -n "$ns" tasks ls -q); do
			krs_ctr -n "$ns" tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1 || true
		done
		for id in $(krs_ctr -n "$ns" tasks ls -q); do
			krs_ctr -n "$ns" tasks delete -f "$id" >/dev/null 2>&1 ||
				krs_log "could not delete task $ns/$id"
		done
	done
	while read -r id netns; do
		[ -n "$id" ] || continue
		krs_cni_exec DEL "$id" "$netns" || krs_log "CNI DEL of sandbox $id failed"
	done < <(krs_cni_sandboxes)
	for ns in $(krs_ctr namespaces ls -q); do
		for id in $(krs_ctr -n "$ns" containers ls -q); do
			krs_ctr -n "$ns" containers delete "$id" >/dev/null 2>&1 ||
				krs_log "could not delete container $ns/$id"
		done
	done
}

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

unmount_all() {
	local m
	for m in $(krs_mounts_under "$KRS_RUNTIME_DIR"); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || krs_log "could not unmount $m"
	done
}

if [ -d "$KRS_RUNTIME_DIR" ]; then
	krs_lock
	remove_workloads
	krs_stop_daemon
	kill_leftovers
	unmount_all
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
