#!/usr/bin/env bash
# Bring up the private containerd test runtime of kubelet-rs (idempotent).
#
#   hack/runtime-up.sh            # as root; prints CONTAINER_RUNTIME_ENDPOINT=unix://... last
#
# Another runtime (a cluster node's): KRS_RUNTIME_DIR, KRS_CNI_BRIDGE, KRS_CNI_SUBNET,
# KRS_CNI_NETWORK (hack/lib/runtime.sh; hack/lib/cluster-node.sh picks them per node).
#
# Installs missing Debian packages, writes config under $KRS_RUNTIME_DIR
# (default /var/lib/kubelet-rs-test/runtime), starts containerd if it is not
# running, builds and imports the pause and busybox images. Safe to run
# concurrently (flock); a few hundred milliseconds when everything is up.
# See hack/README.md.
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib/runtime.sh
source "$HACK_DIR/lib/runtime.sh"
# shellcheck source=lib/runtime-packages.sh
source "$HACK_DIR/lib/runtime-packages.sh"
# shellcheck source=lib/runtime-images.sh
source "$HACK_DIR/lib/runtime-images.sh"
# shellcheck source=lib/runtime-config.sh
source "$HACK_DIR/lib/runtime-config.sh"
# shellcheck source=lib/runtime-daemon.sh
source "$HACK_DIR/lib/runtime-daemon.sh"
# shellcheck source=lib/runtime-cni.sh
source "$HACK_DIR/lib/runtime-cni.sh"
# shellcheck source=lib/runtime-cleanup.sh
source "$HACK_DIR/lib/runtime-cleanup.sh"

[ "$(id -u)" -eq 0 ] || krs_die "runtime-up.sh must run as root"

start_ms="$(krs_now_ms)"
krs_lock
krs_install_packages
krs_check_network
krs_write_config

if pid="$(krs_find_daemon_pid)"; then
	if [ "$KRS_CONFIG_CHANGED" = 1 ]; then
		krs_log "config.toml changed; restarting containerd"
		krs_stop_daemon
		krs_start_daemon
	elif ! krs_socket_answers; then
		krs_log "containerd (pid $pid) does not answer; restarting it"
		krs_stop_daemon
		krs_start_daemon
	fi
else
	# Nothing of ours runs: whatever containers the metadata still lists died with
	# the previous daemon (e.g. every process was killed at the end of a session).
	# Delete them so tests start from an empty runtime.
	[ -n "$(krs_shim_pids)" ] && stale=0 || stale=1
	krs_start_daemon
	if [ "$stale" = 1 ] && [ "$(krs_count_containers)" -gt 0 ]; then
		krs_log "deleting containers left by a previous containerd that died"
		krs_remove_workloads
		# The CRI plugin loaded them into memory at startup: restart it on the
		# now empty metadata.
		krs_stop_daemon
		krs_remove_stale_cri_state
		krs_cni_cleanup_iptables
		krs_start_daemon
	fi
fi
krs_check_plugins
krs_images_up

if ! iptables -t nat -S >/dev/null 2>&1; then
	krs_log "WARNING: 'iptables -t nat -S' fails: the CNI portmap plugin will not work"
fi

krs_log "runtime up in $(($(krs_now_ms) - start_ms)) ms (snapshotter $KRS_SNAPSHOTTER_IN_USE)"
echo "KRS_RUNTIME_DIR=$KRS_RUNTIME_DIR"
echo "KRS_SNAPSHOTTER=$KRS_SNAPSHOTTER_IN_USE"
echo "KRS_PAUSE_IMAGE=$KRS_PAUSE_IMAGE"
echo "KRS_BUSYBOX_IMAGE=$KRS_BUSYBOX_IMAGE"
echo "KRS_CNI_BRIDGE=$KRS_CNI_BRIDGE"
echo "KRS_CNI_SUBNET=$KRS_CNI_SUBNET"
echo "CONTAINER_RUNTIME_ENDPOINT=unix://$KRS_SOCK"
