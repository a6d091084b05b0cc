//! Exec probe: a command in the container through CRI `ExecSync` (upstream
//! `pkg/probe/exec/exec.go`, with `kubeGenericRuntimeManager.RunInContainer` as the runner).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use kubelet_container::ContainerId;
use kubelet_cri::{CriError, RuntimeService};

use super::{Outcome, ProbeError, ProbeOutput, Probed};

/// At most this much of the command's output is kept (upstream `maxReadLength`, 10 KiB).
pub const MAX_READ_LENGTH: usize = 10 * 1024;

/// Why a command in a container did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum RunInContainerError {
    /// The command ran and exited non-zero (upstream `utilexec.CodeExitError`).
    #[error("command {cmd:?} exited with {code}")]
    Exit {
        /// The command, joined with spaces.
        cmd: String,
        /// Its exit code.
        code: i32,
        /// Its stdout followed by its stderr.
        output: Vec<u8>,
    },
    /// The runtime reported the command's timeout (upstream `ErrCommandTimedOut`).
    #[error("{0}")]
    TimedOut(String),
    /// Anything else from the runtime.
    #[error("{0}")]
    Runtime(String),
}

/// Runs a command in a container (upstream `kubecontainer.CommandRunner`).
#[async_trait]
pub trait CommandRunner: Send + Sync {
    /// Runs `cmd` in container `id` within `timeout`; stdout followed by stderr.
    async fn run_in_container(
        &self,
        id: &ContainerId,
        cmd: &[String],
        timeout: Duration,
    ) -> Result<Vec<u8>, RunInContainerError>;
}

/// `RunInContainer` over a CRI runtime service: `ExecSync`, stdout then stderr.
#[derive(Clone)]
pub struct CriCommandRunner(pub Arc<dyn RuntimeService>);

#[async_trait]
impl CommandRunner for CriCommandRunner {
    async fn run_in_container(
        &self,
        id: &ContainerId,
        cmd: &[String],
        timeout: Duration,
    ) -> Result<Vec<u8>, RunInContainerError> {
        match self.0.exec_sync(&id.id, cmd, timeout).await {
            Ok(resp) => {
                let mut output = resp.stdout;
                output.extend_from_slice(&resp.stderr);
                if resp.exit_code == 0 {
                    Ok(output)
                } else {
                    Err(RunInContainerError::Exit {
                        cmd: cmd.join(" "),
                        code: resp.exit_code,
                        output,
                    })
                }
            }
            Err(e @ CriError::CommandTimedOut { .. }) => {
                Err(RunInContainerError::TimedOut(e.to_string()))
            }
            Err(e) => Err(RunInContainerError::Runtime(e.to_string())),
        }
    }
}

fn limited(mut data: Vec<u8>) -> String {
    data.truncate(MAX_READ_LENGTH);
    String::from_utf8_lossy(&data).into_owned()
}

/// Runs the probe command: exit 0 is `Success`, another exit code `Failure` with the output,
/// a timeout `Failure` with the timeout message, anything else an error.
pub async fn probe(
    runner: &dyn CommandRunner,
    id: &ContainerId,
    cmd: &[String],
    timeout: Duration,
) -> ProbeOutput {
    match runner.run_in_container(id, cmd, timeout).await {
        Ok(data) => Ok(Probed::new(Outcome::Success, limited(data))),
        Err(RunInContainerError::Exit { output, .. }) => {
            Ok(Probed::new(Outcome::Failure, limited(output)))
        }
        Err(RunInContainerError::TimedOut(msg)) => Ok(Probed::new(Outcome::Failure, msg)),
        Err(RunInContainerError::Runtime(msg)) => Err(ProbeError(msg)),
    }
}
