//! Standalone kubelet-rs against the real containerd of `hack/runtime-up.sh`: the two 1.35
//! beta pod features on by default that the kubelet implements itself — `EnvFiles`
//! (`env[*].valueFrom.fileKeyRef`, read from a file an init container wrote into an
//! emptyDir) and `HostnameOverride` (`spec.hostnameOverride`) — and what their gates
//! turned off do (upstream: the fields are ignored).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::node::{Node, runtime_lock};

const T: Duration = Duration::from_secs(60);

/// The init container's env file: a comment, a value, a multi-line value.
const INIT: &str = "printf '%s\\n' '# written by init' \"GREETING='hello from init'\" \
                    \"MULTI='line1\" \"line2'\" > /cfg/app.env";

/// A pod whose init container writes `/cfg/app.env` (after running `init_extra`) and whose
/// main container runs `script` with `env` (YAML list items, 4-space indented) and
/// `extra_spec` (spec-level YAML).
fn pod(
    name: &str,
    image: &str,
    init_extra: &str,
    env: &str,
    script: &str,
    extra_spec: &str,
) -> String {
    let init = format!("{INIT}{init_extra}");
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  terminationGracePeriodSeconds: 1
{extra_spec}  initContainers:
  - name: init
    image: {image}
    imagePullPolicy: Never
    command: [\"sh\", \"-c\", {init:?}]
    volumeMounts:
    - {{name: cfg, mountPath: /cfg}}
  containers:
  - name: main
    image: {image}
    imagePullPolicy: Never
    command: [\"sh\", \"-c\", {script:?}]
    env:
{env}  volumes:
  - name: cfg
    emptyDir: {{}}
"
    )
}

/// An `env` item reading `key` of `path` in volume `cfg`.
fn file_env(name: &str, path: &str, key: &str, optional: bool) -> String {
    format!(
        "    - name: {name}\n      valueFrom:\n        fileKeyRef: {{volumeName: cfg, path: {path}, key: {key}, optional: {optional}}}\n"
    )
}

/// The main container's log once it printed `done`.
async fn report(node: &Node, name: &str) -> String {
    let pod = node
        .wait_for(&format!("{name} Running"), T, || async {
            node.pod(name).filter(|p| p["status"]["phase"] == "Running")
        })
        .await;
    let uid = pod["metadata"]["uid"].as_str().unwrap().to_string();
    let log = node
        .logs_dir()
        .join(format!("default_{name}-{}_{uid}", node.name))
        .join("main/0.log");
    let raw = node
        .wait_for(&format!("{name}'s report"), T, || async {
            std::fs::read_to_string(&log)
                .ok()
                .filter(|s| s.contains("done"))
        })
        .await;
    // CRI log lines: `<time> stdout F <text>`.
    raw.lines()
        .map(|l| l.splitn(4, ' ').nth(3).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The main container's waiting state once it has `reason`.
async fn waiting(node: &Node, name: &str, reason: &str) -> (serde_json::Value, String) {
    node.wait_for(&format!("{name} waiting with {reason}"), T, || async {
        let pod = node.pod(name)?;
        let w = pod["status"]["containerStatuses"][0]["state"]["waiting"].clone();
        (w["reason"] == reason).then(|| (pod, w["message"].as_str().unwrap_or("").to_string()))
    })
    .await
}

/// Upstream `makeEnvironmentVariables` with `fileKeyRef`: the main container gets what
/// the init container wrote (multi-line values too, an optional missing key is left out);
/// a missing key is a `CreateContainerConfigError` naming the key and the file; a symlink
/// to a host file resolves inside the volume (where there is nothing) and fails with
/// `couldn't parse env file`; `hostnameOverride` names the pod in `hostname` and in the
/// managed `/etc/hosts`, with no domain although a subdomain is set.
#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn file_key_refs_and_hostname_override_as_upstream() {
    let _g = runtime_lock().await;
    let mut node = Node::new("rt-envfiles").await;
    node.start().await;
    let image = node.busybox.clone();
    let host_file = node.dir.path().join("host.env");
    std::fs::write(&host_file, "LEAK='host secret'\n").unwrap();

    let env = file_env("GREETING", "app.env", "GREETING", false)
        + &file_env("MULTI", "/app.env", "MULTI", false)
        + &file_env("OPT", "app.env", "NOT_THERE", true)
        + "    - name: LATER\n      value: \"$(GREETING)!\"\n";
    let script = "echo \"G=$GREETING\"; echo \"M=$MULTI\"; echo \"O=${OPT-unset}\"; \
                  echo \"L=$LATER\"; echo done; sleep 3600";
    node.write_manifest("ok.yaml", &pod("envok", &image, "", &env, script, ""));
    let missing = file_env("GREETING", "app.env", "NOPE", false);
    node.write_manifest(
        "missing.yaml",
        &pod("envmissing", &image, "", &missing, "sleep 3600", ""),
    );
    let escape = file_env("LEAK", "esc.env", "LEAK", true);
    let link = format!("; ln -s {} /cfg/esc.env", host_file.display());
    node.write_manifest(
        "escape.yaml",
        &pod("envescape", &image, &link, &escape, "sleep 3600", ""),
    );
    let host_script = "hostname; echo ---; cat /etc/hosts; echo done; sleep 3600";
    node.write_manifest(
        "host.yaml",
        &pod(
            "hostover",
            &image,
            "",
            &file_env("GREETING", "app.env", "GREETING", false),
            host_script,
            "  hostname: custom\n  subdomain: sub\n  hostnameOverride: my-host.example\n",
        ),
    );

    let out = report(&node, "envok").await;
    assert!(out.contains("G=hello from init\n"), "{out}");
    assert!(out.contains("M=line1\nline2\n"), "{out}");
    assert!(out.contains("O=unset\n"), "{out}");
    assert!(out.contains("L=hello from init!\n"), "{out}");

    let (pod, message) = waiting(&node, "envmissing", "CreateContainerConfigError").await;
    let uid = pod["metadata"]["uid"].as_str().unwrap();
    assert!(
        message.starts_with("environment variable key \"NOPE\" not found in file \""),
        "{message}"
    );
    assert!(
        message.ends_with(&format!(
            "/pods/{uid}/volumes/kubernetes.io~empty-dir/cfg/app.env\""
        )),
        "{message}"
    );
    assert_eq!(pod["status"]["phase"], "Pending", "{pod}");

    let (_, message) = waiting(&node, "envescape", "CreateContainerConfigError").await;
    assert_eq!(message, "couldn't parse env file");
    assert!(node.running("envescape").await.is_empty());

    let out = report(&node, "hostover").await;
    let pod = node.pod("hostover").unwrap();
    let ips: Vec<&str> = pod["status"]["podIPs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ip| ip["ip"].as_str().unwrap())
        .collect();
    assert!(!ips.is_empty(), "{pod}");
    let mut hosts = String::from(
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n",
    );
    for ip in ips {
        hosts.push_str(&format!("{ip}\tmy-host.example\n"));
    }
    assert_eq!(out, format!("my-host.example\n---\n{hosts}done"));
    node.cleanup().await;
}

/// With the gates off the fields are ignored, as upstream's kubelet does: the `fileKeyRef`
/// variable is set, empty, and the hostname is `spec.hostname` with the subdomain's domain
/// (`<subdomain>.<namespace>.svc.<clusterDomain>`, the cluster domain empty here).
#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn gates_off_ignore_the_fields_as_upstream() {
    let _g = runtime_lock().await;
    let mut node = Node::with_config(
        "rt-envgates",
        "featureGates:\n  EnvFiles: false\n  HostnameOverride: false\n",
    )
    .await;
    node.start().await;
    let image = node.busybox.clone();
    let script = "echo \"G=${GREETING-unset}\"; hostname; grep custom /etc/hosts; echo done; \
                  sleep 3600";
    node.write_manifest(
        "off.yaml",
        &pod(
            "gatesoff",
            &image,
            "",
            &file_env("GREETING", "app.env", "NOPE", false),
            script,
            "  hostname: custom\n  subdomain: sub\n  hostnameOverride: my-host.example\n",
        ),
    );
    let out = report(&node, "gatesoff").await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "G=", "{out}");
    assert_eq!(lines[1], "custom", "{out}");
    assert!(
        lines[2].ends_with("\tcustom.sub.default.svc.\tcustom"),
        "{out}"
    );
    node.cleanup().await;
}
