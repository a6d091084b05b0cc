//! `--vmodule` reaches the log of a started kubelet-rs: the V(2) line of `startup.rs`
//! appears at `-v=0` only when a pattern names that file (klog's per-file verbosity).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::{FakeSetup, Proc, fake_setup, wait_healthy};
use nix::sys::signal::Signal;

/// The debug (V(2)) line `startup::run` logs.
const V2_LINE: &str = "\"Authentication and authorization\"";

async fn start_log(args: &[&str]) -> String {
    let setup: FakeSetup = fake_setup("").await;
    let mut all = vec!["--config", setup.cfg.to_str().unwrap(), "--v=0"];
    all.extend_from_slice(args);
    let mut p = Proc::spawn(setup.dir.path(), "k", &all);
    assert!(
        wait_healthy(&mut p, setup.port, Duration::from_secs(30)).await,
        "log:\n{}",
        p.log()
    );
    p.signal(Signal::SIGTERM);
    assert_eq!(
        p.wait_exit(Duration::from_secs(5)).await,
        Some(0),
        "log:\n{}",
        p.log()
    );
    p.log()
}

#[tokio::test(flavor = "multi_thread")]
async fn vmodule_flag_raises_one_files_verbosity_in_a_started_kubelet() {
    let log = start_log(&[]).await;
    assert!(!log.contains(V2_LINE), "-v=0 alone hides V(2):\n{log}");
    let log = start_log(&["--vmodule=startup=2"]).await;
    assert!(
        log.lines()
            .any(|l| l.starts_with('I') && l.contains("startup.rs:") && l.contains(V2_LINE)),
        "--vmodule=startup=2 shows startup.rs's V(2) line:\n{log}"
    );
    let log = start_log(&["--vmodule=sync*=4,pleg=4"]).await;
    assert!(
        !log.contains(V2_LINE),
        "other files' patterns leave startup.rs at -v:\n{log}"
    );
}
