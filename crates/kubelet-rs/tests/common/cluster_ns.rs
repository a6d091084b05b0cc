//! Helpers of the tests that run API server pods on a kubelet-rs node of the test control
//! plane (`kubelet_e2e::cluster`), in a namespace of their own.

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use kubelet_e2e::cluster::Cluster;
use serde_json::Value;

/// `kubectl ARGS`' standard output; fails the test when kubectl fails.
pub fn ok_stdout(c: &Cluster, args: &[&str]) -> String {
    c.kubectl_output(args).unwrap()
}

/// `kubectl ARGS` (with `-o json`) parsed.
pub fn get_json(c: &Cluster, args: &[&str]) -> Value {
    serde_json::from_str(&ok_stdout(c, args)).unwrap()
}

/// `kubectl create` in `ns`; retried while the new namespace has no default service account
/// yet.
pub fn create(c: &Cluster, ns: &str, object: &Value) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut child = c
            .kubectl()
            .args(["-n", ns, "create", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(object.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            return;
        }
        assert!(
            err.contains("serviceaccount") && Instant::now() < deadline,
            "{err}"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Deletes `ns` and waits (up to 2 minutes) until it is gone.
pub fn delete_namespace(c: &Cluster, ns: &str) {
    let args = ["delete", "namespace", ns, "--ignore-not-found", "--wait"];
    let _ = c.kubectl().args(args).arg("--timeout=120s").output();
}

/// Deletes the namespace when dropped, so a failed test leaves no pods behind.
pub struct Cleanup<'a> {
    /// The cluster.
    pub c: &'a Cluster,
    /// The namespace.
    pub ns: &'a str,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        delete_namespace(self.c, self.ns);
    }
}

/// The condition `kind` of an object's `status.conditions`.
pub fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

/// Polls `f` every second until it returns `Some`; fails the test after `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_secs(1));
    }
}
