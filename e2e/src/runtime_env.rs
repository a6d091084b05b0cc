//! The private containerd test runtime (`hack/runtime-up.sh`), started once per test run.
