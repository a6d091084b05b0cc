# shellcheck shell=bash
# Run the test runtime's CNI chain by hand (what containerd's CRI plugin does
# for a sandbox), for teardown of leftover pods and for tests of the network.
# Needs hack/lib/runtime.sh sourced first.

KRS_CNI_CONFLIST="$KRS_CNI_CONF_DIR/10-$KRS_CNI_NETWORK.conflist"

# krs_cni_exec ADD|DEL|CHECK CONTAINER_ID NETNS_PATH [RUNTIME_CONFIG_JSON]
# Invokes each plugin of the conflist in order (reverse order for DEL), with
# the capability arguments it declares (e.g. {"portMappings": [...]}).
# ADD prints the final CNI result JSON on stdout.
krs_cni_exec() {
	python3 - "$1" "$2" "$3" "${4:-}" "$KRS_CNI_CONFLIST" "$KRS_CNI_BIN_DIR" <<'PY'
import json, os, subprocess, sys

cmd, cid, netns, runtime, conflist, bin_dir = sys.argv[1:7]
with open(conflist) as f:
    conf = json.load(f)
runtime = json.loads(runtime) if runtime else {}
plugins = conf["plugins"][::-1] if cmd == "DEL" else conf["plugins"]
prev = None
for plugin in plugins:
    stdin = dict(plugin, name=conf["name"], cniVersion=conf["cniVersion"])
    caps = plugin.get("capabilities", {})
    rcfg = {k: v for k, v in runtime.items() if caps.get(k)}
    if rcfg:
        stdin["runtimeConfig"] = rcfg
    if prev is not None:
        stdin["prevResult"] = prev
    env = dict(os.environ, CNI_COMMAND=cmd, CNI_CONTAINERID=cid, CNI_NETNS=netns,
               CNI_IFNAME="eth0", CNI_PATH=bin_dir)
    r = subprocess.run([os.path.join(bin_dir, plugin["type"])], input=json.dumps(stdin).encode(),
                       env=env, capture_output=True)
    if r.returncode != 0:
        sys.stderr.write(f"CNI {cmd} {plugin['type']} failed ({r.returncode}): "
                         f"{r.stdout.decode()} {r.stderr.decode()}\n")
        sys.exit(1)
    if cmd == "ADD":
        prev = json.loads(r.stdout)
if cmd == "ADD":
    print(json.dumps(prev))
PY
}

# krs_cni_sandboxes : "ID NETNS_PATH" for every CRI sandbox container in k8s.io.
krs_cni_sandboxes() {
	local id
	for id in $(krs_ctr -n k8s.io containers ls -q 2>/dev/null); do
		krs_ctr -n k8s.io containers info "$id" 2>/dev/null | python3 -c '
import json, sys
info = json.load(sys.stdin)
if info.get("Labels", {}).get("io.cri-containerd.kind") != "sandbox":
    sys.exit(0)
for ns in info.get("Spec", {}).get("linux", {}).get("namespaces", []):
    if ns.get("type") == "network" and ns.get("path"):
        print(info["ID"], ns["path"])
' || true
	done
}

# krs_cni_cleanup_iptables : delete nat rules and chains that portmap left for
# our network (comments name "krs-bridge"), e.g. after the daemon was killed.
krs_cni_cleanup_iptables() {
	command -v iptables-save >/dev/null || return 0
	local rules chains rule chain
	rules="$(iptables-save -t nat 2>/dev/null | grep -F "name: \\\"$KRS_CNI_NETWORK\\\"" || true)"
	[ -n "$rules" ] || return 0
	chains="$(grep -o -- '-j CNI-DN-[0-9a-f]*' <<<"$rules" | cut -d' ' -f2 | sort -u || true)"
	while IFS= read -r rule; do
		[ -n "$rule" ] || continue
		eval "iptables -t nat ${rule/#-A/-D}" 2>/dev/null || true
	done <<<"$rules"
	for chain in $chains; do
		iptables -t nat -F "$chain" 2>/dev/null || true
		iptables -t nat -X "$chain" 2>/dev/null || true
	done
}
