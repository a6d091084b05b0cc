//! Composition root of kubelet-rs: the command line, the startup sequence of
//! `cmd/kubelet/app/server.go`, and `RunKubelet` (`pkg/kubelet/kubelet.go`), which wires
//! the subsystem crates together. See ARCHITECTURE.md for the step-by-step map.

pub mod auth;
pub mod command;
pub mod configz;
pub mod kubelet;
pub mod lockfile;
pub mod notify;
pub mod startable;
pub mod startup;
pub mod version;

/// Entry point of the binary: runs the command line and returns the exit code.
pub fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    command::main_with_args(&args)
}
