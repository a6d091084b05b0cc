//! The kubelet API's authorization matrix (issue #8, "Must show"): every route × every
//! identity, against an upstream kubelet v1.35.4 node AND a kubelet-rs node joined to the
//! same control plane (`hack/cluster-up.sh`), with the same `KubeletConfiguration`
//! (`hack/lib/cluster-node.sh`: x509 client CA, webhook authentication, `Webhook`
//! authorization, anonymous off). Each cell is the HTTP status the kubelet answers.
//!
//! Identities: no credentials; a client certificate from a foreign CA (`O=system:masters`,
//! which must not help); the node's own client certificate (`system:node:<node>`); a user
//! with no RBAC; a user allowed `nodes/stats` only; a user allowed `nodes/proxy`; a user
//! allowed `nodes/checkpoint`; the API server's kubelet client certificate (`kube-apiserver-kubelet-client`, bound to
//! `system:kubelet-api-admin`). Users are certificates of the cluster CA (`CN=<user>`).
//!
//! Every cell must be equal on both nodes, except the cells [`KNOWN`] lists with the
//! reason (none today); for those the authentication and authorization outcome
//! (401 / 403 / passed) must still be equal. `{ns}` in a path is the node's own test
//! namespace, where a busybox pod `cp` runs on that node (for `/checkpoint/` of a real
//! container: each runtime's answer, whose body must be equal too). The table is printed,
//! and written to `docs/kubelet-api-authz-matrix.md` with `KRS_UPDATE_AUTHZ_MATRIX=1`.
//!
//! Nodes `krs-t-apisec-up` (198.18.255.71) and `krs-t-apisec-rs` (198.18.255.72); RBAC
//! objects `krs-t-apisec-*`; namespaces `t-apiextra-cp-up`, `t-apiextra-cp-rs`. Built as ignored with `KRS_SKIP_CLUSTER_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use kubelet_e2e::cluster::{self, Cluster, NodeKubelet, NodeSpec};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const UPSTREAM: (&str, &str) = ("krs-t-apisec-up", "198.18.255.71");
const RS: (&str, &str) = ("krs-t-apisec-rs", "198.18.255.72");
const USER_NONE: &str = "krs-t-apisec-none";
const USER_STATS: &str = "krs-t-apisec-stats";
const USER_PROXY: &str = "krs-t-apisec-proxy";
const USER_CHECKPOINT: &str = "krs-t-apisec-checkpoint";
/// Each node's namespace for its `cp` pod (`{ns}` in [`REQUESTS`]).
const NS_UP: &str = "t-apiextra-cp-up";
const NS_RS: &str = "t-apiextra-cp-rs";
const BUSYBOX: &str = "docker.io/library/busybox:1.36";

/// `(method, path)` of every route (an unknown pod where a pod is needed).
const REQUESTS: &[(&str, &str)] = &[
    ("GET", "/healthz"),
    ("GET", "/healthz/syncloop"),
    ("GET", "/pods"),
    ("POST", "/pods"),
    ("GET", "/configz"),
    ("GET", "/runningpods/"),
    ("GET", "/stats/summary"),
    ("GET", "/metrics"),
    ("GET", "/metrics/cadvisor"),
    ("GET", "/metrics/resource"),
    ("GET", "/metrics/probes"),
    ("GET", "/logs/"),
    ("GET", "/logs/../etc/passwd"),
    ("GET", "/logs/%2e%2e/etc/passwd"),
    ("GET", "/logs/nonexistent-krs.log"),
    ("GET", "/debug/pprof/"),
    ("GET", "/debug/pprof/cmdline"),
    ("GET", "/debug/flags/v"),
    ("PUT", "/debug/flags/v"),
    ("GET", "/containerLogs/default/nope/c"),
    ("POST", "/exec/default/nope/c?command=true&output=1"),
    ("POST", "/attach/default/nope/c?output=1"),
    ("POST", "/run/default/nope/c?cmd=true"),
    ("POST", "/portForward/default/nope"),
    ("POST", "/checkpoint/default/nope/c"),
    ("GET", "/checkpoint/{ns}/cp/main"),
    ("POST", "/checkpoint/{ns}/cp/nope"),
    ("POST", "/checkpoint/{ns}/cp/main?timeout=x"),
    ("POST", "/checkpoint/{ns}/cp/main?timeout=30"),
    ("GET", "/nothing-here"),
];

/// Cells that may differ, with the reason: `(identity, method, path, why)`; `*` is any
/// identity the request passes authorization for.
const KNOWN: &[(&str, &str, &str, &str)] = &[];

struct Identity {
    name: &'static str,
    /// `(cert, key)`; `None`: no credentials.
    cert: Option<(PathBuf, PathBuf)>,
}

fn run(cmd: &mut Command) -> Result<String, Box<dyn std::error::Error>> {
    let out = cmd.stderr(Stdio::piped()).output()?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A client certificate `CN=cn[,O=org]` signed by `ca` (`ca.crt`, `ca.key` in `ca_dir`).
fn client_cert(
    dir: &Path,
    ca_crt: &Path,
    ca_key: &Path,
    cn: &str,
    org: Option<&str>,
) -> Result<(PathBuf, PathBuf), Box<dyn std::error::Error>> {
    let key = dir.join(format!("{cn}.key"));
    let csr = dir.join(format!("{cn}.csr"));
    let crt = dir.join(format!("{cn}.crt"));
    let ext = dir.join("client.ext");
    std::fs::write(
        &ext,
        "extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n",
    )?;
    let subj = match org {
        Some(o) => format!("/O={o}/CN={cn}"),
        None => format!("/CN={cn}"),
    };
    run(Command::new("openssl")
        .args([
            "req", "-newkey", "rsa:2048", "-nodes", "-subj", &subj, "-keyout",
        ])
        .arg(&key)
        .arg("-out")
        .arg(&csr))?;
    run(Command::new("openssl")
        .args(["x509", "-req", "-days", "1", "-set_serial"])
        .arg(format!(
            "{}",
            std::process::id() as u64 * 1000 + cn.len() as u64
        ))
        .arg("-in")
        .arg(&csr)
        .arg("-CA")
        .arg(ca_crt)
        .arg("-CAkey")
        .arg(ca_key)
        .arg("-extfile")
        .arg(&ext)
        .arg("-out")
        .arg(&crt))?;
    Ok((crt, key))
}

/// The status of `method path` on `ip:10250` as `id` (`000` when the TLS handshake or the
/// connection fails, e.g. a certificate the kubelet refuses). A transport failure is tried
/// twice more (a second apart) before it counts.
fn status(ip: &str, id: &Identity, method: &str, path: &str) -> String {
    let mut got = status_once(ip, id, method, path);
    for _ in 0..2 {
        if got != "000" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
        got = status_once(ip, id, method, path);
    }
    got
}

fn status_once(ip: &str, id: &Identity, method: &str, path: &str) -> String {
    let mut cmd = curl(ip, id, method, path);
    cmd.args(["-o", "/dev/null", "-w", "%{http_code}"]);
    match cmd.output() {
        Ok(out) => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        Err(e) => format!("curl: {e}"),
    }
}

/// The body of `method path` on `ip:10250` as `id`.
fn body(ip: &str, id: &Identity, method: &str, path: &str) -> String {
    match curl(ip, id, method, path).output() {
        Ok(out) => String::from_utf8_lossy(&out.stdout).into_owned(),
        Err(e) => format!("curl: {e}"),
    }
}

fn curl(ip: &str, id: &Identity, method: &str, path: &str) -> Command {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-k", "--path-as-is", "--max-time", "15", "-X", method]);
    if method == "PUT" {
        // The verbosity both nodes already run with (`--v 2`). Over HTTP/1.1: Go's HTTP/2
        // server resets the stream now and then when a handler (here the 401/403 of the
        // auth filter) answers without reading the request body (curl: "Stream error in
        // the HTTP/2 framing layer"), a transport artifact, not an answer.
        cmd.args(["--data-binary", "2", "--http1.1"]);
    }
    if let Some((crt, key)) = &id.cert {
        cmd.arg("--cert").arg(crt).arg("--key").arg(key);
    }
    cmd.arg(format!("https://{ip}:10250{path}"));
    cmd
}

/// 401 / 403 / 500 (authorization error) / `000` (TLS) as they are; everything else
/// passed authentication and authorization.
fn outcome(status: &str) -> &str {
    match status {
        "401" | "403" | "500" | "000" => status,
        _ => "passed",
    }
}

/// `kubectl apply` of a `v1.List` of `items`.
fn apply(c: &Cluster, items: Vec<serde_json::Value>, what: &str) -> TestResult {
    let objects = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    let mut child = c
        .kubectl()
        .args(["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()?;
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        objects.to_string().as_bytes(),
    )?;
    assert!(child.wait()?.success(), "kubectl apply of {what}");
    Ok(())
}

/// A ClusterRole allowing every verb on `resource` and its binding to the user `user`
/// (both named `user`).
fn role_for(user: &str, resource: &str) -> [serde_json::Value; 2] {
    const RBAC: &str = "rbac.authorization.k8s.io";
    [
        serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": user},
         "rules": [{"apiGroups": [""], "resources": [resource],
                    "verbs": ["get", "create", "update", "patch", "delete"]}]}),
        serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": user},
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": user},
         "subjects": [{"apiGroup": RBAC, "kind": "User", "name": user}]}),
    ]
}

fn rbac(c: &Cluster) -> TestResult {
    let items = [
        (USER_STATS, "nodes/stats"),
        (USER_PROXY, "nodes/proxy"),
        (USER_CHECKPOINT, "nodes/checkpoint"),
    ]
    .into_iter()
    .flat_map(|(user, resource)| role_for(user, resource))
    .collect();
    apply(c, items, "the RBAC objects")
}

fn delete_rbac(c: &Cluster) {
    for kind in ["clusterrolebinding", "clusterrole"] {
        let _ = c.kubectl_output([
            "delete",
            kind,
            USER_STATS,
            USER_PROXY,
            USER_CHECKPOINT,
            "--ignore-not-found",
        ]);
    }
}

fn delete_namespaces(c: &Cluster) {
    for ns in [NS_UP, NS_RS] {
        let _ = c.kubectl_output([
            "delete",
            "namespace",
            ns,
            "--ignore-not-found",
            "--wait",
            "--timeout=120s",
        ]);
    }
}

/// A busybox pod `cp` (container `main`) on `node` in namespace `ns`, running.
fn cp_pod(c: &Cluster, ns: &str, node: &str) -> TestResult {
    let items = vec![
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        serde_json::json!({"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "cp", "namespace": ns},
         "spec": {"nodeName": node, "automountServiceAccountToken": false,
                  "terminationGracePeriodSeconds": 1,
                  "containers": [{"name": "main", "image": BUSYBOX,
                                  "command": ["sleep", "3600"]}]}}),
    ];
    apply(c, items, &format!("pod {ns}/cp"))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let phase = c.kubectl_output([
            "get",
            "pod",
            "-n",
            ns,
            "cp",
            "-o",
            "jsonpath={.status.phase}",
        ])?;
        if phase == "Running" {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("pod {ns}/cp on {node}: phase {phase:?} after 120s").into());
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

fn identities(
    c: &Cluster,
    dir: &Path,
    node_dir: &Path,
) -> Result<Vec<Identity>, Box<dyn std::error::Error>> {
    let pki = c.pki_dir();
    let (ca_crt, ca_key) = (pki.join("ca.crt"), pki.join("ca.key"));
    let foreign = dir.join("foreign");
    std::fs::create_dir_all(&foreign)?;
    let (fca_crt, fca_key) = (foreign.join("ca.crt"), foreign.join("ca.key"));
    run(Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=krs-t-apisec-foreign-ca", "-keyout"])
        .arg(&fca_key)
        .arg("-out")
        .arg(&fca_crt))?;
    Ok(vec![
        Identity {
            name: "anonymous",
            cert: None,
        },
        Identity {
            name: "foreign CA",
            cert: Some(client_cert(
                &foreign,
                &fca_crt,
                &fca_key,
                "krs-t-apisec-foreign",
                Some("system:masters"),
            )?),
        },
        Identity {
            name: "node itself",
            cert: Some((
                node_dir.join("pki/kubelet-client.crt"),
                node_dir.join("pki/kubelet-client.key"),
            )),
        },
        Identity {
            name: "no RBAC",
            cert: Some(client_cert(dir, &ca_crt, &ca_key, USER_NONE, None)?),
        },
        Identity {
            name: "nodes/stats",
            cert: Some(client_cert(dir, &ca_crt, &ca_key, USER_STATS, None)?),
        },
        Identity {
            name: "nodes/proxy",
            cert: Some(client_cert(dir, &ca_crt, &ca_key, USER_PROXY, None)?),
        },
        Identity {
            name: "nodes/checkpoint",
            cert: Some(client_cert(dir, &ca_crt, &ca_key, USER_CHECKPOINT, None)?),
        },
        Identity {
            name: "apiserver client",
            cert: Some((
                pki.join("apiserver-kubelet-client.crt"),
                pki.join("apiserver-kubelet-client.key"),
            )),
        },
    ])
}

fn known(identity_outcome: &str, method: &str, path: &str) -> Option<&'static str> {
    KNOWN
        .iter()
        .find(|(id, m, p, _)| {
            *m == method && *p == path && (*id == "*" && identity_outcome == "passed")
        })
        .map(|k| k.3)
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[test]
fn authorization_matrix_matches_the_upstream_kubelet() -> TestResult {
    let c = cluster::ensure()?;
    let up = c.start_node(NodeSpec::new(NodeKubelet::Upstream, UPSTREAM.0, UPSTREAM.1))?;
    let rs = c.start_node(NodeSpec::new(
        NodeKubelet::KubeletRs(PathBuf::from(env!("CARGO_BIN_EXE_kubelet-rs"))),
        RS.0,
        RS.1,
    ))?;
    delete_rbac(&c);
    rbac(&c)?;
    delete_namespaces(&c);
    cp_pod(&c, NS_UP, UPSTREAM.0)?;
    cp_pod(&c, NS_RS, RS.0)?;
    let tmp = tempfile::tempdir()?;
    let up_ids = identities(&c, &tmp.path().join("up"), &up.dir)?;
    let rs_ids = {
        let d = tmp.path().join("rs");
        std::fs::create_dir_all(&d)?;
        identities(&c, &d, &rs.dir)?
    };
    // Webhook authorization answers from the API server's RBAC cache: let it see the roles.
    std::thread::sleep(std::time::Duration::from_secs(3));

    let mut table = String::from(
        "| request | identity | upstream kubelet | kubelet-rs | |\n| --- | --- | --- | --- | --- |\n",
    );
    let mut differences = Vec::new();
    for (method, path) in REQUESTS {
        let (up_path, rs_path) = (path.replace("{ns}", NS_UP), path.replace("{ns}", NS_RS));
        for (u, r) in up_ids.iter().zip(&rs_ids) {
            let a = status(UPSTREAM.1, u, method, &up_path);
            let b = status(RS.1, r, method, &rs_path);
            if path.contains("{ns}") && !matches!(a.as_str(), "401" | "403" | "000") {
                let ba = body(UPSTREAM.1, u, method, &up_path).replace(NS_UP, "{ns}");
                let bb = body(RS.1, r, method, &rs_path).replace(NS_RS, "{ns}");
                println!(
                    "{method} {path} as {}: upstream {ba:?}, kubelet-rs {bb:?}",
                    u.name
                );
                if ba != bb {
                    differences.push(format!(
                        "{method} {path} as {}: upstream body {ba:?}, kubelet-rs body {bb:?}",
                        u.name
                    ));
                }
            }
            let note = if a == b {
                String::new()
            } else if outcome(&a) == outcome(&b) && known(outcome(&a), method, path).is_some() {
                format!(
                    "known: {}",
                    known(outcome(&a), method, path).unwrap_or_default()
                )
            } else {
                differences.push(format!(
                    "{method} {path} as {}: upstream {a}, kubelet-rs {b}",
                    u.name
                ));
                "**differs**".to_string()
            };
            table.push_str(&format!(
                "| `{method} {}` | {} | {a} | {b} | {note} |\n",
                path.replace('|', "\\|"),
                u.name
            ));
        }
    }
    println!("{table}");
    if std::env::var_os("KRS_UPDATE_AUTHZ_MATRIX").is_some() {
        let doc =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/kubelet-api-authz-matrix.md");
        std::fs::write(
            doc,
            format!(
                "# The kubelet API's authorization matrix: upstream kubelet v1.35.4 and kubelet-rs\n\n\
                 <!-- Written by crates/kubelet-rs/tests/cluster_authz_matrix.rs with\n     \
                 KRS_UPDATE_AUTHZ_MATRIX=1; do not edit by hand. -->\n\n\
                 Both kubelets joined the same control plane with the same KubeletConfiguration\n\
                 (x509 client CA, webhook authentication and authorization, anonymous off); each cell\n\
                 is the HTTP status of the request on port 10250 (`000`: the TLS handshake failed).\n\n{table}"
            ),
        )?;
    }
    delete_rbac(&c);
    delete_namespaces(&c);
    rs.stop()?;
    up.stop()?;
    assert!(
        differences.is_empty(),
        "cells differ:\n{}",
        differences.join("\n")
    );
    Ok(())
}
