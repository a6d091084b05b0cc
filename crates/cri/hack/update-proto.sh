#!/usr/bin/env bash
# Re-vendor the CRI v1 protobuf definition (k8s.io/cri-api/pkg/apis/runtime/v1/api.proto)
# through the Go module proxy and record its provenance in proto/SOURCE.md.
#
# Usage: crates/cri/hack/update-proto.sh [MODULE_VERSION]   (default: the version in SOURCE.md)
set -euo pipefail

crate_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source_md="${crate_dir}/proto/SOURCE.md"
rel_path="pkg/apis/runtime/v1/api.proto"
dest="${crate_dir}/proto/k8s.io/cri-api/${rel_path}"

version="${1:-}"
if [[ -z "${version}" ]]; then
  # shellcheck disable=SC2016 # the backticks are literal Markdown
  version="$(sed -n 's/^- Module version: `\(v[^`]*\)`$/\1/p' "${source_md}")"
fi
if [[ -z "${version}" ]]; then
  echo "update-proto.sh: no version given and none found in ${source_md}" >&2
  exit 1
fi

command -v go >/dev/null || { echo "update-proto.sh: go is required" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
(
  cd "${work}"
  go mod init cri-proto-fetch >/dev/null 2>&1
  go mod download -json "k8s.io/cri-api@${version}" >"${work}/download.json"
)
module_dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' "${work}/download.json")"
module_sum="$(sed -n 's/^[[:space:]]*"Sum": "\(.*\)",$/\1/p' "${work}/download.json")"
if [[ ! -f "${module_dir}/${rel_path}" ]]; then
  echo "update-proto.sh: ${rel_path} not found in k8s.io/cri-api@${version} (${module_dir})" >&2
  exit 1
fi

mkdir -p "$(dirname "${dest}")"
# Strip gogoproto (none since cri-api 1.26, kept for older tags): its import and its options.
sed -e '/^import "github.com\/gogo\/protobuf\/gogoproto\/gogo.proto";/d' \
    -e '/^option (gogoproto\.[a-z_]*) = [a-z]*;$/d' \
    -e 's/ \[(gogoproto\.[a-z_]*) = [^]]*\]//g' \
    "${module_dir}/${rel_path}" >"${dest}"
chmod 0644 "${dest}"

upstream_sha="$(sha256sum "${module_dir}/${rel_path}" | cut -d' ' -f1)"
vendored_sha="$(sha256sum "${dest}" | cut -d' ' -f1)"

# Keep the hand-written "## Notes" section (if any) across updates.
notes=""
if [[ -f "${source_md}" ]]; then
  notes="$(sed -n '/^## Notes$/,$p' "${source_md}")"
fi

cat >"${source_md}" <<MD
# Vendored CRI protobuf

- Module: \`k8s.io/cri-api\`
- Module version: \`${version}\`
- Module sum (go.sum h1): \`${module_sum}\`
- Path in module: \`${rel_path}\`
- Vendored as: \`proto/k8s.io/cri-api/${rel_path}\`
- sha256 of the upstream file: \`${upstream_sha}\`
- sha256 of the vendored file: \`${vendored_sha}\`
- Fetched through the Go module proxy (\`go mod download -json k8s.io/cri-api@${version}\`).
- Changes: gogoproto import/options stripped (the file has had none since cri-api 1.26, so the
  two hashes are equal when nothing was stripped).

Regenerate with \`crates/cri/hack/update-proto.sh [version]\`; \`build.rs\` compiles the file
with tonic-prost-build and the protoc from protoc-bin-vendored.
MD
if [[ -n "${notes}" ]]; then
  printf '\n%s\n' "${notes}" >>"${source_md}"
fi
echo "vendored k8s.io/cri-api@${version} ${rel_path} (sha256 ${vendored_sha})"
