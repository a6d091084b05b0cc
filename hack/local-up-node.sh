#!/usr/bin/env bash
# The main job: a standalone kubelet-rs node running the example static pods on a private
# containerd (like upstream's hack/local-up-cluster.sh, for one node without a control plane).
#
#   hack/local-up-node.sh            # bring it up (as root); prints where to look
#   hack/local-up-node.sh --down     # stop kubelet-rs (its pods' containers are stopped too)
#
# Environment: KRS_NODE_DIR (default /var/lib/kubelet-rs-test/node), KRS_READ_ONLY_PORT
# (10255), KRS_HEALTHZ_PORT (10248), KRS_STATIC_PODS (default examples/static-pods).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODE_DIR="${KRS_NODE_DIR:-/var/lib/kubelet-rs-test/node}"
RO_PORT="${KRS_READ_ONLY_PORT:-10255}"
HZ_PORT="${KRS_HEALTHZ_PORT:-10248}"
PODS_SRC="${KRS_STATIC_PODS:-$REPO/examples/static-pods}"
PIDFILE="$NODE_DIR/kubelet-rs.pid"
LOG="$NODE_DIR/kubelet-rs.log"

log() { printf '>>> %s\n' "$*" >&2; }
die() { printf 'local-up-node: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "must run as root (it starts containerd and manages cgroups)"

running_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid; pid="$(cat "$PIDFILE")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = kubelet-rs ] || return 1
  echo "$pid"
}

down() {
  local pid
  if pid="$(running_pid)"; then
    log "stopping kubelet-rs (pid $pid): removing the static pods first"
    mkdir -p "$NODE_DIR/manifests"
    find "$NODE_DIR/manifests" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
    # Wait until the kubelet has stopped every container (grace periods included), so
    # nothing keeps running without a kubelet.
    local sock="${KRS_RUNTIME_DIR:-/var/lib/kubelet-rs-test/runtime}/containerd.sock"
    for _ in $(seq 1 600); do
      [ -z "$(ctr --address "$sock" -n k8s.io tasks ls -q 2>/dev/null)" ] && break
      sleep 0.1
    done
    kill -TERM "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$PIDFILE"
  log "kubelet-rs is down; stop the runtime with hack/runtime-down.sh"
}

if [ "${1:-}" = "--down" ]; then down; exit 0; fi

command -v curl >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends curl >/dev/null; }

log "bringing up the private containerd (hack/runtime-up.sh)"
ENDPOINT="$("$REPO/hack/runtime-up.sh" | sed -n 's/^CONTAINER_RUNTIME_ENDPOINT=//p' | tail -n1)"
[ -n "$ENDPOINT" ] || die "hack/runtime-up.sh printed no endpoint"

[ -n "${CARGO_TARGET_DIR:-}" ] || unset CARGO_TARGET_DIR
log "building kubelet-rs (cargo build --release)"
(cd "$REPO" && cargo build --release -q -p kubelet-rs)
BIN="$REPO/target/release/kubelet-rs"
[ -n "${CARGO_TARGET_DIR:-}" ] && BIN="$CARGO_TARGET_DIR/release/kubelet-rs"

if pid="$(running_pid)"; then
  log "kubelet-rs already running (pid $pid); restarting it"
  kill -TERM "$pid"; sleep 1
fi

mkdir -p "$NODE_DIR/manifests" "$NODE_DIR/root" "$NODE_DIR/pods"
cat > "$NODE_DIR/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This host may be cgroup v1 (hybrid): allow it, as upstream 1.35 needs too.
failCgroupV1: false
# Standalone: no API server, so no webhook authn/authz.
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: $ENDPOINT
staticPodPath: manifests
podLogsDir: pods
readOnlyPort: $RO_PORT
healthzPort: $HZ_PORT
healthzBindAddress: 127.0.0.1
address: 127.0.0.1
fileCheckFrequency: 5s
YAML
cp "$PODS_SRC"/* "$NODE_DIR/manifests/"

log "starting kubelet-rs (log: $LOG)"
setsid "$BIN" --config="$NODE_DIR/kubelet.yaml" --root-dir="$NODE_DIR/root" \
  --hostname-override=krs-node --lock-file="$NODE_DIR/kubelet.lock" --v=2 \
  >"$LOG" 2>&1 < /dev/null &
echo $! > "$PIDFILE"

for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$HZ_PORT/healthz" >/dev/null 2>&1 && break
  running_pid >/dev/null || { tail -n 30 "$LOG" >&2; die "kubelet-rs exited during start-up"; }
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$HZ_PORT/healthz" >/dev/null || die "healthz did not answer; see $LOG"

log "waiting for the example pods"
for _ in $(seq 1 150); do
  n="$(curl -fsS "http://127.0.0.1:$RO_PORT/pods" | grep -o '"phase":"Running"' | wc -l || true)"
  [ "${n:-0}" -ge 2 ] && break
  sleep 0.2
done

cat <<TXT

kubelet-rs is running in standalone mode (pid $(cat "$PIDFILE")).
  config:        $NODE_DIR/kubelet.yaml
  static pods:   $NODE_DIR/manifests   (add, edit or remove manifests; changes apply within seconds)
  kubelet log:   $LOG

Look at it:
  curl -s http://127.0.0.1:$HZ_PORT/healthz                      # ok
  curl -s http://127.0.0.1:$RO_PORT/pods | python3 -m json.tool   # the PodList with status
  curl -s http://127.0.0.1:$RO_PORT/pods | python3 -c 'import json,sys; [print(p["metadata"]["namespace"], p["metadata"]["name"], p["status"].get("phase"), p["status"].get("podIP","")) for p in json.load(sys.stdin)["items"]]'
  ls $NODE_DIR/pods/                                          # <ns>_<name>_<uid>/<container>/<n>.log
  tail $NODE_DIR/pods/default_counter-krs-node_*/count/0.log
  curl -s http://<web pod IP>:8080/                           # the web pod, on 198.18.0.0/16

Stop:  hack/local-up-node.sh --down   (then hack/runtime-down.sh)
TXT
