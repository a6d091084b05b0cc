//! A projected `serviceAccountToken` volume is refreshed before its token expires
//! (upstream `pkg/kubelet/token/token_manager.go` `requiresRefresh`: older than 80 % of
//! its lifetime, less up to 10 s of jitter; the volume is set up again on each pod sync,
//! at least every `syncFrequency`, 1 m by default), on a kubelet-rs node of the real
//! control plane (`hack/cluster-up.sh`, `hack/kubelet-rs-node-up.sh`).
//!
//! **Slow: about 9 minutes.** The token asks for `expirationSeconds: 600`, the smallest
//! the API server accepts (API validation: "may not specify a duration less than 10
//! minutes"; `--service-account-max-token-expiration` cannot go lower either), and the
//! kubelet's clock is not faked: the test waits, wall-clock, for the kubelet to write a new
//! token into the volume. It checks from the JWTs themselves that the first token lives
//! 600 s, that the new one was issued no earlier than 80 % of the first one's lifetime
//! (less the jitter), that it was in the volume before the first one expired, and that the
//! container reads it (`kubectl exec`).
//!
//! Node `krs-t-token-rs` (198.18.255.81), namespace `t-token`. Built as ignored with
//! `KRS_SKIP_CLUSTER_TESTS=1` or `KRS_SKIP_RUNTIME_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod common;

use common::cluster_ns::{Cleanup, create, delete_namespace, get_json, ok_stdout, wait_for};
use kubelet_e2e::cluster::{self, NodeKubelet, NodeSpec};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const NODE: &str = "krs-t-token-rs";
const NODE_IP: &str = "198.18.255.81";
const NS: &str = "t-token";
const TAINT_KEY: &str = "kubelet-rs.test/token";
const BUSYBOX: &str = "docker.io/library/busybox:1.36";
const LIFETIME: i64 = 600;

/// Base64url without padding (a JWT segment).
fn base64url(s: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes().filter(|c| *c != b'=') {
        let v = ALPHABET.iter().position(|a| *a == c).unwrap() as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

/// The `iat` and `exp` claims of a JWT.
fn iat_exp(jwt: &str) -> (i64, i64) {
    let payload = jwt.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(&base64url(payload)).unwrap();
    (
        claims["iat"].as_i64().unwrap(),
        claims["exp"].as_i64().unwrap(),
    )
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[test]
fn projected_token_is_rewritten_before_it_expires() -> TestResult {
    let c = cluster::ensure()?;
    let mut spec = NodeSpec::new(
        NodeKubelet::KubeletRs(PathBuf::from(env!("CARGO_BIN_EXE_kubelet-rs"))),
        NODE,
        NODE_IP,
    );
    spec.taints = vec![format!("{TAINT_KEY}=:NoSchedule")];
    let node = c.start_node(spec)?;
    delete_namespace(&c, NS);
    ok_stdout(&c, &["create", "namespace", NS]);
    let cleanup = Cleanup { c: &c, ns: NS };

    create(
        &c,
        NS,
        &json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "tok"},
            "spec": {
                "nodeName": NODE,
                "terminationGracePeriodSeconds": 1,
                "automountServiceAccountToken": false,
                "tolerations": [
                    {"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
                ],
                "containers": [{
                    "name": "main",
                    "image": BUSYBOX,
                    "command": ["sleep", "3600"],
                    "volumeMounts": [{"name": "tok", "mountPath": "/var/run/tok"}],
                }],
                "volumes": [{"name": "tok", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": LIFETIME}},
                ]}}],
            },
        }),
    );
    let pod = wait_for("tok running", Duration::from_secs(120), || {
        let p = get_json(&c, &["-n", NS, "get", "pod", "tok", "-o", "json"]);
        (p["status"]["phase"] == "Running").then_some(p)
    });
    let uid = pod["metadata"]["uid"].as_str().unwrap();
    let file = node
        .dir
        .join("root/pods")
        .join(uid)
        .join("volumes/kubernetes.io~projected/tok/token");
    let first = std::fs::read_to_string(&file)?;
    let (iat0, exp0) = iat_exp(&first);
    assert_eq!(
        exp0 - iat0,
        LIFETIME,
        "the API server kept the lifetime asked for"
    );

    // Poll until the kubelet wrote another token, at most until a while past expiry so
    // a late rewrite fails with the times in the message.
    let limit = u64::try_from(exp0 + 60 - unix_now()).unwrap_or(0);
    let (second, seen) = wait_for(
        "a new token in the volume",
        Duration::from_secs(limit),
        || {
            let t = std::fs::read_to_string(&file).ok()?;
            (t != first).then(|| (t, unix_now()))
        },
    );
    let (iat1, exp1) = iat_exp(&second);
    assert!(
        seen < exp0,
        "the new token appeared at {seen}, after the old one expired at {exp0}"
    );
    // requiresRefresh: now > exp - 20 % of the lifetime - jitter (jitter < 10 s).
    let refresh_from = exp0 - LIFETIME * 20 / 100 - 10;
    assert!(
        iat1 >= refresh_from,
        "renewed at {iat1}, before 80 % of the lifetime ({refresh_from})"
    );
    assert_eq!(exp1 - iat1, LIFETIME);
    assert!(exp1 > exp0);

    // The container reads the new token through its mount.
    let inside = ok_stdout(
        &c,
        &["-n", NS, "exec", "tok", "--", "cat", "/var/run/tok/token"],
    );
    assert_eq!(inside, second);
    drop(cleanup);
    node.stop()?;
    Ok(())
}
