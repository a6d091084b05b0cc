# shellcheck shell=bash
# Delete every container of the test runtime through the live daemon.
# Needs hack/lib/runtime.sh and hack/lib/runtime-cni.sh sourced first.

# krs_remove_workloads : through the live daemon, kill every task, tear down the
# network of every CRI sandbox, delete tasks and containers (with snapshots).
krs_remove_workloads() {
	local ns id netns
	krs_socket_answers || return 0
	for ns in $(krs_ctr namespaces ls -q); do
		for id in $(krs_ctr -n "$ns" tasks ls -q); do
			krs_ctr -n "$ns" tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1 || true
		done
		# The CRI plugin deletes the tasks it sees exit, so "not found" is fine here.
		for id in $(krs_ctr -n "$ns" tasks ls -q); do
			krs_ctr -n "$ns" tasks delete -f "$id" >/dev/null 2>&1 || true
		done
		for id in $(krs_ctr -n "$ns" tasks ls -q); do
			krs_log "task $ns/$id survived SIGKILL and delete"
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

# krs_count_containers : number of containers in every namespace.
krs_count_containers() {
	local ns n=0
	for ns in $(krs_ctr namespaces ls -q); do
		n=$((n + $(krs_ctr -n "$ns" containers ls -q | wc -l)))
	done
	printf '%s\n' "$n"
}

# krs_remove_stale_cri_state : after krs_remove_workloads deleted containers behind
# the CRI plugin's back, unmount and delete the sandbox shm and netns it leaves.
krs_remove_stale_cri_state() {
	local cri="$KRS_RUNTIME_DIR/state/io.containerd.grpc.v1.cri"
	krs_unmount_under "$cri"
	rm -rf "$cri/netns"/* "$cri/sandboxes"/* "$KRS_RUNTIME_DIR/root/io.containerd.grpc.v1.cri/sandboxes"/* \
		"$KRS_RUNTIME_DIR/root/io.containerd.grpc.v1.cri/containers"/* 2>/dev/null || true
}
