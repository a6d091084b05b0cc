#!/usr/bin/env bash
# Fails when ARCHITECTURE.md names a repository path that does not exist, so the map of
# startup steps and loops to Rust modules stays true.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=0
while IFS= read -r path; do
  if [ ! -e "$path" ]; then
    echo "ARCHITECTURE.md names a missing path: $path" >&2
    missing=1
  fi
done < <(grep -oE '`(crates|hack|e2e|bench|examples)/[^` ]+`' ARCHITECTURE.md | tr -d '`' | sort -u)
[ "$missing" -eq 0 ] && echo "ARCHITECTURE.md: every named path exists"
exit "$missing"
