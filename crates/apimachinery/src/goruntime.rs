//! Go's `runtime.GOOS` / `runtime.GOARCH` for this build, as upstream reports them
//! (node labels, `nodeInfo`, user agents).

/// `runtime.GOOS`.
pub const GOOS: &str = "linux";

/// `runtime.GOARCH`: the Rust target architecture under Go's name.
pub fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        "loongarch64" => "loong64",
        other => other,
    }
}
