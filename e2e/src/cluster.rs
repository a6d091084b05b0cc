//! The real control plane (`hack/cluster-up.sh`), started once per test run.
