//! The support table's warnings (`kubelet_config::support`): a start and `--print-config` name
//! every setting accepted without upstream's effect, and the defaults upstream acts on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;

const EXTRA: &str = "volumePluginDir: /plugins\nruntimeRequestTimeout: 2s\n";

fn expected(log: &str) {
    for line in [
        "volumePluginDir (--volume-plugin-dir) is set to ",
        "/plugins",
        "but has no effect in kubelet-rs; the upstream kubelet loads FlexVolume drivers from this directory",
        "registryPullQPS (--registry-qps) has no effect in kubelet-rs, also at its default",
        "--image-credential-provider-config is set but has no effect in kubelet-rs",
    ] {
        assert!(log.contains(line), "missing warning {line:?} in:\n{log}");
    }
    assert!(!log.contains("maxPods"), "{log}");
    // The eviction manager acts on evictionHard as upstream's does.
    assert!(!log.contains("evictionHard (--eviction-hard)"), "{log}");
}

#[test]
fn print_config_prints_a_warning_per_setting_without_effect() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "k.yaml",
        &standalone_config("unix:///run/x.sock", 10248, EXTRA),
    );
    let out = std::process::Command::new(BIN)
        .args(["--print-config", "--config", cfg.to_str().unwrap()])
        .arg("--image-credential-provider-config=/etc/kubernetes/cp.yaml")
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0), "{err}");
    expected(&err);
    assert!(
        err.lines()
            .any(|l| l.starts_with("W volumePluginDir (--volume-plugin-dir)")),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_start_logs_the_same_warnings_before_it_touches_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("unix://{}/missing.sock", dir.path().display());
    let cfg = write(
        dir.path(),
        "k.yaml",
        &standalone_config(&missing, free_port(), EXTRA),
    );
    let mut p = Proc::spawn(
        dir.path(),
        "k",
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--image-credential-provider-config=/etc/kubernetes/cp.yaml",
        ],
    );
    // No runtime listens: the start fails at the CRI step, after the warnings.
    assert_eq!(p.wait_exit(Duration::from_secs(30)).await, Some(1));
    expected(&p.log());
}
