# shellcheck shell=bash
# Node-side helpers shared by hack/upstream-kubelet-*.sh (and usable for kubelet-rs nodes):
# per-node directories, PKI, cgroup root, KubeletConfiguration, teardown.
# Source after hack/lib/cluster.sh.
#
# Layout of $KRS_CLUSTER_DIR/nodes/<name>/:
#   pki/        kubelet-client.{crt,key} (CN=system:node:<name>, O=system:nodes),
#               kubelet-serving.{crt,key} (signed by pki/kubelet-ca), kubelet.kubeconfig
#   config.yaml KubeletConfiguration       root/  --root-dir       pod-logs/  podLogsDir
#   plugins/    volumePluginDir
# cgroups: /sys/fs/cgroup/<controller>/kubelet-rs-test/<name> is the node's cgroupRoot.

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

# krs_node_write_config NAME IP RUNTIME_ENDPOINT PORT: writes the node's KubeletConfiguration.
krs_node_write_config() {
  local name=$1 ip=$2 endpoint=$3 port=$4 dir
  dir=$(krs_node_dir "$name")
  mkdir -p "$dir/root" "$dir/pod-logs" "$dir/plugins"
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
# No CAP_SYS_RESOURCE here: the kubelet cannot lower its own oom_score_adj.
oomScoreAdj: 0
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
# Absolute disk thresholds: the test machine's disk is shared with builds, and upstream's
# relative defaults (nodefs.available<10%, imagefs.available<15%) put a 250 GB disk with
# 20 GB free under DiskPressure, whose NoSchedule taint keeps every pod off the node.
# All five signals are listed: the ones left out would have no threshold.
evictionHard:
  memory.available: 100Mi
  nodefs.available: 2Gi
  imagefs.available: 2Gi
  nodefs.inodesFree: 5%
  imagefs.inodesFree: 5%
# No image garbage collection: at upstream's 85% disk usage (reached on the shared disk) the
# kubelet deletes every image it does not use at that moment, pause and test images
# included, and no registry is reachable to pull them again. 100 turns image GC off.
imageGCHighThresholdPercent: 100
EOF
  mv "$dir/config.yaml.tmp" "$dir/config.yaml"
}
