//! The private containerd test runtime (`hack/runtime-up.sh`), started once per test run.
//!
//! [`ensure`] runs `hack/runtime-up.sh` once per test process (the script itself is
//! idempotent and serialised with `flock`, so parallel test binaries are safe), checks that
//! the runtime's socket answers, and returns where the runtime is. With
//! `KRS_TEST_RUNTIME_ENDPOINT` set it uses that runtime instead of running the script.
//! A runtime that cannot be brought up or reached is an error, and the test fails.
//!
//! Skipping is decided at build time, so the test runner counts a skipped test as
//! *ignored*, never as passed: with `KRS_SKIP_RUNTIME_TESTS=1` in the environment of
//! `cargo test`, the crate's `build.rs` sets the cfg `krs_skip_runtime`, and every test
//! that needs the runtime carries
//! `#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Set to `1` when building the tests to have the runner ignore the tests that need the
/// real runtime (see the module doc).
pub const SKIP_ENV: &str = "KRS_SKIP_RUNTIME_TESTS";

/// Set to a CRI endpoint (`unix:///path`) to test against a runtime that is already up
/// instead of running `hack/runtime-up.sh`; it must have the images of
/// `hack/lib/runtime-images.sh` ([`PAUSE_IMAGE`], [`BUSYBOX_IMAGE`]).
pub const ENDPOINT_ENV: &str = "KRS_TEST_RUNTIME_ENDPOINT";

/// The pause image `hack/runtime-up.sh` builds (`KRS_PAUSE_IMAGE`).
pub const PAUSE_IMAGE: &str = "registry.k8s.io/pause:3.10";

/// The busybox image `hack/runtime-up.sh` builds (`KRS_BUSYBOX_IMAGE`).
pub const BUSYBOX_IMAGE: &str = "docker.io/library/busybox:1.36";

/// The line `hack/runtime-up.sh` prints last.
const ENDPOINT_KEY: &str = "CONTAINER_RUNTIME_ENDPOINT";

/// The CNI subnet of the test runtime; pod traffic never leaves it.
pub const POD_SUBNET: &str = "198.18.0.0/16";

/// The CNI bridge the test runtime's pods attach to.
pub const CNI_BRIDGE: &str = "krs0";

/// containerd namespace the CRI plugin uses.
pub const CRI_NAMESPACE: &str = "k8s.io";

/// Where the private containerd runs, as reported by `hack/runtime-up.sh`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeEnv {
    /// CRI endpoint, e.g. `unix:///var/lib/kubelet-rs-test/runtime/containerd.sock`.
    pub endpoint: String,
    /// The socket path of [`RuntimeEnv::endpoint`].
    pub socket: PathBuf,
    /// Directory holding all state (`KRS_RUNTIME_DIR`).
    pub state_dir: PathBuf,
    /// containerd's `sandbox_image` (locally built pause image).
    pub pause_image: String,
    /// The locally built busybox image.
    pub busybox_image: String,
    /// The snapshotter containerd's CRI plugin uses (`overlayfs` or `native`).
    pub snapshotter: String,
}

/// Why the test runtime is not available.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeEnvError {
    /// The script could not be started at all.
    #[error("could not run {script}: {reason}")]
    Spawn { script: PathBuf, reason: String },
    /// The script ran and failed.
    #[error(
        "{script} failed ({status}); set {SKIP_ENV}=1 to skip runtime tests on purpose\n\
         --- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
    )]
    ScriptFailed {
        script: PathBuf,
        status: String,
        stdout: String,
        stderr: String,
    },
    /// The script succeeded but its output lacks a `KEY=value` line.
    #[error("output of hack/runtime-up.sh has no `{key}=` line:\n{stdout}")]
    MissingKey { key: &'static str, stdout: String },
    /// The last line is not `CONTAINER_RUNTIME_ENDPOINT=unix://...`.
    #[error(
        "last line of hack/runtime-up.sh output is not `{ENDPOINT_KEY}=unix://<socket>`: {line:?}"
    )]
    BadEndpoint { line: String },
    /// `KRS_TEST_RUNTIME_ENDPOINT` is not `unix://<absolute path>`.
    #[error("{ENDPOINT_ENV}={endpoint:?} is not unix://<absolute socket path>")]
    BadEndpointEnv { endpoint: String },
    /// Nothing answers on the runtime's socket.
    #[error(
        "the test runtime at {endpoint} does not answer: {reason}; set {SKIP_ENV}=1 to skip \
         runtime tests on purpose"
    )]
    Unreachable { endpoint: String, reason: String },
}

/// The repository root (the parent of the `e2e` crate).
pub fn repo_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .map_or_else(|| manifest_dir.to_path_buf(), Path::to_path_buf)
}

/// `hack/runtime-up.sh` of this repository.
pub fn up_script() -> PathBuf {
    repo_root().join("hack/runtime-up.sh")
}

/// Bring the runtime up (once per process), check that it answers, and return where it is.
pub fn ensure() -> Result<RuntimeEnv, RuntimeEnvError> {
    static ENV: OnceLock<Result<RuntimeEnv, RuntimeEnvError>> = OnceLock::new();
    ENV.get_or_init(|| {
        let env = match std::env::var(ENDPOINT_ENV) {
            Ok(endpoint) if !endpoint.is_empty() => from_endpoint(&endpoint)?,
            _ => run_up_script()?,
        };
        check_answers(&env)?;
        Ok(env)
    })
    .clone()
}

/// The runtime at `endpoint` (`KRS_TEST_RUNTIME_ENDPOINT`), with the images of
/// `hack/runtime-up.sh` and its state directory taken to be the socket's directory.
pub fn from_endpoint(endpoint: &str) -> Result<RuntimeEnv, RuntimeEnvError> {
    let socket = endpoint
        .strip_prefix("unix://")
        .filter(|path| path.starts_with('/'))
        .map(PathBuf::from)
        .ok_or_else(|| RuntimeEnvError::BadEndpointEnv {
            endpoint: endpoint.to_string(),
        })?;
    Ok(RuntimeEnv {
        endpoint: endpoint.to_string(),
        state_dir: socket
            .parent()
            .map_or_else(|| PathBuf::from("/"), Path::to_path_buf),
        socket,
        pause_image: PAUSE_IMAGE.to_string(),
        busybox_image: BUSYBOX_IMAGE.to_string(),
        snapshotter: std::env::var("KRS_SNAPSHOTTER").unwrap_or_else(|_| "overlayfs".into()),
    })
}

/// Connects to the runtime's socket once: something must be listening.
pub fn check_answers(env: &RuntimeEnv) -> Result<(), RuntimeEnvError> {
    std::os::unix::net::UnixStream::connect(&env.socket)
        .map(drop)
        .map_err(|e| RuntimeEnvError::Unreachable {
            endpoint: env.endpoint.clone(),
            reason: e.to_string(),
        })
}

/// Run `hack/runtime-up.sh` and parse its output.
pub fn run_up_script() -> Result<RuntimeEnv, RuntimeEnvError> {
    let script = up_script();
    let output = Command::new("bash")
        .arg(&script)
        .current_dir(repo_root())
        .output()
        .map_err(|e| RuntimeEnvError::Spawn {
            script: script.clone(),
            reason: e.to_string(),
        })?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        return Err(RuntimeEnvError::ScriptFailed {
            script,
            status: output.status.to_string(),
            stdout,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    parse_output(&stdout)
}

/// Parse the `KEY=value` lines of `hack/runtime-up.sh`; the last line must be
/// `CONTAINER_RUNTIME_ENDPOINT=unix://<socket>`.
pub fn parse_output(stdout: &str) -> Result<RuntimeEnv, RuntimeEnvError> {
    let last = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let socket = last
        .strip_prefix(ENDPOINT_KEY)
        .and_then(|rest| rest.strip_prefix("=unix://"))
        .filter(|path| path.starts_with('/'))
        .ok_or_else(|| RuntimeEnvError::BadEndpoint {
            line: last.to_string(),
        })?;
    let value = |key: &'static str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
            .map(str::to_string)
            .ok_or_else(|| RuntimeEnvError::MissingKey {
                key,
                stdout: stdout.to_string(),
            })
    };
    Ok(RuntimeEnv {
        endpoint: format!("unix://{socket}"),
        socket: PathBuf::from(socket),
        state_dir: PathBuf::from(value("KRS_RUNTIME_DIR")?),
        pause_image: value("KRS_PAUSE_IMAGE")?,
        busybox_image: value("KRS_BUSYBOX_IMAGE")?,
        snapshotter: value("KRS_SNAPSHOTTER")?,
    })
}

impl RuntimeEnv {
    /// `ctr --address <socket> -n k8s.io`, ready for more arguments.
    pub fn ctr(&self) -> Command {
        let mut cmd = Command::new("ctr");
        cmd.arg("--address")
            .arg(&self.socket)
            .arg("-n")
            .arg(CRI_NAMESPACE);
        cmd
    }

    /// The CNI conflist containerd's CRI plugin loads.
    pub fn cni_conflist(&self) -> PathBuf {
        self.state_dir.join("cni/net.d/10-krs-bridge.conflist")
    }

    /// containerd's log file.
    pub fn containerd_log(&self) -> PathBuf {
        self.state_dir.join("containerd.log")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const GOOD: &str = "KRS_RUNTIME_DIR=/var/lib/x\nKRS_SNAPSHOTTER=overlayfs\n\
        KRS_PAUSE_IMAGE=registry.k8s.io/pause:3.10\nKRS_BUSYBOX_IMAGE=docker.io/library/busybox:1.36\n\
        CONTAINER_RUNTIME_ENDPOINT=unix:///var/lib/x/containerd.sock\n";

    #[test]
    fn parses_the_script_output() {
        let env = parse_output(GOOD);
        assert_eq!(
            env,
            Ok(RuntimeEnv {
                endpoint: "unix:///var/lib/x/containerd.sock".into(),
                socket: PathBuf::from("/var/lib/x/containerd.sock"),
                state_dir: PathBuf::from("/var/lib/x"),
                pause_image: "registry.k8s.io/pause:3.10".into(),
                busybox_image: "docker.io/library/busybox:1.36".into(),
                snapshotter: "overlayfs".into(),
            })
        );
    }

    #[test]
    fn endpoint_must_be_the_last_line() {
        let swapped = format!("{GOOD}KRS_RUNTIME_DIR=/var/lib/x\n");
        assert!(matches!(
            parse_output(&swapped),
            Err(RuntimeEnvError::BadEndpoint { .. })
        ));
    }

    #[test]
    fn endpoint_must_be_an_absolute_unix_socket() {
        let tcp = GOOD.replace("unix:///var", "tcp://var");
        assert!(matches!(
            parse_output(&tcp),
            Err(RuntimeEnvError::BadEndpoint { .. })
        ));
    }

    #[test]
    fn missing_key_is_named() {
        let no_pause = GOOD.replace("KRS_PAUSE_IMAGE=registry.k8s.io/pause:3.10\n", "");
        assert_eq!(
            parse_output(&no_pause),
            Err(RuntimeEnvError::MissingKey {
                key: "KRS_PAUSE_IMAGE",
                stdout: no_pause.clone(),
            })
        );
    }

    #[test]
    fn endpoint_env_must_be_an_absolute_unix_socket() {
        for bad in ["/run/x.sock", "unix://run/x.sock", "tcp://127.0.0.1:1"] {
            assert_eq!(
                from_endpoint(bad),
                Err(RuntimeEnvError::BadEndpointEnv {
                    endpoint: bad.into()
                })
            );
        }
        let env = from_endpoint("unix:///run/krs/c.sock").unwrap();
        assert_eq!(env.socket, PathBuf::from("/run/krs/c.sock"));
        assert_eq!(env.state_dir, PathBuf::from("/run/krs"));
    }

    #[test]
    fn a_socket_nobody_listens_on_is_unreachable_and_names_the_skip_variable() {
        let dir = std::env::temp_dir().join(format!("krs-e2e-unreachable-{}", std::process::id()));
        let env = from_endpoint(&format!("unix://{}/none.sock", dir.display())).unwrap();
        let err = check_answers(&env).unwrap_err();
        assert!(
            matches!(err, RuntimeEnvError::Unreachable { .. }),
            "{err:?}"
        );
        assert!(
            err.to_string().contains("KRS_SKIP_RUNTIME_TESTS=1"),
            "{err}"
        );
    }

    #[test]
    fn image_names_are_those_runtime_up_builds() {
        let script =
            std::fs::read_to_string(repo_root().join("hack/lib/runtime-images.sh")).unwrap();
        assert!(
            script.contains(&format!("KRS_PAUSE_IMAGE=\"{PAUSE_IMAGE}\"")),
            "{PAUSE_IMAGE}"
        );
        assert!(
            script.contains(&format!("KRS_BUSYBOX_IMAGE=\"{BUSYBOX_IMAGE}\"")),
            "{BUSYBOX_IMAGE}"
        );
    }

    #[test]
    fn repo_root_holds_the_script() {
        assert!(up_script().ends_with("hack/runtime-up.sh"));
        assert!(repo_root().join("e2e/Cargo.toml").is_file());
    }
}
