#!/usr/bin/env bash
# Coverage-guided fuzzing of the kubelet API (fuzz/: routing, query parsing, the streaming
# upgrade handshake; kubelet_server::fuzzing), for a bounded time, on STABLE Rust:
#
#   hack/fuzz.sh [SECONDS]   (default 60, per target)
#
# How it works without nightly: cargo-fuzz is a driver around libfuzzer-sys (which builds
# libFuzzer's C++ with the `cc` crate, on any toolchain) plus rustc flags. Only the
# sanitizer flag (-Zsanitizer=address) needs nightly; the coverage instrumentation that
# guides libFuzzer is stable codegen options, the same ones cargo-fuzz passes. This script
# builds fuzz/ in release with those flags and no sanitizer (the code under test is safe
# Rust; panics are what the targets look for) and runs each target binary with
# -max_total_time. With cargo-fuzz and nightly installed, `cd fuzz && cargo fuzz run
# server_request` runs the same targets with AddressSanitizer.
# The seed corpora are fuzz/corpus/<target>/ (copied; new inputs stay in a temp dir). A
# crash fails the script and leaves the input in $KRS_FUZZ_ARTIFACTS (default
# /tmp/krs-fuzz-artifacts). The stable, libFuzzer-free driver of the same targets is
# crates/server/tests/fuzz_stable.rs (part of cargo test).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
artifacts=${KRS_FUZZ_ARTIFACTS:-/tmp/krs-fuzz-artifacts}
target_dir=${CARGO_TARGET_DIR:-$PWD/target}/fuzz
mkdir -p "$artifacts"
# An explicit --target keeps RUSTFLAGS off build scripts and proc macros (as cargo-fuzz does).
triple=$(rustc -vV | sed -n 's/^host: //p')

RUSTFLAGS="--cfg fuzzing -Cdebug-assertions -Coverflow-checks \
-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares" \
  cargo build --release --manifest-path fuzz/Cargo.toml --target-dir "$target_dir" --target "$triple" \
  --bin server_request --bin server_query >&2

for t in server_request server_query; do
  work=$(mktemp -d)
  cp fuzz/corpus/$t/* "$work/"
  echo ">>> fuzzing $t for ${secs}s" >&2
  "$target_dir/$triple/release/$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/$t-" -print_final_stats=1 "$work" 2>&1 | tail -n 12 >&2
  rm -rf "$work"
done
