//! Benchmarks of kubelet-rs against the raw CRI floor and the upstream kubelet
//! (`/work/shared/reference/perf-anchors.md` §5.2 and §6 B4). See `bench/README.md`.
//!
//! The `static-pods` binary brings N pods up on the private containerd of
//! `hack/runtime-up.sh` three ways and reports makespan and per-pod p50/p99 of each, with the
//! ratios against the floor:
//! * [`floor`]: RunPodSandbox + CreateContainer + StartContainer straight over CRI;
//! * [`kubelet`]: a kubelet in standalone mode given N static pod manifests at once.
//!
//! * with `--steady-seconds` (B6, B10, [`steady`]): a steady-state window once the pods run,
//!   the kubelet behind the CRI call-counting proxy ([`cri_proxy`]).
//!
//! The `event-detection` binary and the suite's B9 phase ([`event_detect`]) kill containers
//! from outside and time how fast each kubelet's `/pods` shows it.
//!
//! Pure pieces ([`stats`], [`steps`], [`report`], [`manifest`], [`tracker`], [`cli`], the
//! arithmetic of [`steady`], [`cri_proxy`] and [`event_detect`]) are unit-tested; the rest
//! talks to the real runtime and is exercised by running the benchmark.

pub mod charge;
pub mod cli;
pub mod cluster;
pub mod cluster_events;
pub mod cri_ops;
pub mod cri_proxy;
pub mod env;
pub mod error;
pub mod event_detect;
pub mod eviction_detect;
pub mod floor;
pub mod guard;
pub mod kubelet;
pub mod manifest;
pub mod plots;
pub mod probe_cost;
pub mod process;
pub mod report;
pub mod scrape;
pub mod stats;
pub mod steady;
pub mod steps;
pub mod suite;
pub mod suite_report;
pub mod tracker;

pub use error::{BenchError, BenchResult};
