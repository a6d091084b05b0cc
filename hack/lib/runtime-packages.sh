# shellcheck shell=bash
# Debian packages the test runtime needs, installed only when missing.

# Package -> a file it installs (how we decide it is present).
KRS_PACKAGES=(
	"containerd:/usr/bin/containerd"
	"containerd:/usr/bin/ctr"
	"runc:/usr/sbin/runc"
	"containernetworking-plugins:/usr/lib/cni/bridge"
	"busybox-static:/bin/busybox"
	"iptables:/usr/sbin/iptables"
	"iproute2:/usr/sbin/ip"
	"util-linux:/usr/bin/flock"
	"gcc:/usr/bin/cc"
	"libc6-dev:/usr/lib/x86_64-linux-gnu/libc.a"
	"python3:/usr/bin/python3"
)

# krs_package_present PKG FILE : the file exists and, for busybox, is the
# static build (the dynamic `busybox` package also installs /bin/busybox).
krs_package_present() {
	local pkg="$1" file="$2"
	[ -e "$file" ] || return 1
	if [ "$pkg" = busybox-static ]; then
		dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'install ok installed'
	fi
}

krs_install_packages() {
	local entry pkg file missing=()
	local libc_a
	libc_a="/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/libc.a"
	for entry in "${KRS_PACKAGES[@]}"; do
		pkg="${entry%%:*}"
		file="${entry#*:}"
		[ "$pkg" = libc6-dev ] && file="$libc_a"
		if ! krs_package_present "$pkg" "$file"; then
			case " ${missing[*]-} " in *" $pkg "*) ;; *) missing+=("$pkg") ;; esac
		fi
	done
	[ "${#missing[@]}" -eq 0 ] && return 0
	krs_log "installing Debian packages: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	local wait_lock=(-o DPkg::Lock::Timeout=300)
	apt-get "${wait_lock[@]}" update -qq >&2 || krs_die "apt-get update failed"
	apt-get "${wait_lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >&2 ||
		krs_die "apt-get install ${missing[*]} failed"
}
