//! Exec, attach, port-forward, checkpoint and container events of [`RemoteRuntimeService`]
//! (upstream `remote_runtime.go` `execSyncV1`, `execV1`, `attachV1`, `CheckpointContainer`,
//! `GetContainerEvents`).

use std::time::Duration;

use futures::StreamExt;

use crate::error::{CriError, CriResult};
use crate::remote::runtime::{RemoteRuntimeService, require_url};
use crate::services::ContainerEventStream;
use crate::v1::*;

impl RemoteRuntimeService {
    pub(super) async fn exec_sync_v1(
        &self,
        container_id: &str,
        cmd: &[String],
        timeout: Duration,
    ) -> CriResult<ExecSyncResponse> {
        // No deadline when timeout is 0; otherwise timeout + the default, for runtime cleanup.
        let d = (!timeout.is_zero()).then(|| self.conn.timeout + timeout);
        let req = ExecSyncRequest {
            container_id: container_id.to_owned(),
            cmd: cmd.to_vec(),
            timeout: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
        };
        let result = self
            .conn
            .call("ExecSync", d, req, |mut c, r| async move {
                c.exec_sync(r).await
            })
            .await;
        match result {
            Err(e) if e.is_deadline_exceeded() => Err(CriError::CommandTimedOut {
                cmd: cmd.join(" "),
                timeout,
            }),
            other => other,
        }
    }

    pub(super) async fn exec_v1(&self, req: &ExecRequest) -> CriResult<ExecResponse> {
        let d = self.default_deadline();
        let resp = self
            .conn
            .call(
                "Exec",
                d,
                req.clone(),
                |mut c, r| async move { c.exec(r).await },
            )
            .await?;
        require_url(&self.conn, "Exec", &resp.url)?;
        Ok(resp)
    }

    pub(super) async fn attach_v1(&self, req: &AttachRequest) -> CriResult<AttachResponse> {
        let d = self.default_deadline();
        let resp = self
            .conn
            .call("Attach", d, req.clone(), |mut c, r| async move {
                c.attach(r).await
            })
            .await?;
        require_url(&self.conn, "Attach", &resp.url)?;
        Ok(resp)
    }

    pub(super) async fn checkpoint_container_v1(
        &self,
        req: &CheckpointContainerRequest,
    ) -> CriResult<()> {
        if req.timeout < 0 {
            return Err(CriError::InvalidRequest {
                method: "CheckpointContainer",
                reason: "CheckpointContainer requires the timeout value to be > 0".into(),
            });
        }
        // A requested timeout above the default wins; otherwise the default is used and sent.
        let default_secs = i64::try_from(self.conn.timeout.as_secs()).unwrap_or(i64::MAX);
        let mut req = req.clone();
        let d = if req.timeout > default_secs {
            Duration::from_secs(u64::try_from(req.timeout).unwrap_or(u64::MAX))
        } else {
            req.timeout = default_secs;
            self.conn.timeout
        };
        self.conn
            .call("CheckpointContainer", Some(d), req, |mut c, r| async move {
                c.checkpoint_container(r).await
            })
            .await?;
        Ok(())
    }

    pub(super) async fn get_container_events_v1(&self) -> CriResult<ContainerEventStream> {
        let endpoint = self.conn.endpoint.clone();
        let stream = self
            .conn
            .call(
                "GetContainerEvents",
                None,
                GetEventsRequest {},
                |mut c, r| async move { c.get_container_events(r).await },
            )
            .await?;
        let stream = stream.map(move |item| {
            item.map_err(|s| CriError::from_tonic(&endpoint, "GetContainerEvents", &s))
        });
        Ok(Box::pin(stream))
    }
}
