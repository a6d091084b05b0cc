# shellcheck shell=bash
# Cluster nodes: one library for both kubelets, behind hack/upstream-kubelet-{up,down}.sh and
# hack/kubelet-rs-node-{up,down}.sh (krs_node_up, krs_node_down): per-node directories, PKI,
# cgroup root, own containerd and pod subnet, KubeletConfiguration, start, teardown.
# Source after hack/lib/cluster.sh.
#
# Layout of $KRS_CLUSTER_DIR/nodes/<name>/:
#   pki/        kubelet-client.{crt,key} (CN=system:node:<name>, O=system:nodes),
#               kubelet-serving.{crt,key} (signed by pki/kubelet-ca), kubelet.kubeconfig
#   config.yaml KubeletConfiguration       root/  --root-dir       pod-logs/  podLogsDir
#   plugins/    volumePluginDir            manifests/  staticPodPath
#   runtime/    the node's own containerd (hack/runtime-up.sh with KRS_RUNTIME_DIR set here;
#               network.env names its bridge and pod subnet)
#   kubelet     which kubelet the node last ran: upstream or kubelet-rs
# cgroups: /sys/fs/cgroup/<controller>/kubelet-rs-test/<name> is the node's cgroupRoot.
#
# Pod networks: node slot k (0..14) has bridge krs<128+8k> and pods in 198.18.(128+8k).0/21,
# so the nodes' subnets never overlap each other nor the default runtime's pod range
# (198.18.0.2-198.18.127.254 on krs0; see hack/lib/runtime.sh). A node keeps its slot as
# long as its directory holds runtime/network.env. Every pod's route is 198.18.0.0/16 via its
# bridge, so pods of different nodes reach each other through the host, which routes each
# /21 to its bridge (a longer prefix than krs0's /16).

krs_node_dir() { echo "$KRS_CLUSTER_DIR/nodes/$1"; }
KRS_CGROUP_PARENT=/kubelet-rs-test
krs_node_cgroup_root() { echo "$KRS_CGROUP_PARENT/$1"; }

# krs_node_pki NAME IP: client + serving certs and kubeconfig for node NAME.
krs_node_pki() {
  "$KRS_CLUSTER_BIN/krs-pki" node --dir "$KRS_PKI_DIR" --server "$KRS_APISERVER_URL" \
    --name "$1" --ip "$2" --out "$(krs_node_dir "$1")/pki" >&2
}

# krs_v1_controllers: mounted cgroup v1 hierarchies (cpu, memory, ..., the systemd named one).
krs_v1_controllers() {
  local d
  for d in /sys/fs/cgroup/*/; do
    d=${d%/}
    [[ -L "$d" || "$(basename "$d")" == unified ]] && continue
    [[ -f "$d/cgroup.procs" ]] && echo "$d"
  done
  return 0
}

# krs_node_cgroups_create NAME: makes the cgroupRoot in every v1 hierarchy (the kubelet
# validates that it exists); cpuset needs cpus/mems copied from the parent to be usable.
krs_node_cgroups_create() {
  local ctl dir
  for ctl in $(krs_v1_controllers); do
    for dir in "$ctl$KRS_CGROUP_PARENT" "$ctl$(krs_node_cgroup_root "$1")"; do
      mkdir -p "$dir"
      if [[ -f "$dir/cpuset.cpus" && -z "$(cat "$dir/cpuset.cpus")" ]]; then
        cat "$(dirname "$dir")/cpuset.cpus" > "$dir/cpuset.cpus"
        cat "$(dirname "$dir")/cpuset.mems" > "$dir/cpuset.mems"
      fi
    done
  done
}

# krs_cgroup_hierarchies: every mounted hierarchy, including the hybrid layout's unified
# (cgroup2) one, where the kubelet's libcontainer mirrors the v1 paths.
krs_cgroup_hierarchies() {
  local d
  for d in /sys/fs/cgroup/*/; do
    d=${d%/}
    [[ ! -L "$d" && -f "$d/cgroup.procs" ]] && echo "$d"
  done
  return 0
}

# krs_node_cgroups_remove NAME: removes the node's cgroup trees, deepest first. Any
# process still inside is killed first (only processes in this node's own cgroups).
krs_node_cgroups_remove() {
  local root ctl pid
  root=$(krs_node_cgroup_root "$1")
  for ctl in $(krs_cgroup_hierarchies); do
    [[ -d "$ctl$root" ]] || continue
    find "$ctl$root" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r pid; do
      kill -KILL "$pid" 2>/dev/null || true
    done
    find "$ctl$root" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    [[ -d "$ctl$root" ]] && krs_log "could not remove cgroup $ctl$root"
    rmdir "$ctl$KRS_CGROUP_PARENT" 2>/dev/null || true
  done
  return 0
}

# krs_node_taints_yaml: registerWithTaints from KRS_NODE_TAINTS, a comma-separated list of
# key[=value]:Effect (e.g. kubelet-rs.test/harness=:NoSchedule keeps other users' pods off).
krs_node_taints_yaml() {
  local t key value effect
  [[ -n ${KRS_NODE_TAINTS:-} ]] || return 0
  echo "registerWithTaints:"
  for t in ${KRS_NODE_TAINTS//,/ }; do
    effect=${t##*:} key=${t%:*} value=""
    [[ $key == *=* ]] && value=${key#*=} key=${key%%=*}
    printf -- '- key: %s\n  value: "%s"\n  effect: %s\n' "$key" "$value" "$effect"
  done
}

# krs_node_write_config NAME IP RUNTIME_ENDPOINT PORT: writes the node's KubeletConfiguration
# (the same for both kubelets);
# sets KRS_NODE_CONFIG_CHANGED to 1 when it differs from the one already there.
krs_node_write_config() {
  local name=$1 ip=$2 endpoint=$3 port=$4 dir
  dir=$(krs_node_dir "$name")
  mkdir -p "$dir/root" "$dir/pod-logs" "$dir/plugins" "$dir/manifests"
  cat > "$dir/config.yaml.tmp" <<EOF
# Written by hack/lib/cluster-node.sh for node $name.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 host: kubelet >= 1.35 refuses cgroup v1 unless told otherwise (KEP-5573).
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: $(krs_node_cgroup_root "$name")
containerRuntimeEndpoint: $endpoint
# Listen only on the node IP (a local-only address on lo); no read-only port.
address: $ip
port: $port
readOnlyPort: 0
healthzBindAddress: $ip
healthzPort: 10248
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $KRS_PKI_DIR/ca.crt
authorization:
  mode: Webhook
tlsCertFile: $dir/pki/kubelet-serving.crt
tlsPrivateKeyFile: $dir/pki/kubelet-serving.key
podLogsDir: $dir/pod-logs
volumePluginDir: $dir/plugins
failSwapOn: false
# Absolute disk thresholds: the development machine's disk has about 10 % available to
# non-root users, under upstream's default nodefs 10 % / imagefs 15 %, which would put every
# node under DiskPressure (taint, evictions). Every signal is listed, so none is disabled.
evictionHard:
  memory.available: ${KRS_NODE_MEMORY_AVAILABLE:-100Mi}
  nodefs.available: 1Gi
  nodefs.inodesFree: 5%
  imagefs.available: 1Gi
  imagefs.inodesFree: 5%
${KRS_NODE_EVICTION_HARD:-}
# No CAP_SYS_RESOURCE here: the kubelet cannot lower its own oom_score_adj.
oomScoreAdj: 0
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
# No image garbage collection: at upstream's 85% disk usage (reached on the shared disk) the
# kubelet deletes every image it does not use at that moment, pause and test images
# included, and no registry is reachable to pull them again. 100 turns image GC off.
imageGCHighThresholdPercent: 100
staticPodPath: $dir/manifests
${KRS_NODE_MAX_PODS:+maxPods: $KRS_NODE_MAX_PODS}
${KRS_NODE_EXTRA_CONFIG:-}
$(krs_node_taints_yaml)
EOF
  KRS_NODE_CONFIG_CHANGED=1
  if cmp -s "$dir/config.yaml.tmp" "$dir/config.yaml"; then
    KRS_NODE_CONFIG_CHANGED=0
    rm -f "$dir/config.yaml.tmp"
  else
    mv "$dir/config.yaml.tmp" "$dir/config.yaml"
  fi
}

# krs_node_runtime_dir NAME: the node's containerd state directory.
krs_node_runtime_dir() { echo "$(krs_node_dir "$1")/runtime"; }

# krs_node_network NAME: exports KRS_CNI_BRIDGE/SUBNET/NETWORK for a node that has no
# network yet (first free slot, or KRS_NODE_POD_SUBNET); a node that has one keeps it
# (hack/lib/runtime.sh reads runtime/network.env). Call with the cluster lock held.
krs_node_network() {
  local name=$1 used k subnet octet
  [[ -z ${KRS_NODE_POD_SUBNET:-} && -f "$(krs_node_runtime_dir "$name")/network.env" ]] && return 0
  if [[ -n ${KRS_NODE_POD_SUBNET:-} ]]; then
    subnet=$KRS_NODE_POD_SUBNET
  else
    used=$(cat "$KRS_CLUSTER_DIR"/nodes/*/runtime/network.env 2>/dev/null || true)
    subnet=""
    for ((k = 0; k < 15; k++)); do
      if ! grep -qxF "KRS_CNI_SUBNET=198.18.$((128 + 8 * k)).0/21" <<<"$used"; then
        subnet="198.18.$((128 + 8 * k)).0/21"
        break
      fi
    done
    [[ -n $subnet ]] ||
      krs_die "all 15 node pod subnets are taken (remove stale $KRS_CLUSTER_DIR/nodes/*/runtime)"
  fi
  octet=${subnet#198.18.}
  octet=${octet%%.*}
  export KRS_CNI_SUBNET=$subnet KRS_CNI_BRIDGE="krs$octet" KRS_CNI_NETWORK="krs-node-$name"
}

# krs_node_runtime_up NAME: the node's containerd with pause, busybox and agnhost; sets
# NODE_ENDPOINT. Call with the cluster lock held (fd 8 is closed for the daemon).
krs_node_runtime_up() {
  local name=$1 out snapshotter
  krs_node_network "$name"
  out=$(KRS_RUNTIME_DIR=$(krs_node_runtime_dir "$name") "$KRS_REPO_ROOT/hack/runtime-up.sh" 8>&-) ||
    krs_die "hack/runtime-up.sh for node $name failed"
  NODE_ENDPOINT=$(sed -n 's/^CONTAINER_RUNTIME_ENDPOINT=//p' <<<"$out" | tail -n1)
  snapshotter=$(sed -n 's/^KRS_SNAPSHOTTER=//p' <<<"$out" | tail -n1)
  [[ $NODE_ENDPOINT == unix://* ]] || krs_die "runtime-up.sh printed no CONTAINER_RUNTIME_ENDPOINT"
  krs_log "node $name: containerd $NODE_ENDPOINT, $(grep -E '^KRS_CNI_(BRIDGE|SUBNET)=' <<<"$out" | tr '\n' ' ')"
  "$KRS_REPO_ROOT/images/agnhost/build.sh" --address "${NODE_ENDPOINT#unix://}" \
    ${snapshotter:+--snapshotter "$snapshotter"} >/dev/null
}

# krs_node_kubelet_bin KUBELET: the binary of `upstream` or `kubelet-rs`. kubelet-rs is
# KRS_KUBELET_RS_BIN if set, else built here (cargo build --release -p kubelet-rs, into
# $CARGO_TARGET_DIR or target/).
krs_node_kubelet_bin() {
  case $1 in
    upstream) echo "$KRS_CLUSTER_BIN/kubelet" ;;
    kubelet-rs)
      if [[ -n ${KRS_KUBELET_RS_BIN:-} ]]; then
        [[ -x $KRS_KUBELET_RS_BIN ]] || krs_die "KRS_KUBELET_RS_BIN=$KRS_KUBELET_RS_BIN is not executable"
        echo "$KRS_KUBELET_RS_BIN"
        return
      fi
      krs_log "building kubelet-rs (cargo build --release -p kubelet-rs)"
      (cd "$KRS_REPO_ROOT" && cargo build --release -q -p kubelet-rs >&2) || krs_die "cargo build failed"
      echo "${CARGO_TARGET_DIR:-$KRS_REPO_ROOT/target}/release/kubelet-rs" ;;
    *) krs_die "unknown kubelet '$1' (upstream or kubelet-rs)" ;;
  esac
}

krs_node_ready() {
  [[ "$(krs_kubectl get node "$1" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

# krs_node_up KUBELET NAME IP PORT SMOKE: starts node NAME (idempotent: a running kubelet is
# kept) with kubelet KUBELET (upstream | kubelet-rs) listening on IP:PORT, on its own
# containerd, waits until the Node is Ready and, if SMOKE is 1, runs a busybox pod on it
# and reads its logs through the apiserver. KRS_NODE_MAX_PODS sets maxPods.
krs_node_up() {
  local kubelet=$1 name=$2 ip=$3 port=$4 smoke=$5 bin dir pid
  [[ $(id -u) == 0 ]] || krs_die "starting a node needs root"
  ((${#name} <= 30)) || krs_die "node name $name is longer than 30 characters (socket paths)"
  "$KRS_REPO_ROOT/hack/cluster-up.sh" >/dev/null
  bin=$(krs_node_kubelet_bin "$kubelet")
  dir=$(krs_node_dir "$name")

  krs_cluster_lock
  krs_ensure_lo_ip "$ip"
  krs_node_runtime_up "$name"
  krs_node_pki "$name" "$ip"
  krs_node_cgroups_create "$name"
  krs_node_write_config "$name" "$ip" "$NODE_ENDPOINT" "$port"
  echo "$kubelet" >"$dir/kubelet"
  # A running kubelet is kept, unless it is another binary or its configuration changed.
  if pid=$(krs_pid "kubelet-$name") &&
    { ((KRS_NODE_CONFIG_CHANGED)) || [[ $(readlink -f "$bin") != "$(cut -d' ' -f2- "$KRS_RUN_DIR/kubelet-$name.pid")" ]]; }; then
    krs_log "restarting kubelet-$name (pid $pid): new configuration or binary"
    krs_stop "kubelet-$name" 30
  fi
  # --containerd: upstream's embedded cAdvisor finds the containers through its own containerd
  # client (default /run/containerd/containerd.sock, where a standard node's containerd
  # listens); without it upstream's cAdvisor cannot name this node's containers (no pod
  # network, process or container-pressure figures; "Registration of the containerd container
  # factory failed" in its log). kubelet-rs ignores the flag with a warning. Both get it.
  krs_start "kubelet-$name" "$bin" \
    --config "$dir/config.yaml" --kubeconfig "$dir/pki/kubelet.kubeconfig" \
    --root-dir "$dir/root" --hostname-override "$name" --node-ip "$ip" --v 2 \
    --containerd "${NODE_ENDPOINT#unix://}"
  flock -u 8

  if ! krs_wait 180 "node $name Ready" krs_node_ready "$name"; then
    tail -n 40 "$KRS_LOG_DIR/kubelet-$name.log" >&2
    krs_die "node $name did not become Ready (log: $KRS_LOG_DIR/kubelet-$name.log)"
  fi
  krs_log "node $name ($kubelet) is Ready"
  krs_kubectl get nodes -o wide >&2
  if ((smoke)); then krs_node_smoke "$name"; fi
  echo "NODE_NAME=$name"
  echo "NODE_DIR=$dir"
  echo "CONTAINER_RUNTIME_ENDPOINT=$NODE_ENDPOINT"
  echo "KUBECONFIG=$KRS_ADMIN_KUBECONFIG"
}

# krs_node_smoke NAME: a busybox pod on node NAME reaches Running; its logs are served.
krs_node_smoke() {
  local node=$1 pod=smoke-busybox-$1
  krs_kubectl delete pod "$pod" --ignore-not-found --wait >/dev/null
  krs_kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $pod
  namespace: default
spec:
  nodeSelector:
    kubernetes.io/hostname: $node
  terminationGracePeriodSeconds: 5
  containers:
  - name: busybox
    image: docker.io/library/busybox:1.36
    command: ["sh", "-c", "trap 'exit 0' TERM; echo hello from \$(hostname) on $node; while true; do sleep 1; done"]
EOF
  if ! krs_kubectl wait pod "$pod" --for=jsonpath='{.status.phase}'=Running --timeout=120s >&2; then
    krs_kubectl describe pod "$pod" >&2 || true
    krs_die "pod $pod did not reach Running"
  fi
  krs_wait 30 "logs of $pod" bash -c "[[ -n \"\$(\"$KRS_CLUSTER_BIN/kubectl\" --kubeconfig \"$KRS_ADMIN_KUBECONFIG\" logs $pod)\" ]]" ||
    krs_die "kubectl logs $pod returned nothing"
  krs_log "kubectl logs $pod: $(krs_kubectl logs "$pod")"
  krs_kubectl get pod "$pod" -o wide >&2
  krs_kubectl delete pod "$pod" --wait --timeout=60s >/dev/null
  krs_log "smoke test passed: busybox Running on $node, logs served through the apiserver"
}

krs_apiserver_up() { [[ "$(krs_kubectl get --raw /readyz 2>/dev/null)" == ok ]]; }

# krs_node_down NAME: static pods removed and the node's pods deleted through the apiserver
# (so the kubelet itself stops their containers), the kubelet stopped, the Node object
# deleted, the node's containerd torn down (hack/runtime-down.sh: leftover containers,
# mounts, bridge), mounts under the node directory unmounted, cgroups and lo address
# removed. The directory stays (PKI, the runtime's images and its network slot).
# Call with the cluster lock held.
krs_node_down() {
  local node=$1 dir ip left
  dir=$(krs_node_dir "$node")
  if krs_pid "kubelet-$node" >/dev/null && krs_apiserver_up; then
    krs_log "deleting pods on $node"
    find "$dir/manifests" -mindepth 1 -maxdepth 1 -exec rm -rf {} + 2>/dev/null || true
    krs_kubectl delete pods --all-namespaces --field-selector "spec.nodeName=$node" \
      --wait --timeout=60s >/dev/null 2>&1 || krs_log "pods on $node did not all go away in 60s"
  fi
  krs_stop "kubelet-$node" 30
  if krs_apiserver_up; then
    krs_kubectl delete node "$node" --ignore-not-found >/dev/null 2>&1 || true
  fi
  if [[ -f "$(krs_node_runtime_dir "$node")/config.toml" ]]; then
    KRS_RUNTIME_DIR=$(krs_node_runtime_dir "$node") "$KRS_REPO_ROOT/hack/runtime-down.sh" 8>&- ||
      krs_die "hack/runtime-down.sh for node $node failed"
  fi
  krs_unmount_under "$dir"
  krs_node_cgroups_remove "$node"
  ip=$([[ -f $dir/config.yaml ]] && sed -n 's/^address: //p' "$dir/config.yaml" || true)
  [[ -n $ip ]] && krs_remove_lo_ip "$ip"
  left=$(krs_mounts_under "$dir")
  [[ -z $left ]] || krs_die "mounts left under $dir: $left"
  krs_log "node $node is down"
}

# krs_node_down_main DEFAULT_NAME [--all]: the down scripts' command line. --all stops every
# node (either kubelet) that has a kubelet-<name>.pid or a directory.
krs_node_down_main() {
  local default=$1 nodes=() f n
  case "${2:-}" in
    "") nodes=("$default") ;;
    --all)
      for f in "$KRS_RUN_DIR"/kubelet-*.pid "$KRS_CLUSTER_DIR"/nodes/*/; do
        [[ -e $f ]] || continue
        if [[ $f == *.pid ]]; then n=$(basename "$f" .pid); n=${n#kubelet-}; else n=$(basename "$f"); fi
        [[ " ${nodes[*]-} " == *" $n "* ]] || nodes+=("$n")
      done ;;
    *) krs_die "unknown argument $2 (usage: $(basename "$0") [--all])" ;;
  esac
  [[ $(id -u) == 0 ]] || krs_die "$(basename "$0") must run as root"
  krs_cluster_lock
  for n in "${nodes[@]}"; do krs_node_down "$n"; done
}
