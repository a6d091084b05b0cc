#!/usr/bin/env bash
# Runs upstream's sig-node conformance specs (k8s.io/kubernetes v1.35.4 e2e.test) against one
# node of the test cluster, with every other node cordoned for the run.
#
#   hack/conformance.sh [NODE] [-- E2E_TEST_FLAGS...]
#       NODE defaults to krs-upstream (hack/upstream-kubelet-up.sh); it must be Ready.
#       1. builds e2e.test, ginkgo and the nonewprivs binary (hack/lib/conformance-build.sh;
#          seconds when up to date),
#       2. builds the test images the specs need and imports them into NODE's containerd
#          (images/conformance/build.sh; NODE's runtime endpoint is read from its kubelet
#          config, see krs_node_runtime_endpoint),
#       3. cordons every other schedulable node (uncordoned again on exit),
#       4. runs --ginkgo.focus='\[sig-node\].*\[Conformance\]'
#          --ginkgo.skip='\[Serial\]|\[Disruptive\]' with the admin kubeconfig, through ginkgo
#          with KRS_CONFORMANCE_NODES parallel processes (default 4; 1 runs e2e.test alone),
#       5. prints "P passed, F failed, S skipped" and the failed specs' names.
#       Reports: _output/conformance/<NODE>/ (junit_01.xml, ginkgo/report.json, e2e.log,
#       results.tsv: one "state<TAB>spec" line per selected spec).
#   hack/conformance.sh --compare REF_NODE OTHER_NODE
#       the specs that passed on REF_NODE and did not pass on OTHER_NODE (from their
#       results.tsv).
#
# Environment: KRS_CONFORMANCE_FOCUS / KRS_CONFORMANCE_SKIP (regexps), KRS_CONFORMANCE_NODES,
# KRS_CONFORMANCE_REGISTRY (name of the e2e images; default kubelet-rs.test/e2e-test-images),
# KRS_CONFORMANCE_OUT (default _output/conformance), KRS_CONFORMANCE_BIN (e2e.test; default
# _output/bin), KRS_CLUSTER_BIN (kubectl), plus hack/lib/cluster.sh's settings.
# The cluster must be up (hack/cluster-up.sh); shared clusters: take
# /var/lib/kubelet-rs-test/cluster-disrupt.lock around this script (it cordons nodes).
set -euo pipefail
HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/cluster.sh
source "$HACK/lib/cluster.sh"

FOCUS=${KRS_CONFORMANCE_FOCUS:-'\[sig-node\].*\[Conformance\]'}
SKIP=${KRS_CONFORMANCE_SKIP:-'\[Serial\]|\[Disruptive\]'}
PARALLEL=${KRS_CONFORMANCE_NODES:-4}
OUT_ROOT=${KRS_CONFORMANCE_OUT:-$KRS_REPO_ROOT/_output/conformance}
BIN=${KRS_CONFORMANCE_BIN:-$KRS_REPO_ROOT/_output/bin}
DEFAULT_RUNTIME_SOCK=/var/lib/kubelet-rs-test/runtime/containerd.sock
# The e2e images (upstream: registry.k8s.io/e2e-test-images, "promoterE2eRegistry") are
# imported under this registry name and e2e.test is told so through KUBE_TEST_REPO_LIST
# (test/utils/image/manifest.go; tags unchanged). With the upstream names, any other script
# importing its own image under e.g. registry.k8s.io/e2e-test-images/busybox:1.37.0-1 (the
# default runtime did, with Debian's busybox) would replace ours in the middle of a run.
E2E_REGISTRY=${KRS_CONFORMANCE_REGISTRY:-kubelet-rs.test/e2e-test-images}

if [[ ${1:-} == --compare ]]; then
  (($# == 3)) || krs_die "usage: conformance.sh --compare REF_NODE OTHER_NODE"
  for n in "$2" "$3"; do
    [[ -f $OUT_ROOT/$n/results.tsv ]] || krs_die "no results for $n ($OUT_ROOT/$n/results.tsv): run hack/conformance.sh $n"
  done
  exec python3 "$HACK/lib/conformance-report.py" compare \
    "$OUT_ROOT/$2/results.tsv" "$OUT_ROOT/$3/results.tsv" "$2" "$3"
fi

NODE=krs-upstream
if (($#)) && [[ $1 != -- ]]; then NODE=$1; shift; fi
if (($#)); then
  [[ $1 == -- ]] || krs_die "usage: conformance.sh [NODE] [-- E2E_TEST_FLAGS...]"
  shift
fi
[[ $(id -u) == 0 ]] || krs_die "conformance.sh must run as root (it imports images into containerd)"

# krs_node_runtime_endpoint NODE : the CRI endpoint NODE's kubelet uses, from the
# KubeletConfiguration the node scripts write (nodes/<NODE>/config.yaml), else the default
# test runtime's.
krs_node_runtime_endpoint() {
  local cfg=$KRS_CLUSTER_DIR/nodes/$1/config.yaml ep=""
  [[ -f $cfg ]] && ep=$(sed -n 's/^containerRuntimeEndpoint:[[:space:]]*//p' "$cfg" | tr -d '"' | tail -n1)
  echo "${ep:-unix://$DEFAULT_RUNTIME_SOCK}"
}
# krs_runtime_snapshotter SOCKET : the CRI snapshotter of the containerd serving SOCKET, from
# the config.toml next to it (hack/runtime-up.sh layout); empty (ctr's default) otherwise.
krs_runtime_snapshotter() {
  local toml
  toml="$(dirname "$1")/config.toml"
  [[ -f $toml ]] && sed -n 's/^[[:space:]]*snapshotter[[:space:]]*=[[:space:]]*"\(.*\)"/\1/p' "$toml" | head -n1
  return 0
}

krs_kubectl get --raw /readyz >/dev/null 2>&1 || krs_die "the API server does not answer: run hack/cluster-up.sh"
ready=$(krs_kubectl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) ||
  krs_die "node $NODE not found (hack/upstream-kubelet-up.sh starts krs-upstream)"
[[ $ready == True ]] || krs_die "node $NODE is not Ready"

"$HACK/lib/conformance-build.sh"

endpoint=$(krs_node_runtime_endpoint "$NODE")
sock=${endpoint#unix://}
[[ -S $sock ]] || krs_die "node $NODE's runtime socket $sock does not exist"
snapshotter=$(krs_runtime_snapshotter "$sock")
krs_log "test images -> $sock${snapshotter:+ (snapshotter $snapshotter)}"
"$KRS_REPO_ROOT/images/conformance/build.sh" --address "$sock" ${snapshotter:+--snapshotter "$snapshotter"} \
  --registry "$E2E_REGISTRY" >/dev/null

OUT=$OUT_ROOT/$NODE
rm -rf "$OUT" && mkdir -p "$OUT"
echo "promoterE2eRegistry: $E2E_REGISTRY" > "$OUT/repo-list.yaml"
export KUBE_TEST_REPO_LIST=$OUT/repo-list.yaml

# Only NODE schedulable: cordon every other node that is schedulable, now and, until the run
# ends, any that joins meanwhile (other tests in a shared cluster register nodes; the e2e
# framework waits for every uncordoned node to be Ready, and the scheduler would place test
# pods there). Pods bound with spec.nodeName are not affected by a cordon. On exit the
# cordoned nodes that still exist are uncordoned.
CORDONED=$OUT/cordoned-nodes
: > "$CORDONED"
cordon() {
  if krs_kubectl cordon "$1" >/dev/null 2>&1; then
    echo "$1" >> "$CORDONED"
    krs_log "cordoned $1"
  fi
}
# watch_and_cordon : cordons every node other than NODE that is, or becomes, schedulable,
# as the API server's watch reports it (a node that re-registers is cordoned within about a
# second; the scheduler may still bind a pod to it in that second).
watch_and_cordon() {
  local n unschedulable
  while :; do
    while read -r n unschedulable; do
      [[ -z $n || $n == "$NODE" || $unschedulable == true ]] || cordon "$n"
    done < <(krs_kubectl get nodes --watch -o jsonpath='{.metadata.name} {.spec.unschedulable}{"\n"}' 2>/dev/null)
    sleep 1
  done
}
watcher=""
finish() {
  local n
  if [[ -n $watcher ]]; then
    kill -- "-$watcher" 2>/dev/null || true # its process group: the loop and its kubectl
    wait "$watcher" 2>/dev/null || true
  fi
  for n in $(sort -u "$CORDONED"); do
    if krs_kubectl uncordon "$n" >/dev/null 2>&1; then krs_log "uncordoned $n"; fi
  done
  return 0
}
trap finish EXIT
while read -r n unschedulable; do
  [[ -z $n || $n == "$NODE" || $unschedulable == true ]] || cordon "$n"
done < <(krs_kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.spec.unschedulable}{"\n"}{end}')
set -m # the watcher gets its own process group
watch_and_cordon &
watcher=$!
set +m

e2e_flags=(
  --kubeconfig="$KRS_ADMIN_KUBECONFIG"
  --provider=skeleton
  --kubectl-path="$KRS_CLUSTER_BIN/kubectl"
  --report-dir="$OUT"
  --report-complete-ginkgo
  # Other nodes are not under test, and in a shared cluster some are NotReady (tests
  # register Nodes without a kubelet): -1 turns off the framework's "every node Ready"
  # waits (before the suite, and after every spec: up to 7 min each). NODE's readiness is
  # checked here before and after the run instead.
  --allowed-not-ready-nodes=-1
  # The node scripts' DNS domain; there is no cluster DNS (the [sig-network] DNS specs are
  # not selected).
  --dns-domain=cluster.local
  "$@"
)
krs_log "running e2e.test on $NODE ($PARALLEL process(es)): focus $FOCUS, skip $SKIP (log: $OUT/e2e.log)"
start=$(date +%s)
rc=0
if ((PARALLEL > 1)); then
  "$BIN/ginkgo" --nodes="$PARALLEL" --focus="$FOCUS" --skip="$SKIP" --no-color --timeout=2h \
    "$BIN/e2e.test" -- "${e2e_flags[@]}" > "$OUT/e2e.log" 2>&1 || rc=$?
else
  "$BIN/e2e.test" --ginkgo.focus="$FOCUS" --ginkgo.skip="$SKIP" --ginkgo.no-color \
    --ginkgo.timeout=2h "${e2e_flags[@]}" > "$OUT/e2e.log" 2>&1 || rc=$?
fi
krs_log "e2e.test finished in $(( $(date +%s) - start ))s (exit $rc)"
ready=$(krs_kubectl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) || ready=""
[[ $ready == True ]] || krs_log "WARNING: node $NODE is not Ready after the run (Ready=$ready)"
[[ -f $OUT/ginkgo/report.json ]] || { tail -n 30 "$OUT/e2e.log" >&2; krs_die "no report written ($OUT/e2e.log)"; }
echo "conformance on $NODE:"
python3 "$HACK/lib/conformance-report.py" summary "$OUT/ginkgo/report.json" "$FOCUS" "$SKIP" "$OUT/results.tsv"
echo "reports: $OUT"
