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
//! guard lives: the upstream kubelet on its own containerd
//! (`hack/upstream-kubelet-up.sh --no-smoke`, then `hack/upstream-kubelet-down.sh`).
//! [`Cluster::start_node`] starts any node, upstream or kubelet-rs, under a given name and IP
//! ([`NodeSpec`]; `hack/upstream-kubelet-up.sh` or `hack/kubelet-rs-node-up.sh`): each node
//! has its own containerd, bridge and pod subnet, so several nodes run side by side.
//! [`Cluster::stop_apiserver_for`] takes the API server away for a while
//! (`hack/apiserver-outage.sh`).
//!
//! A cluster that cannot start is an error, and the test fails. Skipping is decided at
//! build time, so the runner counts a skipped test as *ignored*: with
//! `KRS_SKIP_CLUSTER_TESTS=1` the crate's `build.rs` sets the cfg `krs_skip_cluster`, and
//! every test that needs the control plane carries
//! `#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]`.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
/// The node (default name `krs-upstream`, on its own containerd) lives as long as this value:
/// [`UpstreamKubelet::stop`] (or drop) runs `hack/upstream-kubelet-down.sh`, and a
/// process-wide lock keeps two tests of one binary from using the node at once.
#[derive(Debug)]
pub struct UpstreamKubelet {
    /// Node name (`KRS_UPSTREAM_NODE`, default `krs-upstream`).
    pub name: String,
    running: bool,
    _exclusive: MutexGuard<'static, ()>,
}

/// Which kubelet a cluster node runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeKubelet {
    /// The upstream kubelet v1.35.4 of `KRS_CLUSTER_BIN` (`hack/upstream-kubelet-up.sh`).
    Upstream,
    /// kubelet-rs from this binary (`hack/kubelet-rs-node-up.sh`, `KRS_KUBELET_RS_BIN`).
    KubeletRs(PathBuf),
}

/// A node to start with [`Cluster::start_node`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    /// The kubelet.
    pub kubelet: NodeKubelet,
    /// Node name (`--hostname-override`); its files are under `<state_dir>/nodes/<name>/`.
    pub name: String,
    /// Node IP in 198.18.255.0/24 (added to `lo`; the kubelet listens there).
    pub ip: String,
    /// Kubelet port (`port` of the KubeletConfiguration).
    pub port: u16,
    /// `maxPods` (the kubelet's default, 110, when `None`).
    pub max_pods: Option<u32>,
    /// `registerWithTaints`, each `key[=value]:Effect` (`KRS_NODE_TAINTS`).
    pub taints: Vec<String>,
    /// The `memory.available` hard eviction threshold (`KRS_NODE_MEMORY_AVAILABLE`;
    /// `100Mi` when `None`).
    pub memory_available: Option<String>,
    /// More `evictionHard` entries, `(signal, value)` (`KRS_NODE_EVICTION_HARD`).
    pub eviction_hard: Vec<(String, String)>,
    /// More top-level `KubeletConfiguration` lines, e.g. `evictionPressureTransitionPeriod:
    /// 60s` (`KRS_NODE_EXTRA_CONFIG`, one per line).
    pub extra_config: Vec<String>,
    /// More environment of the kubelet process (the up script passes its own on), e.g.
    /// `DBUS_SYSTEM_BUS_ADDRESS`.
    pub env: Vec<(String, String)>,
}

impl NodeSpec {
    /// A node with the default port (10250) and `maxPods`.
    pub fn new(kubelet: NodeKubelet, name: &str, ip: &str) -> Self {
        NodeSpec {
            kubelet,
            name: name.to_string(),
            ip: ip.to_string(),
            port: 10250,
            max_pods: None,
            taints: Vec::new(),
            memory_available: None,
            eviction_hard: Vec::new(),
            extra_config: Vec::new(),
            env: Vec::new(),
        }
    }

    /// `hack/<up script>` with the environment that selects this node.
    fn script(&self, up: bool) -> Command {
        let (script, prefix) = match (&self.kubelet, up) {
            (NodeKubelet::Upstream, true) => ("hack/upstream-kubelet-up.sh", "UPSTREAM"),
            (NodeKubelet::Upstream, false) => ("hack/upstream-kubelet-down.sh", "UPSTREAM"),
            (NodeKubelet::KubeletRs(_), true) => ("hack/kubelet-rs-node-up.sh", "RS"),
            (NodeKubelet::KubeletRs(_), false) => ("hack/kubelet-rs-node-down.sh", "RS"),
        };
        let mut cmd = script_command(script);
        cmd.env(format!("KRS_{prefix}_NODE"), &self.name)
            .env(format!("KRS_{prefix}_NODE_IP"), &self.ip)
            .env(
                if prefix == "RS" {
                    "KRS_RS_KUBELET_PORT"
                } else {
                    "KRS_UPSTREAM_KUBELET_PORT"
                },
                self.port.to_string(),
            );
        match self.max_pods {
            Some(n) => cmd.env("KRS_NODE_MAX_PODS", n.to_string()),
            None => cmd.env_remove("KRS_NODE_MAX_PODS"),
        };
        cmd.env("KRS_NODE_TAINTS", self.taints.join(","));
        match &self.memory_available {
            Some(v) => cmd.env("KRS_NODE_MEMORY_AVAILABLE", v),
            None => cmd.env_remove("KRS_NODE_MEMORY_AVAILABLE"),
        };
        cmd.env("KRS_NODE_EXTRA_CONFIG", self.extra_config.join("\n"));
        let hard: Vec<String> = self
            .eviction_hard
            .iter()
            .map(|(k, v)| format!("  {k}: {v}"))
            .collect();
        cmd.env("KRS_NODE_EVICTION_HARD", hard.join("\n"));
        if let NodeKubelet::KubeletRs(bin) = &self.kubelet {
            cmd.env("KRS_KUBELET_RS_BIN", bin);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        if up {
            cmd.arg("--no-smoke");
        }
        cmd
    }
}

/// A node started by [`Cluster::start_node`]; stopped (pods deleted, kubelet stopped, Node
/// deleted, its containerd torn down) by [`ClusterNode::stop`] or on drop.
///
/// Node names are not locked: tests that share a name must not run at once.
#[derive(Debug)]
pub struct ClusterNode {
    /// What was started.
    pub spec: NodeSpec,
    /// `<state_dir>/nodes/<name>`.
    pub dir: PathBuf,
    /// The node's own containerd, `unix://<dir>/runtime/containerd.sock`.
    pub runtime_endpoint: String,
    pidfile: PathBuf,
    running: bool,
}

/// When [`Cluster::stop_apiserver_for`] stopped the API server and when it was ready again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outage {
    /// The API server process had exited.
    pub stopped: SystemTime,
    /// `/readyz` answered `ok` again.
    pub returned: SystemTime,
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

impl Cluster {
    /// Start (idempotently) the node `spec` on its own containerd and wait until it is Ready.
    /// A node whose start fails is stopped again; the start's error is returned.
    pub fn start_node(&self, spec: NodeSpec) -> Result<ClusterNode, ClusterError> {
        const SCRIPT: &str = "node up script";
        let started = run(spec.script(true)).and_then(|stdout| {
            Ok((
                output_value(SCRIPT, &stdout, "NODE_DIR")?,
                output_value(SCRIPT, &stdout, "CONTAINER_RUNTIME_ENDPOINT")?,
            ))
        });
        match started {
            Ok((dir, runtime_endpoint)) => Ok(ClusterNode {
                pidfile: self
                    .state_dir
                    .join("run")
                    .join(format!("kubelet-{}.pid", spec.name)),
                spec,
                dir: PathBuf::from(dir),
                runtime_endpoint,
                running: true,
            }),
            Err(e) => {
                if let Err(down) = run(spec.script(false)) {
                    eprintln!("stopping node {} after a failed start: {down}", spec.name);
                }
                Err(e)
            }
        }
    }

    /// Stop kube-apiserver, wait `seconds`, start it again and wait until it is ready
    /// (`hack/apiserver-outage.sh`, which also holds the cluster lock, so that no
    /// `hack/cluster-up.sh` restarts it early, and `cluster-disrupt.lock`, which it may
    /// wait for). `during` runs once the API server is down. Returns when the API server is
    /// back. Every user of the control plane sees the outage.
    pub fn stop_apiserver_for(
        &self,
        seconds: u64,
        during: impl FnOnce(),
    ) -> Result<Outage, ClusterError> {
        const SCRIPT: &str = "hack/apiserver-outage.sh";
        let mut cmd = script_command(SCRIPT);
        cmd.arg(seconds.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let command = format!("{cmd:?}");
        let spawn_error = |e: std::io::Error| ClusterError::Spawn {
            program: PathBuf::from(SCRIPT),
            reason: e.to_string(),
        };
        let mut child = cmd.spawn().map_err(spawn_error)?;
        let mut stderr = child.stderr.take();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(e) = stderr.as_mut() {
                // A read error only shortens the diagnostics.
                let _ = e.read_to_string(&mut text);
            }
            text
        });
        let mut stdout = String::new();
        let mut during = Some(during);
        if let Some(out) = child.stdout.take() {
            for line in BufReader::new(out).lines() {
                let line = line.map_err(spawn_error)?;
                if line.starts_with("APISERVER_STOPPED=")
                    && let Some(f) = during.take()
                {
                    f();
                }
                stdout.push_str(&line);
                stdout.push('\n');
            }
        }
        let status = child.wait().map_err(spawn_error)?;
        let stderr = stderr.join().unwrap_or_default();
        if !status.success() {
            return Err(ClusterError::Failed {
                command,
                status: status.to_string(),
                stdout,
                stderr,
            });
        }
        let at = |key| -> Result<SystemTime, ClusterError> {
            let ms = output_value(SCRIPT, &stdout, key)?;
            let ms = ms.parse().map_err(|_| ClusterError::MissingKey {
                script: SCRIPT,
                key,
                stdout: stdout.clone(),
            })?;
            Ok(UNIX_EPOCH + Duration::from_millis(ms))
        };
        Ok(Outage {
            stopped: at("APISERVER_STOPPED")?,
            returned: at("APISERVER_RETURNED")?,
        })
    }
}

impl ClusterNode {
    /// The node's `staticPodPath`.
    pub fn manifests_dir(&self) -> PathBuf {
        self.dir.join("manifests")
    }

    /// The pid of the running kubelet (from `<state_dir>/run/kubelet-<name>.pid`).
    pub fn kubelet_pid(&self) -> Result<u32, ClusterError> {
        let text = std::fs::read_to_string(&self.pidfile).map_err(|e| ClusterError::Spawn {
            program: self.pidfile.clone(),
            reason: format!("reading the kubelet's pid file: {e}"),
        })?;
        text.split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| ClusterError::Spawn {
                program: self.pidfile.clone(),
                reason: format!("no pid in {text:?}"),
            })
    }

    /// Send SIGKILL to the kubelet (its containers keep running).
    pub fn kill_kubelet(&self) -> Result<(), ClusterError> {
        let mut cmd = Command::new("kill");
        cmd.args(["-KILL", &self.kubelet_pid()?.to_string()]);
        run(cmd).map(drop)
    }

    /// Run the up script again: starts the kubelet if it is not running (e.g. after
    /// [`ClusterNode::kill_kubelet`]) and waits until the node is Ready.
    pub fn restart_kubelet(&self) -> Result<(), ClusterError> {
        run(self.spec.script(true)).map(drop)
    }

    /// Stop the node (see [`ClusterNode`]).
    pub fn stop(mut self) -> Result<(), ClusterError> {
        self.running = false;
        run(self.spec.script(false)).map(drop)
    }
}

impl Drop for ClusterNode {
    fn drop(&mut self) {
        if self.running
            && let Err(e) = run(self.spec.script(false))
        {
            // Drop cannot fail the test; ClusterNode::stop reports this error.
            eprintln!("stopping node {}: {e}", self.spec.name);
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

    fn envs(cmd: &Command) -> Vec<(String, Option<String>)> {
        cmd.get_envs()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect()
    }

    #[test]
    fn node_scripts_get_the_node_from_the_environment() {
        let mut spec = NodeSpec::new(NodeKubelet::Upstream, "n1", "198.18.255.9");
        spec.max_pods = Some(3);
        let up = spec.script(true);
        assert!(up.get_args().any(|a| a == "--no-smoke"));
        let env = envs(&up);
        for (k, v) in [
            ("KRS_UPSTREAM_NODE", "n1"),
            ("KRS_UPSTREAM_NODE_IP", "198.18.255.9"),
            ("KRS_UPSTREAM_KUBELET_PORT", "10250"),
            ("KRS_NODE_MAX_PODS", "3"),
        ] {
            assert!(env.contains(&(k.into(), Some(v.into()))), "{k} in {env:?}");
        }
        let rs = NodeSpec::new(
            NodeKubelet::KubeletRs("/b/kubelet-rs".into()),
            "n2",
            "198.18.255.8",
        );
        let down = rs.script(false);
        assert!(down.get_args().any(|a| {
            a.to_string_lossy()
                .ends_with("hack/kubelet-rs-node-down.sh")
        }));
        let env = envs(&down);
        assert!(env.contains(&("KRS_RS_NODE".into(), Some("n2".into()))));
        assert!(env.contains(&("KRS_KUBELET_RS_BIN".into(), Some("/b/kubelet-rs".into()))));
        assert!(env.contains(&("KRS_NODE_MAX_PODS".into(), None)));
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
            "hack/upstream-kubelet-down.sh",
            "hack/kubelet-rs-node-up.sh",
            "hack/kubelet-rs-node-down.sh",
            "hack/apiserver-outage.sh",
        ] {
            assert!(repo_root().join(s).is_file(), "{s}");
        }
    }
}
