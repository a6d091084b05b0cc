//! `--print-config`: the effective configuration, exactly as a start would compute it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;

fn print_config(args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let out = std::process::Command::new(BIN)
        .arg("--print-config")
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    // Nothing on stdout (a refused configuration) is Null; anything else must be JSON.
    let json = if stdout.trim().is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("--print-config printed no JSON ({e}):\n{stdout}"))
    };
    (
        out.status.code(),
        json,
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `k.yaml` in `dir`: the standalone config (a runtime endpoint that is never dialled) plus `extra`.
fn config_in(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    write(
        dir,
        "k.yaml",
        &standalone_config("unix:///run/x.sock", 10248, extra),
    )
}

#[test]
fn config_file_regime_uses_v1beta1_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_in(dir.path(), "staticPodPath: manifests\n");
    let (code, j, err) = print_config(&["--config", cfg.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["kind"], "KubeletConfiguration");
    assert_eq!(j["apiVersion"], "kubelet.config.k8s.io/v1beta1");
    assert_eq!(j["syncFrequency"], "1m0s");
    assert_eq!(j["fileCheckFrequency"], "20s");
    assert_eq!(j["runtimeRequestTimeout"], "2m0s");
    assert_eq!(j["evictionPressureTransitionPeriod"], "5m0s");
    assert_eq!(j["nodeStatusUpdateFrequency"], "10s");
    assert_eq!(j["imageMinimumGCAge"], "2m0s");
    assert!(j.get("readOnlyPort").is_none() || j["readOnlyPort"] == 0);
    assert_eq!(j["evictionHard"]["memory.available"], "100Mi");
    // relative paths resolve against the config file's directory
    assert_eq!(
        j["staticPodPath"],
        dir.path().join("manifests").to_str().unwrap()
    );
}

#[test]
fn legacy_regime_without_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let dropins = dir.path().join("conf.d");
    std::fs::create_dir(&dropins).unwrap();
    write(
        &dropins,
        "10-cgroupv1.conf",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfailCgroupV1: false\n",
    );
    let (code, j, err) = print_config(&["--config-dir", dropins.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["readOnlyPort"], 10255);
    assert_eq!(j["authentication"]["anonymous"]["enabled"], true);
    assert_eq!(j["authentication"]["webhook"]["enabled"], false);
    assert_eq!(j["authorization"]["mode"], "AlwaysAllow");
}

#[test]
fn flags_override_file_and_dropins() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_in(dir.path(), "maxPods: 50\n");
    let dropins = dir.path().join("conf.d");
    std::fs::create_dir(&dropins).unwrap();
    write(
        &dropins,
        "20-pods.conf",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 60\nclusterDomain: drop.in\n",
    );
    let (code, j, err) = print_config(&[
        "--config",
        cfg.to_str().unwrap(),
        "--config-dir",
        dropins.to_str().unwrap(),
        "--max-pods=70",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["maxPods"], 70);
    assert_eq!(j["clusterDomain"], "drop.in");
    assert!(err.contains("Flag --max-pods has been deprecated"), "{err}");
}

#[test]
fn invalid_config_prints_errors_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_in(dir.path(), "maxPods: -3\nregistryBurst: -1\n");
    let (code, j, err) = print_config(&["--config", cfg.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert_eq!(j, serde_json::Value::Null, "nothing on stdout");
    assert!(
        err.contains("maxPods (--max-pods) -3 must not be a negative number"),
        "{err}"
    );
    assert!(
        err.contains("registryBurst (--registry-burst) -1 must not be a negative number"),
        "{err}"
    );
}

#[test]
fn empty_or_garbage_config_file_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let empty = write(dir.path(), "empty.yaml", "");
    let (code, _, err) = print_config(&["--config", empty.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("was empty") && err.contains("empty.yaml"),
        "{err}"
    );
    let garbage = write(dir.path(), "garbage.yaml", "{{{ not yaml");
    let (code, _, err) = print_config(&["--config", garbage.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(err.contains("garbage.yaml"), "{err}");
}

#[test]
fn refuses_every_configuration_a_start_refuses() {
    // The same table `process.rs` starts the binary with (`start_refuses_...`).
    let dir = tempfile::tempdir().unwrap();
    for (extra, needle) in UNSTARTABLE {
        let cfg = config_in(dir.path(), extra);
        let (code, j, err) = print_config(&["--config", cfg.to_str().unwrap()]);
        assert_eq!(code, Some(1), "{extra}: {err}");
        assert_eq!(j, serde_json::Value::Null, "{extra}: nothing on stdout");
        assert!(err.contains(needle), "{extra}: {needle:?} not in {err}");
    }
}

#[test]
fn kubeconfig_and_bad_node_ip_lists_are_refused_as_a_start_refuses_them() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_in(dir.path(), "");
    let cfg = cfg.to_str().unwrap();
    let missing = dir.path().join("k.conf");
    let missing = missing.to_str().unwrap();
    let (code, _, err) = print_config(&["--config", cfg, "--kubeconfig", missing]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains(&format!("invalid kubeconfig: {missing}")),
        "{err}"
    );
    let (code, _, err) = print_config(&["--config", cfg, "--node-ip", "10.0.0.1,10.0.0.2"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains(r#"err="bad --node-ip \"10.0.0.1,10.0.0.2\": must contain either a single IP or a dual-stack pair of IPs""#),
        "{err}"
    );
}

#[test]
fn unparsable_node_ip_and_cluster_dns_entries_are_warned_about_and_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_in(dir.path(), "clusterDNS: [10.96.0.10, not-an-ip]\n");
    let (code, j, err) = print_config(&["--config", cfg.to_str().unwrap(), "--node-ip=garbage"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("] \"Could not parse some node IP(s), ignoring them\" IPs=\"[garbage]\""),
        "{err}"
    );
    assert!(
        err.contains("] \"Invalid clusterDNS IP\" IP=\"not-an-ip\""),
        "{err}"
    );
    // the start's warnings, in klog's format, and nothing else (no info lines)
    assert!(err.lines().all(|l| l.starts_with('W')), "{err}");
    // the configuration itself is printed as given
    assert_eq!(
        j["clusterDNS"],
        serde_json::json!(["10.96.0.10", "not-an-ip"])
    );
}

#[test]
fn serving_pair_is_checked_without_writing_and_shown_as_upstream_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("pki");
    let cfg = config_in(dir.path(), "");
    let cfg = cfg.to_str().unwrap();
    let (code, j, err) = print_config(&["--config", cfg, "--cert-dir", certs.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        !certs.exists(),
        "--print-config must not write the self-signed pair"
    );
    assert_eq!(
        j["tlsCertFile"],
        certs.join("kubelet.crt").to_str().unwrap()
    );
    assert_eq!(
        j["tlsPrivateKeyFile"],
        certs.join("kubelet.key").to_str().unwrap()
    );
    assert_eq!(j["enableSystemLogQuery"], false);
    // half a pair in the cert dir: refused, naming the missing file
    std::fs::create_dir(&certs).unwrap();
    write(&certs, "kubelet.crt", "junk");
    let (code, _, err) = print_config(&["--config", cfg, "--cert-dir", certs.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(err.contains("kubelet.key"), "{err}");
    // a pair that does not load
    write(&certs, "kubelet.key", "junk");
    let (code, _, err) = print_config(&["--config", cfg, "--cert-dir", certs.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(err.contains("kubelet.crt"), "{err}");
}
