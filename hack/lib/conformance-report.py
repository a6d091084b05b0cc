#!/usr/bin/env python3
"""Summaries of upstream e2e.test runs (hack/conformance.sh).

  conformance-report.py summary REPORT_JSON FOCUS SKIP OUT_TSV
      REPORT_JSON is the Ginkgo JSON report that e2e.test writes with
      --report-complete-ginkgo (<report dir>/ginkgo/report.json). Specs whose full text
      matches FOCUS and not SKIP (Go regexps of this simple kind are Python regexps too) are
      the selected ones; prints "P passed, F failed, S skipped" and the failed names, and
      writes OUT_TSV: one "state<TAB>full spec text" line per selected spec, sorted.
  conformance-report.py compare REF_TSV OTHER_TSV REF_NAME OTHER_NAME
      prints the specs that passed on REF and did not pass on OTHER.

Standard library only.
"""

import json
import re
import sys

FAILED = {"failed", "timedout", "panicked", "interrupted", "aborted"}


def full_text(spec: dict) -> str:
    parts = list(spec.get("ContainerHierarchyTexts") or [])
    if spec.get("LeafNodeText"):
        parts.append(spec["LeafNodeText"])
    return " ".join(parts)


def summary(report_path: str, focus: str, skip: str, out_path: str) -> int:
    with open(report_path, encoding="utf-8") as f:
        suites = json.load(f)
    focus_re, skip_re = re.compile(focus), re.compile(skip) if skip else None
    rows = {}
    for suite in suites:
        for spec in suite.get("SpecReports") or []:
            if spec.get("LeafNodeType") != "It":
                continue
            name = full_text(spec)
            if not focus_re.search(name) or (skip_re and skip_re.search(name)):
                continue
            state = spec.get("State", "")
            if state in FAILED:
                state = "failed"
            elif state not in ("passed", "skipped"):
                state = "skipped"
            rows[name] = state
    with open(out_path, "w", encoding="utf-8") as f:
        for name in sorted(rows):
            f.write(f"{rows[name]}\t{name}\n")
    count = {s: sum(1 for v in rows.values() if v == s) for s in ("passed", "failed", "skipped")}
    print(f"{count['passed']} passed, {count['failed']} failed, {count['skipped']} skipped"
          f" ({len(rows)} specs selected)")
    for name in sorted(n for n, s in rows.items() if s == "failed"):
        print(f"  FAILED {name}")
    return 0


def read_tsv(path: str) -> dict:
    rows = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            state, _, name = line.rstrip("\n").partition("\t")
            rows[name] = state
    return rows


def compare(ref_path: str, other_path: str, ref_name: str, other_name: str) -> int:
    ref, other = read_tsv(ref_path), read_tsv(other_path)
    regressions = sorted(n for n, s in ref.items() if s == "passed" and other.get(n) != "passed")
    print(f"{len(regressions)} specs pass on {ref_name} and do not pass on {other_name}:")
    for name in regressions:
        print(f"  {other.get(name, 'not run')}\t{name}")
    return 0


def main(argv: list) -> int:
    if len(argv) == 6 and argv[1] == "summary":
        return summary(*argv[2:])
    if len(argv) == 6 and argv[1] == "compare":
        return compare(*argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
