// Turns the skip variables into cfgs, so that a test that needs the real runtime or
// control plane is *ignored* (and counted as such by the test runner), never passed, when
// it is skipped on purpose:
//
// * `KRS_SKIP_RUNTIME_TESTS=1` sets `krs_skip_runtime`;
// * `KRS_SKIP_CLUSTER_TESTS=1` sets `krs_skip_cluster`.
//
// Such tests carry `#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]`
// (or the cluster one). Without the variable they run, and fail when what they need is
// not there. `crates/kubelet-rs/build.rs` includes this file.

pub fn main() {
    for (env, cfg) in [
        ("KRS_SKIP_RUNTIME_TESTS", "krs_skip_runtime"),
        ("KRS_SKIP_CLUSTER_TESTS", "krs_skip_cluster"),
    ] {
        println!("cargo::rerun-if-env-changed={env}");
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        if std::env::var(env).is_ok_and(|v| v == "1") {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
