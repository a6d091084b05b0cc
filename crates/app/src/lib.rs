//! Composition root: the kubelet startup sequence (cmd/kubelet/app/server.go).

/// Entry point of the binary.
pub fn main() -> std::process::ExitCode {
    std::process::ExitCode::SUCCESS
}
