//! The kubelet's container runtime manager on top of CRI (upstream `pkg/kubelet/kuberuntime`,
//! `pkg/kubelet/images`, `pkg/kubelet/logs`).
//!
//! | Rust module    | Upstream Go                                                        |
//! |----------------|--------------------------------------------------------------------|
//! | [`quantity`]   | `apimachinery/pkg/api/resource` (`Value`, `MilliValue`)            |
//! | [`qos`]        | `apis/core/v1/helper/qos`, `kubelet/qos/policy.go`                 |
//! | [`resources`]  | `kuberuntime_container_linux.go`, `kuberuntime_sandbox_linux.go`   |
//! | [`cgroup`]     | `cm/pod_container_manager_linux.go` (pod cgroup names)             |
//! | [`dns`]        | `kubelet/network/dns/dns.go`, `GeneratePodHostNameAndDomain`       |
//! | [`expansion`]  | `third_party/forked/golang/expansion`                              |
//! | [`labels`]     | `kuberuntime/labels.go`                                            |
//! | [`os`]         | `kubecontainer.OSInterface`                                        |

pub mod actions;
pub mod cgroup;
pub mod container;
pub mod dns;
pub mod env;
pub mod error;
pub mod expansion;
pub mod gc;
pub mod helper;
pub mod hosts;
pub mod image;
pub mod image_ref;
pub mod keyring;
pub mod kill;
pub mod labels;
pub mod lifecycle;
pub mod logs;
pub mod manager;
pub mod os;
pub mod qos;
pub mod quantity;
pub mod resources;
pub mod sandbox;
pub mod security;
pub mod sync;
pub mod volumes;

pub use error::RuntimeManagerError;
