# shellcheck shell=bash
# Start and stop the private containerd daemon.

# krs_find_daemon_pid : our daemon's pid from the pidfile, else by scanning /proc
# for a containerd whose command line names our config (e.g. after a pidfile loss).
krs_find_daemon_pid() {
	local d
	krs_daemon_pid && return 0
	for d in /proc/[0-9]*; do
		krs_cmdline "${d#/proc/}" || continue
		case "$KRS_CMDLINE" in
		containerd\ --config\ "$KRS_CONFIG"\ *|*/containerd\ --config\ "$KRS_CONFIG"\ *)
			printf '%s\n' "${d#/proc/}" >"$KRS_PIDFILE"
			printf '%s\n' "${d#/proc/}"
			return 0
			;;
		esac
	done
	return 1
}

# krs_start_daemon : start containerd detached (own session, stdio to the log,
# without the lock fd 9 nor any other descriptor inherited from the caller — a caller's
# `flock FILE cmd` lock would otherwise be held by containerd for its whole life) and wait
# until its socket answers.
krs_start_daemon() {
	local pid deadline
	rm -f "$KRS_SOCK" "$KRS_SOCK.ttrpc"
	krs_log "starting containerd (log: $KRS_LOG)"
	printf '\n==== %s runtime-up.sh starting containerd\n' "$(date -u +%FT%TZ)" >>"$KRS_LOG"
	(
		cd /
		trap '' HUP
		for fd in /proc/self/fd/*; do
			fd=${fd##*/}
			if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
		done
		exec setsid containerd --config "$KRS_CONFIG" </dev/null >>"$KRS_LOG" 2>&1 9>&-
	) &
	local started="$!"
	printf '%s\n' "$started" >"$KRS_PIDFILE"
	deadline=$(($(date +%s) + 60))
	until krs_socket_answers; do
		# Until the forked subshell has exec'ed setsid and containerd, its command line
		# is the script's, so krs_find_daemon_pid does not recognise it yet.
		if ! pid="$(krs_find_daemon_pid)" && ! { krs_alive "$started" && pid="$started"; }; then
			tail -n 30 "$KRS_LOG" >&2
			krs_die "containerd exited during startup (see $KRS_LOG)"
		fi
		if [ "$(date +%s)" -ge "$deadline" ]; then
			tail -n 30 "$KRS_LOG" >&2
			krs_die "containerd (pid $pid) did not answer on $KRS_SOCK within 60s"
		fi
		sleep 0.1
	done
}

# krs_check_plugins : the CRI plugin and the snapshotter must have loaded; a bad
# config option makes containerd skip the CRI plugin yet still serve ctr.
krs_check_plugins() {
	local listing
	listing="$(krs_ctr plugins ls 2>&1)" || krs_die "ctr plugins ls failed: $listing"
	local want
	for want in "io.containerd.grpc.v1 cri" "io.containerd.snapshotter.v1 $KRS_SNAPSHOTTER_IN_USE"; do
		if ! awk -v t="${want% *}" -v i="${want#* }" \
			'$1 == t && $2 == i && $NF == "ok" { found = 1 } END { exit !found }' <<<"$listing"; then
			grep -E 'cri|snapshotter|level=error' "$KRS_LOG" | tail -n 20 >&2 || true
			krs_die "containerd plugin '$want' is not ok (see $KRS_LOG)"
		fi
	done
}

# krs_stop_daemon : SIGTERM our containerd, SIGKILL after 15s. Shims and their
# containers are separate processes and keep running.
krs_stop_daemon() {
	local pid
	pid="$(krs_find_daemon_pid)" || return 0
	krs_log "stopping containerd (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 150); do
		krs_alive "$pid" || break
		sleep 0.1
	done
	if krs_alive "$pid"; then
		krs_log "containerd did not stop within 15s; sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
		while krs_alive "$pid"; do sleep 0.1; done
	fi
	rm -f "$KRS_PIDFILE" "$KRS_SOCK" "$KRS_SOCK.ttrpc"
}
