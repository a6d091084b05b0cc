# shellcheck shell=bash
# The two images of the test runtime, built locally (no registry is reachable)
# from images/ and imported into containerd's k8s.io namespace.
#
#   pause:   images/pause/pause.c, `cc -static -Os`, ENTRYPOINT ["/pause"], USER 65535
#   busybox: Debian's busybox-static with every applet symlinked, /etc/passwd and
#            /etc/group with root and nobody (65534), CMD ["sh"]
#
# Each image is rebuilt only when its inputs change (a key of their hashes), and
# imported only when a name is missing or points at another digest.

# containerd's sandbox_image; the first name of the pause image.
KRS_PAUSE_IMAGE="registry.k8s.io/pause:3.10"
# Every name an image is imported under: the kubelet default sandbox image,
# the names upstream e2e tests use (test/utils/image/manifest.go), and the
# docker-hub style names people type.
KRS_PAUSE_NAMES=(
	"$KRS_PAUSE_IMAGE"
	"registry.k8s.io/pause:3.10.1"
)
KRS_BUSYBOX_IMAGE="docker.io/library/busybox:1.36"
KRS_BUSYBOX_NAMES=(
	"$KRS_BUSYBOX_IMAGE"
	"docker.io/library/busybox:latest"
	"registry.k8s.io/e2e-test-images/busybox:1.36.1-1"
)
# registry.k8s.io/e2e-test-images/busybox:1.37.0-1, the e2e suite's busybox, is not one of
# these: Debian's busybox drops environment variables whose names are not shell identifiers
# from `sh -c env`, which upstream's busybox 1.37.0 keeps; images/conformance/build.sh
# builds that image from busybox's release source.
KRS_IMAGE_PATH_ENV="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

krs_image_arch() {
	local arch
	arch="$(dpkg --print-architecture 2>/dev/null || uname -m)"
	case "$arch" in
	x86_64) echo amd64 ;;
	aarch64) echo arm64 ;;
	*) echo "$arch" ;;
	esac
}

# krs_inputs_key FILE... : one hash over the given files and the build scripts.
krs_inputs_key() {
	sha256sum "$@" "$KRS_REPO_ROOT/images/build-oci.py" \
		"$KRS_REPO_ROOT/hack/lib/runtime-images.sh" | sha256sum | cut -d' ' -f1
}

# krs_cached IMAGE KEY : true when $DIR/images/IMAGE has a tar built from KEY.
krs_cached() {
	local dir="$KRS_RUNTIME_DIR/images/$1"
	[ -f "$dir/image.tar" ] && [ -f "$dir/digest" ] && [ "$(cat "$dir/key" 2>/dev/null)" = "$2" ]
}

krs_build_pause() {
	local dir="$KRS_RUNTIME_DIR/images/pause" src="$KRS_REPO_ROOT/images/pause/pause.c" key
	key="$(krs_inputs_key "$src")"
	krs_cached pause "$key" && return 0
	krs_log "building the pause image"
	rm -rf "$dir" && mkdir -p "$dir/rootfs"
	cc -static -Os -Wall -Werror -DVERSION='"kubelet-rs"' -o "$dir/rootfs/pause" "$src" ||
		krs_die "compiling $src failed"
	strip "$dir/rootfs/pause" 2>/dev/null || true
	chmod 0755 "$dir/rootfs/pause"
	local args=(--rootfs "$dir/rootfs" --out "$dir/image.tar" --arch "$(krs_image_arch)"
		--entrypoint '["/pause"]' --user 65535:65535 --env "$KRS_IMAGE_PATH_ENV")
	local n
	for n in "${KRS_PAUSE_NAMES[@]}"; do args+=(--name "$n"); done
	python3 "$KRS_REPO_ROOT/images/build-oci.py" "${args[@]}" >"$dir/digest" ||
		krs_die "packing the pause image failed"
	printf '%s\n' "$key" >"$dir/key"
}

# krs_busybox_rootfs DIR : a root filesystem around Debian's static busybox.
krs_busybox_rootfs() {
	local root="$1" applet
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,root,home,tmp,var,proc,sys,dev}
	chmod 1777 "$root/tmp"
	chmod 0700 "$root/root"
	cp /bin/busybox "$root/bin/busybox"
	chmod 0755 "$root/bin/busybox"
	for applet in $(/bin/busybox --list-full); do
		[ "$applet" = bin/busybox ] && continue
		mkdir -p "$root/$(dirname "$applet")"
		ln -sfn /bin/busybox "$root/$applet"
	done
	[ -e "$root/bin/sh" ] || krs_die "busybox has no sh applet"
	cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/home:/bin/false
EOF
	cat >"$root/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
nobody:x:65534:
EOF
	chmod 0644 "$root/etc/passwd" "$root/etc/group"
}

krs_build_busybox() {
	local dir="$KRS_RUNTIME_DIR/images/busybox" key
	key="$(krs_inputs_key /bin/busybox)"
	krs_cached busybox "$key" && return 0
	krs_log "building the busybox image"
	rm -rf "$dir" && mkdir -p "$dir"
	krs_busybox_rootfs "$dir/rootfs"
	local args=(--rootfs "$dir/rootfs" --out "$dir/image.tar" --arch "$(krs_image_arch)"
		--cmd '["sh"]' --env "$KRS_IMAGE_PATH_ENV")
	local n
	for n in "${KRS_BUSYBOX_NAMES[@]}"; do args+=(--name "$n"); done
	python3 "$KRS_REPO_ROOT/images/build-oci.py" "${args[@]}" >"$dir/digest" ||
		krs_die "packing the busybox image failed"
	printf '%s\n' "$key" >"$dir/key"
}

# krs_import IMAGE NAME... : import $DIR/images/IMAGE/image.tar unless every
# NAME already points at the built manifest digest in the k8s.io namespace.
krs_import() {
	local image="$1" dir="$KRS_RUNTIME_DIR/images/$1" want listing name
	shift
	want="$(cat "$dir/digest")"
	listing="$(krs_ctr -n k8s.io images ls 2>/dev/null)" || krs_die "ctr images ls failed"
	for name in "$@"; do
		if ! awk -v n="$name" -v d="$want" '$1 == n && $3 == d { found = 1 } END { exit !found }' \
			<<<"$listing"; then
			krs_log "importing the $image image ($want)"
			krs_ctr -n k8s.io images import --snapshotter "$KRS_SNAPSHOTTER_IN_USE" \
				"$dir/image.tar" >&2 || krs_die "ctr images import $dir/image.tar failed"
			return 0
		fi
	done
}

krs_images_up() {
	krs_build_pause
	krs_build_busybox
	krs_import pause "${KRS_PAUSE_NAMES[@]}"
	krs_import busybox "${KRS_BUSYBOX_NAMES[@]}"
}
