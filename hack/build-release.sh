#!/usr/bin/env bash
# Builds the release kubelet-rs the way it is measured and shipped: `cargo build --release
# -p kubelet-rs` plus profile-guided optimisation from the committed profile
# (pgo/kubelet-rs.profdata.gz, recorded by hack/pgo-train.sh). With the profile, the code the
# node runs is laid out together (`.text.hot`/`.text.unlikely`, kept apart by
# `-z keep-text-section-prefix`), so fewer of the binary's pages are ever touched (its RSS),
# and LLVM optimises the hot paths (its CPU). bench/README.md "Memory and idle CPU" has the
# figures.
#
#   hack/build-release.sh        # last line of output: the binary's path
#
# Without PGO (plain `cargo build --release`, target/release/kubelet-rs) when KRS_PGO=0, when
# the profile is missing, or when this rustc's LLVM is older than the profile's (its format
# would not be readable); the reason is printed. The PGO build has its own target directory
# ($CARGO_TARGET_DIR or target/, then pgo/), so plain release builds keep their cache.
# A profile older than the code is fine: functions that changed get no profile (rustc's
# mismatch warnings are silenced) and are optimised as without PGO.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
PROFILE_GZ="$REPO/pgo/kubelet-rs.profdata.gz"
PROFILE_LLVM="$(cat "$REPO/pgo/llvm-version" 2>/dev/null || echo 0)"

log() { printf '>>> %s\n' "$*" >&2; }

plain() {
  log "building kubelet-rs without PGO ($1)"
  (cd "$REPO" && cargo build --release -q -p kubelet-rs >&2)
  echo "$TARGET/release/kubelet-rs"
}

[[ ${KRS_PGO:-1} != 0 ]] || { plain "KRS_PGO=0"; exit 0; }
[[ -f $PROFILE_GZ ]] || { plain "no $PROFILE_GZ"; exit 0; }
llvm_major="$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')"
if [[ -z $llvm_major || $llvm_major -lt ${PROFILE_LLVM%%.*} ]]; then
  plain "rustc's LLVM ${llvm_major:-?} is older than the profile's (${PROFILE_LLVM})"
  exit 0
fi

out="$TARGET/pgo"
mkdir -p "$out"
# Decompressed only when the committed profile changed, so cargo does not rebuild for nothing.
if [[ ! -f $out/kubelet-rs.profdata || $PROFILE_GZ -nt $out/kubelet-rs.profdata ]]; then
  gzip -dc "$PROFILE_GZ" >"$out/kubelet-rs.profdata.tmp"
  mv "$out/kubelet-rs.profdata.tmp" "$out/kubelet-rs.profdata"
fi
log "building kubelet-rs with PGO (profile of LLVM $PROFILE_LLVM, rustc's LLVM $llvm_major)"
(
  cd "$REPO"
  RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$out/kubelet-rs.profdata -Cllvm-args=-no-pgo-warn-mismatch -Clink-arg=-Wl,-z,keep-text-section-prefix" \
    cargo build --release -q -p kubelet-rs --target-dir "$out/target" >&2
)
echo "$out/target/release/kubelet-rs"
