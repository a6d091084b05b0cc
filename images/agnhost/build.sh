#!/usr/bin/env bash
# Builds the e2e test image agnhost locally and (optionally) imports it into containerd
# under its upstream name, registry.k8s.io/e2e-test-images/agnhost:2.59 (the tag of
# k8s.io/kubernetes v1.35.4 test/utils/image/manifest.go and test/images/agnhost/VERSION).
#
#   images/agnhost/build.sh [--address SOCKET] [--snapshotter NAME]
#
# The binary is k8s.io/kubernetes/test/images/agnhost, built statically by
# hack/lib/cluster-build.sh. The image follows upstream's Dockerfile as far as offline
# allows: /agnhost with the agnhost-2 symlink, /uploads, porter's localhost.crt/.key,
# user-defined-in-image (uid 1000) in group-defined-in-image (gid 50000),
# ENTRYPOINT ["/agnhost"], CMD ["pause"]. The userland is Debian's busybox-static instead
# of alpine's packages, plus the host's curl (/usr/bin/curl with the shared libraries ldd
# lists: the lifecycle-hook conformance specs run `curl` in this image); dig, iperf and
# coredns are missing, and /var/registry (the fake registry's content, fetched from the
# network upstream) is absent.
# Packed as a single-layer OCI layout by images/build-oci.py; rebuilt only when an input
# changes, imported only when the name does not already point at the built digest.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KRS_CLUSTER_DIR=${KRS_CLUSTER_DIR:-/var/lib/kubelet-rs-test/cluster}
BIN=${KRS_CLUSTER_BIN:-$REPO/_output/bin}/agnhost
NAME=registry.k8s.io/e2e-test-images/agnhost:2.59
OUT=$KRS_CLUSTER_DIR/images/agnhost
address="" snapshotter=""
while (($#)); do
  case $1 in
    --address) address=$2; shift 2 ;;
    --snapshotter) snapshotter=$2; shift 2 ;;
    *) echo "agnhost/build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
log() { echo "[$(date +%H:%M:%S)] agnhost: $*" >&2; }

[[ -x $BIN ]] || { echo "agnhost/build.sh: $BIN missing; run hack/lib/cluster-build.sh" >&2; exit 1; }
[[ -x /bin/busybox ]] || { echo "agnhost/build.sh: /bin/busybox missing (apt-get install busybox-static)" >&2; exit 1; }
[[ -x /usr/local/go/bin/go ]] && ! command -v go >/dev/null && PATH=$PATH:/usr/local/go/bin
K8S_DIR=$(cd "$REPO/e2e/cluster" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
PORTER=$K8S_DIR/test/images/agnhost/porter
CURL=$(command -v curl) || { echo "agnhost/build.sh: curl missing (apt-get install curl)" >&2; exit 1; }
# curl's shared libraries and dynamic loader, as ldd resolves them on this host.
mapfile -t CURL_LIBS < <(ldd "$CURL" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')

key=$(sha256sum "$BIN" /bin/busybox "$PORTER/localhost.crt" "$PORTER/localhost.key" \
  "$CURL" "${CURL_LIBS[@]}" "${BASH_SOURCE[0]}" "$REPO/images/build-oci.py" |
  cut -d' ' -f1 | sha256sum | cut -d' ' -f1) # contents only: the same inputs from another checkout or bin dir match

build_rootfs() {
  local root=$1 applet
  mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,root,home/user-defined-in-image,tmp,var,uploads}
  chmod 1777 "$root/tmp"
  cp /bin/busybox "$root/bin/busybox"
  for applet in $(/bin/busybox --list-full); do
    [[ $applet == bin/busybox ]] && continue
    mkdir -p "$root/$(dirname "$applet")"
    ln -sfn /bin/busybox "$root/$applet"
  done
  install -m 0755 "$BIN" "$root/agnhost"
  local lib
  install -m 0755 "$CURL" "$root/usr/bin/curl"
  for lib in "${CURL_LIBS[@]}"; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
  ln -s agnhost "$root/agnhost-2"
  install -m 0644 "$PORTER/localhost.crt" "$root/localhost.crt"
  install -m 0644 "$PORTER/localhost.key" "$root/localhost.key"
  cat > "$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh
nobody:x:65534:65534:nobody:/home:/bin/false
EOF
  cat > "$root/etc/group" <<'EOF'
root:x:0:
user-defined-in-image:x:1000:
group-defined-in-image:x:50000:user-defined-in-image
nogroup:x:65534:
nobody:x:65534:
EOF
  chmod 0644 "$root/etc/passwd" "$root/etc/group"
}

if [[ -f $OUT/image.tar && "$(cat "$OUT/key" 2>/dev/null)" == "$key" ]]; then
  log "image up to date ($(cat "$OUT/digest"))"
else
  log "building $NAME"
  rm -rf "$OUT" && mkdir -p "$OUT"
  build_rootfs "$OUT/rootfs"
  python3 "$REPO/images/build-oci.py" --rootfs "$OUT/rootfs" --out "$OUT/image.tar" \
    --name "$NAME" --entrypoint '["/agnhost"]' --cmd '["pause"]' \
    --env "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" > "$OUT/digest"
  rm -rf "$OUT/rootfs"
  echo "$key" > "$OUT/key"
fi

if [[ -n $address ]]; then
  want=$(cat "$OUT/digest")
  if ctr --address "$address" -n k8s.io images ls 2>/dev/null |
      awk -v n="$NAME" -v d="$want" '$1 == n && $3 == d { f = 1 } END { exit !f }'; then
    log "$NAME already imported"
  else
    log "importing $NAME ($want)"
    ctr --address "$address" -n k8s.io images import ${snapshotter:+--snapshotter "$snapshotter"} \
      "$OUT/image.tar" >&2
  fi
fi
echo "$NAME"
