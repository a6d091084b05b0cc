//! Pod sources: static pod files and URL, merged into one stream of pod updates (pkg/kubelet/config).

pub mod api_refs;
pub mod clock;
pub mod config;
pub mod decode;
pub mod defaults;
pub mod file;
mod hash;
pub mod http;
pub mod quantity;
pub mod static_pod;
pub mod types;
pub mod validation;
