//! `kubelet-rs`: the binary. All logic lives in `kubelet-app`.

fn main() -> std::process::ExitCode {
    kubelet_app::main()
}
