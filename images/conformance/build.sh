#!/usr/bin/env bash
# Builds, locally, the e2e test images that upstream's sig-node conformance specs need
# beyond those of hack/runtime-up.sh (pause) and images/agnhost/build.sh (agnhost:2.59),
# under the exact names k8s.io/kubernetes v1.35.4 test/utils/image/manifest.go gives them,
# and (with --address) imports them into that containerd's k8s.io namespace. No registry is
# reachable; pods use them through imagePullPolicy IfNotPresent.
#
#   images/conformance/build.sh [--address SOCKET] [--snapshotter NAME] [--registry REGISTRY]
#
#   --registry  import the images named REGISTRY/<name>:<tag> instead of
#               registry.k8s.io/e2e-test-images/<name>:<tag> (hack/conformance.sh passes its
#               own registry name and gives e2e.test the matching KUBE_TEST_REPO_LIST, so no
#               other script's import of an upstream name can replace these images mid-run).
#
#   registry.k8s.io/e2e-test-images/busybox:1.37.0-1
#       upstream's image is docker.io busybox:1.37.0 (test/images/busybox/BASEIMAGE). Debian's
#       busybox-static (1.35 in bookworm, 1.37 in trixie) drops environment variables whose
#       names are not shell identifiers (`data-1`) from `sh -c env`: Debian reverts busybox
#       commit 9c143ce52da1, which keeps them (ash.c: "this breaks scenarios where people do
#       want them passed to children"). The ConfigMap/Secret env-from specs print `env` from
#       `sh -c`, so the image is busybox 1.37.0 built here from the release tarball (fetched
#       with `apt-get source` from Debian trixie, sha256-pinned; Debian's patches are not
#       applied), `make defconfig` + CONFIG_STATIC, every applet a symlink in /bin (as in
#       docker.io's image: the sysctl spec runs /bin/sysctl), CMD ["sh"].
#   registry.k8s.io/e2e-test-images/nonewprivs:1.3
#       k8s.io/kubernetes/test/images/nonewprivs (prints its effective uid), built by
#       hack/lib/conformance-build.sh, at /usr/local/bin/nnp with the setuid bit, on the
#       busybox rootfs above (upstream: alpine), CMD ["nnp"].
#   registry.k8s.io/e2e-test-images/agnhost:2.55
#       the "previous agnhost" of the Pods lifecycle spec, which only runs it and then
#       switches the pod to 2.59. It is another name for the locally built agnhost:2.59
#       (images/agnhost/build.sh): building agnhost 2.55 would need another Kubernetes
#       version's module.
#
# Rebuilt only when an input changes; imported only when a name does not point at the
# built digest. Output: $KRS_CLUSTER_DIR/images/<image>/.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KRS_CLUSTER_DIR=${KRS_CLUSTER_DIR:-/var/lib/kubelet-rs-test/cluster}
BIN_DIR=${KRS_CONFORMANCE_BIN:-$REPO/_output/bin}
OUT=$KRS_CLUSTER_DIR/images
PROMOTER=registry.k8s.io/e2e-test-images
# images/agnhost/build.sh's name for its image.
AGNHOST_UPSTREAM_NAME=$PROMOTER/agnhost:2.59
BUSYBOX_VERSION=1.37.0
# Debian trixie's busybox_1.37.0.orig.tar.bz2, the upstream release tarball.
BUSYBOX_SHA256=3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4
PATH_ENV="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

address="" snapshotter="" registry=$PROMOTER
while (($#)); do
  case $1 in
    --address) address=$2; shift 2 ;;
    --snapshotter) snapshotter=$2; shift 2 ;;
    --registry) registry=$2; shift 2 ;;
    *) echo "conformance/build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
BUSYBOX_NAME=$registry/busybox:1.37.0-1
NONEWPRIVS_NAME=$registry/nonewprivs:1.3
AGNHOST_NAME=$registry/agnhost:2.59
AGNHOST_PREV_NAME=$registry/agnhost:2.55
log() { echo "[$(date +%H:%M:%S)] conformance-images: $*" >&2; }
die() { echo "conformance/build.sh: $*" >&2; exit 1; }

# fetch_busybox_source DIR : the release tarball in DIR, through apt (a private source list
# for trixie's deb-src; the system's apt configuration is not touched).
fetch_busybox_source() {
  local dir=$1 tarball=$1/busybox_${BUSYBOX_VERSION}.orig.tar.bz2 apt
  if [[ -f $tarball ]] && sha256sum -c --status <<<"$BUSYBOX_SHA256  $tarball"; then
    return 0
  fi
  log "fetching busybox $BUSYBOX_VERSION source (apt-get source, Debian trixie)"
  apt=$dir/apt
  rm -rf "$apt" && mkdir -p "$apt"/{lists/partial,cache/archives/partial,parts,src}
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
    > "$apt/sources.list"
  local o=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/parts"
    -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Debug::NoLocking=1)
  apt-get "${o[@]}" update >/dev/null || die "apt-get update (trixie deb-src) failed"
  (cd "$apt/src" && apt-get "${o[@]}" source --download-only busybox >/dev/null 2>&1) ||
    die "apt-get source busybox failed"
  mv "$apt/src/busybox_${BUSYBOX_VERSION}.orig.tar.bz2" "$tarball" ||
    die "trixie no longer has busybox $BUSYBOX_VERSION; update BUSYBOX_VERSION/BUSYBOX_SHA256"
  rm -rf "$apt"
  sha256sum -c --status <<<"$BUSYBOX_SHA256  $tarball" || die "$tarball: sha256 mismatch"
}

# build_busybox : $OUT/busybox-src/busybox, static, from the pinned release.
build_busybox() {
  local dir=$OUT/busybox-src bin=$OUT/busybox-src/busybox
  mkdir -p "$dir"
  if [[ -x $bin && "$(cat "$dir/key" 2>/dev/null)" == "$BUSYBOX_SHA256" ]]; then return 0; fi
  fetch_busybox_source "$dir"
  log "compiling busybox $BUSYBOX_VERSION (static, defconfig; ~3 min)"
  rm -rf "$dir/build" && mkdir -p "$dir/build"
  tar -xjf "$dir/busybox_${BUSYBOX_VERSION}.orig.tar.bz2" -C "$dir/build"
  (
    cd "$dir/build/busybox-$BUSYBOX_VERSION"
    make defconfig >/dev/null
    sed -i 's/^# CONFIG_STATIC is not set$/CONFIG_STATIC=y/' .config
    # tc needs CBQ, which kernel headers >= 6.3 no longer define (Debian disables it too).
    sed -i 's/^CONFIG_TC=y$/# CONFIG_TC is not set/' .config
    nice -n "${KRS_BUILD_NICE:-10}" make -j"$(nproc)" busybox >"$dir/build.log" 2>&1
  ) || die "compiling busybox failed (log: $dir/build.log)"
  install -m 0755 "$dir/build/busybox-$BUSYBOX_VERSION/busybox" "$bin"
  rm -rf "$dir/build"
  echo "$BUSYBOX_SHA256" > "$dir/key"
}

# busybox_rootfs ROOT : the busybox image's root filesystem.
busybox_rootfs() {
  local root=$1 bb=$OUT/busybox-src/busybox applet
  mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,root,home,tmp,var/spool/mail,var/www}
  chmod 1777 "$root/tmp"
  chmod 0700 "$root/root"
  install -m 0755 "$bb" "$root/bin/busybox"
  # Every applet in /bin, as in docker.io's busybox image (specs run e.g. /bin/sysctl,
  # which `busybox --list-full` would put in /sbin).
  for applet in $("$bb" --list); do
    [[ $applet == busybox ]] && continue
    ln -sfn busybox "$root/bin/$applet"
  done
  # docker.io busybox's /etc/passwd and /etc/group.
  cat > "$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
bin:x:2:2:bin:/bin:/bin/false
sys:x:3:3:sys:/dev:/bin/false
sync:x:4:100:sync:/bin:/bin/sync
mail:x:8:8:mail:/var/spool/mail:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
operator:x:37:37:Operator:/var:/bin/false
nobody:x:65534:65534:nobody:/home:/bin/false
EOF
  cat > "$root/etc/group" <<'EOF'
root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
disk:x:6:
lp:x:7:
mail:x:8:
kmem:x:9:
wheel:x:10:root
cdrom:x:11:
dialout:x:18:
floppy:x:19:
video:x:28:
audio:x:29:
tape:x:32:
www-data:x:33:
operator:x:37:
utmp:x:43:
plugdev:x:46:
staff:x:50:
lock:x:54:
netdev:x:82:
users:x:100:
nogroup:x:65534:
EOF
  chmod 0644 "$root/etc/passwd" "$root/etc/group"
}

# pack IMAGE KEY NAME BUILD_OCI_ARGS... : $OUT/IMAGE/image.tar from $OUT/IMAGE/rootfs
# (filled by the caller) unless $OUT/IMAGE/key is KEY already.
cached() { [[ -f $OUT/$1/image.tar && "$(cat "$OUT/$1/key" 2>/dev/null)" == "$2" ]]; }
pack() {
  local image=$1 key=$2 name=$3
  shift 3
  python3 "$REPO/images/build-oci.py" --rootfs "$OUT/$image/rootfs" --out "$OUT/$image/image.tar" \
    --name "$name" --env "$PATH_ENV" "$@" > "$OUT/$image/digest"
  rm -rf "$OUT/$image/rootfs"
  echo "$key" > "$OUT/$image/key"
  log "built $name ($(cat "$OUT/$image/digest"))"
}

# script_key FILE... : a hash of the contents (not the paths) of the inputs.
script_key() { sha256sum "${BASH_SOURCE[0]}" "$REPO/images/build-oci.py" "$@" | cut -d' ' -f1 | sha256sum | cut -d' ' -f1; }

[[ -x $BIN_DIR/nonewprivs ]] || die "$BIN_DIR/nonewprivs missing; run hack/lib/conformance-build.sh"
build_busybox
mkdir -p "$OUT"

key=$(script_key "$OUT/busybox-src/busybox" <(echo "$registry"))
if ! cached e2e-busybox "$key"; then
  rm -rf "$OUT/e2e-busybox" && mkdir -p "$OUT/e2e-busybox"
  busybox_rootfs "$OUT/e2e-busybox/rootfs"
  pack e2e-busybox "$key" "$BUSYBOX_NAME" --cmd '["sh"]'
fi

key=$(script_key "$OUT/busybox-src/busybox" "$BIN_DIR/nonewprivs" <(echo "$registry"))
if ! cached nonewprivs "$key"; then
  rm -rf "$OUT/nonewprivs" && mkdir -p "$OUT/nonewprivs"
  busybox_rootfs "$OUT/nonewprivs/rootfs"
  mkdir -p "$OUT/nonewprivs/rootfs/usr/local/bin"
  install -m 4755 "$BIN_DIR/nonewprivs" "$OUT/nonewprivs/rootfs/usr/local/bin/nnp"
  pack nonewprivs "$key" "$NONEWPRIVS_NAME" --cmd '["nnp"]'
fi

[[ -n $address ]] || exit 0
ctr_() { ctr --address "$address" -n k8s.io "$@"; }
# import IMAGE NAME : unless NAME already points at the built digest.
import() {
  local want
  want=$(cat "$OUT/$1/digest")
  if ctr_ images ls 2>/dev/null | awk -v n="$2" -v d="$want" '$1 == n && $3 == d { f = 1 } END { exit !f }'; then
    return 0
  fi
  log "importing $2 ($want)"
  ctr_ images import ${snapshotter:+--snapshotter "$snapshotter"} "$OUT/$1/image.tar" >&2
}
import e2e-busybox "$BUSYBOX_NAME"
import nonewprivs "$NONEWPRIVS_NAME"
"$REPO/images/agnhost/build.sh" --address "$address" ${snapshotter:+--snapshotter "$snapshotter"} >/dev/null
# Other names for agnhost, tagged from the upstream name right after the import, then
# checked against the digest images/agnhost/build.sh built (another checkout's agnhost
# build imports a different image under the upstream name).
agnhost_digest=$(cat "$KRS_CLUSTER_DIR/images/agnhost/digest")
digest_of() { ctr_ images ls 2>/dev/null | awk -v n="$1" '$1 == n { print $3 }'; }
for name in "$AGNHOST_NAME" "$AGNHOST_PREV_NAME"; do
  [[ $name == "$AGNHOST_UPSTREAM_NAME" ]] && continue
  ctr_ images tag --force "$AGNHOST_UPSTREAM_NAME" "$name" >/dev/null
done
for name in "$AGNHOST_NAME" "$AGNHOST_PREV_NAME"; do
  [[ "$(digest_of "$name")" == "$agnhost_digest" ]] ||
    die "$name is not the agnhost image built here ($agnhost_digest); something imported another one meanwhile: run again"
done
printf '%s\n' "$BUSYBOX_NAME" "$NONEWPRIVS_NAME" "$AGNHOST_NAME" "$AGNHOST_PREV_NAME"
