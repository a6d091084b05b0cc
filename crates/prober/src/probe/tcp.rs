//! TCP probe: success when a connection opens within the timeout (upstream
//! `pkg/probe/tcp/tcp.go`).

use std::time::Duration;

use super::{Outcome, ProbeOutput, Probed, join_host_port, probe_dial};

/// `DoTCPProbe(JoinHostPort(host, port), timeout)`; a failed connect is a `Failure` whose
/// output is the dial error.
pub async fn probe(host: &str, port: u16, timeout: Duration) -> ProbeOutput {
    let addr = join_host_port(host, port);
    Ok(match probe_dial(&addr, timeout).await {
        Ok(stream) => {
            drop(stream);
            Probed::new(Outcome::Success, "")
        }
        Err(e) => Probed::new(Outcome::Failure, e),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn open_port_succeeds_and_closed_port_fails() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let ok = probe("127.0.0.1", port, Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(ok.outcome, Outcome::Success);
        drop(listener);
        let failed = probe("127.0.0.1", port, Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(failed.outcome, Outcome::Failure);
        assert_eq!(
            failed.output,
            format!("dial tcp 127.0.0.1:{port}: connect: connection refused")
        );
    }
}
