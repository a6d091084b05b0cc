//! The real control plane (`hack/cluster-up.sh`), started once per test run.
//!
//! [`ensure`] runs `hack/cluster-up.sh` once per test process. The script is idempotent and
//! serialised with `flock`, so every test binary can call it: the first call of a run
//! builds what is missing and starts etcd, kube-apiserver, kube-controller-manager and
//! kube-scheduler (upstream v1.35.4); later calls find them running and return in about a
//! second. Teardown is `hack/cluster-down.sh`, which `hack/lib/cluster-session.sh` runs
//! after the whole test command.
//!
//! [`Cluster::start_upstream_kubelet`] adds the reference node for as long as the returned
//! guard lives: the upstream kubelet on the private containerd
//! (`hack/upstream-kubelet-up.sh --no-smoke`, then `hack/upstream-kubelet-down.sh`).
//!
//! A cluster that cannot start is an error, and the test fails. Skipping is decided at
//! build time, so the runner counts a skipped test as *ignored*: with
//! `KRS_SKIP_CLUSTER_TESTS=1` the crate's `build.rs` sets the cfg `krs_skip_cluster`, and
//! every test that needs the control plane carries
//! `#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use crate::runtime_env::repo_root;

/// Set to `1` when building the tests to have the runner ignore the tests that need the
/// real control plane (see the module doc).
pub const SKIP_ENV: &str = "KRS_SKIP_CLUSTER_TESTS";

/// The running test control plane, as reported by `hack/cluster-up.sh`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    /// Admin kubeconfig (`CN=kubernetes-admin`, `O=system:masters`).
    pub kubeconfig: PathBuf,
    /// The apiserver URL, `https://127.0.0.1:<port>`.
    pub server: String,
    /// State directory (`KRS_CLUSTER_DIR`): `pki/`, `logs/`, `etcd/`, `nodes/<name>/`.
    pub state_dir: PathBuf,
    /// Where the upstream binaries are (`KRS_CLUSTER_BIN`): kubectl, kubelet, etcd, ...
    pub bin_dir: PathBuf,
}

/// A node's credentials, written by `krs-pki node` (see [`Cluster::node_files`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFiles {
    /// Node kubeconfig (`CN=system:node:<name>`, `O=system:nodes`, certs embedded).
    pub kubeconfig: PathBuf,
    /// Kubelet serving certificate (SANs: node IP, 127.0.0.1, name, localhost).
    pub serving_cert: PathBuf,
    /// Key of [`NodeFiles::serving_cert`].
    pub serving_key: PathBuf,
    /// CA that signs client certificates, including the apiserver's kubelet client:
    /// the kubelet's `authentication.x509.clientCAFile`.
    pub client_ca: PathBuf,
}

/// The upstream kubelet reference node, started by [`Cluster::start_upstream_kubelet`].
///
/// Only one kubelet may use the shared private containerd at a time: a kubelet kills the
/// runtime's pods that its API server does not know about. So the node lives as long as
/// this value: [`UpstreamKubelet::stop`] (or drop) runs `hack/upstream-kubelet-down.sh`,
/// and a process-wide lock keeps two tests of one binary from running it at once.
#[derive(Debug)]
pub struct UpstreamKubelet {
    /// Node name (`KRS_UPSTREAM_NODE`, default `krs-upstream`).
    pub name: String,
    running: bool,
    _exclusive: MutexGuard<'static, ()>,
}

/// Why the test control plane is not available.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    /// A script or binary could not be started at all.
    #[error("could not run {program}: {reason}")]
    Spawn { program: PathBuf, reason: String },
    /// A script or command ran and failed.
    #[error(
        "{command} failed ({status}); set {SKIP_ENV}=1 to skip cluster tests on purpose\n\
         --- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
    )]
    Failed {
        command: String,
        status: String,
        stdout: String,
        stderr: String,
    },
    /// A script succeeded but its output lacks a `KEY=value` line.
    #[error("output of {script} has no `{key}=` line:\n{stdout}")]
    MissingKey {
        script: &'static str,
        key: &'static str,
        stdout: String,
    },
}

/// Start the control plane (once per process) and return where it is.
pub fn ensure() -> Result<Cluster, ClusterError> {
    static CLUSTER: OnceLock<Result<Cluster, ClusterError>> = OnceLock::new();
    CLUSTER
        .get_or_init(|| {
            let stdout = run(script_command("hack/cluster-up.sh"))?;
            parse_up_output(&stdout)
        })
        .clone()
}

/// Parse `hack/cluster-up.sh`'s `KEY=value` lines (the last one is `KUBECONFIG=`).
pub fn parse_up_output(stdout: &str) -> Result<Cluster, ClusterError> {
    let value = |key| output_value("hack/cluster-up.sh", stdout, key);
    Ok(Cluster {
        kubeconfig: PathBuf::from(value("KUBECONFIG")?),
        server: value("KRS_APISERVER_URL")?,
        state_dir: PathBuf::from(value("KRS_CLUSTER_DIR")?),
        bin_dir: PathBuf::from(value("KRS_CLUSTER_BIN")?),
    })
}

fn output_value(
    script: &'static str,
    stdout: &str,
    key: &'static str,
) -> Result<String, ClusterError> {
    stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .map(str::to_string)
        .ok_or_else(|| ClusterError::MissingKey {
            script,
            key,
            stdout: stdout.to_string(),
        })
}

fn script_command(script: &str) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg(repo_root().join(script)).current_dir(repo_root());
    cmd
}

/// Run `cmd`, returning its stdout when it succeeds.
fn run(mut cmd: Command) -> Result<String, ClusterError> {
    let program = PathBuf::from(cmd.get_program());
    let command = format!("{cmd:?}");
    let output: Output = cmd.output().map_err(|e| ClusterError::Spawn {
        program,
        reason: e.to_string(),
    })?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        return Err(ClusterError::Failed {
            command,
            status: output.status.to_string(),
            stdout,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(stdout)
}

impl Cluster {
    /// The upstream binary `name` (`kubectl`, `kubelet`, `etcd`, `agnhost`, `krs-pki`, ...).
    pub fn bin(&self, name: &str) -> PathBuf {
        self.bin_dir.join(name)
    }

    /// `kubectl --kubeconfig <admin>`, ready for more arguments.
    pub fn kubectl(&self) -> Command {
        let mut cmd = Command::new(self.bin("kubectl"));
        cmd.arg("--kubeconfig").arg(&self.kubeconfig);
        cmd
    }

    /// Run kubectl with `args`; its stdout, or an error carrying stdout and stderr.
    pub fn kubectl_output<I, S>(&self, args: I) -> Result<String, ClusterError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut cmd = self.kubectl();
        cmd.args(args);
        run(cmd)
    }

    /// The PKI directory (`ca.crt`, `kubelet-ca.crt`, `sa.pub`, kubeconfigs, ...).
    pub fn pki_dir(&self) -> PathBuf {
        self.state_dir.join("pki")
    }

    /// Log file of a component started by the harness (`kube-apiserver`, `kubelet-<node>`).
    pub fn log(&self, component: &str) -> PathBuf {
        self.state_dir.join("logs").join(format!("{component}.log"))
    }

    /// Issue (idempotently) the credentials for a node named `name` with IP `ip`, e.g. for a
    /// kubelet-rs node joining this cluster. Files go to `<state_dir>/nodes/<name>/pki/`.
    pub fn node_files(&self, name: &str, ip: &str) -> Result<NodeFiles, ClusterError> {
        let out = self.state_dir.join("nodes").join(name).join("pki");
        let mut cmd = Command::new(self.bin("krs-pki"));
        cmd.arg("node")
            .arg("--dir")
            .arg(self.pki_dir())
            .args(["--server", &self.server, "--name", name, "--ip", ip])
            .arg("--out")
            .arg(&out);
        run(cmd)?;
        Ok(node_files_in(&out, &self.pki_dir()))
    }

    /// Start the upstream kubelet reference node and wait until it is Ready (it also starts
    /// the private containerd). Blocks while another test of this process holds one.
    pub fn start_upstream_kubelet(&self) -> Result<UpstreamKubelet, ClusterError> {
        static EXCLUSIVE: Mutex<()> = Mutex::new(());
        let exclusive = EXCLUSIVE.lock().unwrap_or_else(PoisonError::into_inner);
        let mut cmd = script_command("hack/upstream-kubelet-up.sh");
        cmd.arg("--no-smoke");
        let result = run(cmd)
            .and_then(|stdout| output_value("hack/upstream-kubelet-up.sh", &stdout, "NODE_NAME"));
        match result {
            Ok(name) => Ok(UpstreamKubelet {
                name,
                running: true,
                _exclusive: exclusive,
            }),
            Err(e) => {
                // Do not leave a half-started kubelet behind; the start's error is the one
                // reported, the clean-up's is printed.
                if let Err(down) = run(script_command("hack/upstream-kubelet-down.sh")) {
                    eprintln!("hack/upstream-kubelet-down.sh after a failed start: {down}");
                }
                Err(e)
            }
        }
    }
}

impl UpstreamKubelet {
    /// Delete the node's pods, stop the kubelet and clean up (`upstream-kubelet-down.sh`).
    pub fn stop(mut self) -> Result<(), ClusterError> {
        self.running = false;
        run(script_command("hack/upstream-kubelet-down.sh")).map(drop)
    }
}

impl Drop for UpstreamKubelet {
    fn drop(&mut self) {
        if self.running
            && let Err(e) = run(script_command("hack/upstream-kubelet-down.sh"))
        {
            // Drop cannot fail the test; UpstreamKubelet::stop reports this error.
            eprintln!("hack/upstream-kubelet-down.sh: {e}");
        }
    }
}

fn node_files_in(out: &Path, pki: &Path) -> NodeFiles {
    NodeFiles {
        kubeconfig: out.join("kubelet.kubeconfig"),
        serving_cert: out.join("kubelet-serving.crt"),
        serving_key: out.join("kubelet-serving.key"),
        client_ca: pki.join("ca.crt"),
    }
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    const GOOD: &str = "KRS_CLUSTER_DIR=/var/lib/c\nKRS_CLUSTER_BIN=/r/_output/bin\n\
        KRS_APISERVER_URL=https://127.0.0.1:6443\nKUBECONFIG=/var/lib/c/pki/admin.kubeconfig\n";

    #[test]
    fn parses_the_script_output() {
        assert_eq!(
            parse_up_output(GOOD),
            Ok(Cluster {
                kubeconfig: PathBuf::from("/var/lib/c/pki/admin.kubeconfig"),
                server: "https://127.0.0.1:6443".into(),
                state_dir: PathBuf::from("/var/lib/c"),
                bin_dir: PathBuf::from("/r/_output/bin"),
            })
        );
    }

    #[test]
    fn missing_key_is_named() {
        let no_url = GOOD.replace("KRS_APISERVER_URL=https://127.0.0.1:6443\n", "");
        assert_eq!(
            parse_up_output(&no_url),
            Err(ClusterError::MissingKey {
                script: "hack/cluster-up.sh",
                key: "KRS_APISERVER_URL",
                stdout: no_url.clone(),
            })
        );
    }

    #[test]
    fn failed_command_reports_its_output() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 3"]);
        match run(cmd) {
            Err(ClusterError::Failed { stdout, stderr, .. }) => {
                assert_eq!((stdout.as_str(), stderr.as_str()), ("out\n", "err\n"));
            }
            other => panic!("expected Failed, got {other:?}"),
        }
    }

    #[test]
    fn node_files_layout() {
        let f = node_files_in(Path::new("/s/nodes/n/pki"), Path::new("/s/pki"));
        assert_eq!(
            f.kubeconfig,
            PathBuf::from("/s/nodes/n/pki/kubelet.kubeconfig")
        );
        assert_eq!(f.client_ca, PathBuf::from("/s/pki/ca.crt"));
    }

    #[test]
    fn scripts_exist() {
        for s in [
            "hack/cluster-up.sh",
            "hack/cluster-down.sh",
            "hack/upstream-kubelet-up.sh",
        ] {
            assert!(repo_root().join(s).is_file(), "{s}");
        }
    }
}
