//! systemd readiness notification (`daemon.SdNotify(false, "READY=1")`).

/// Sends `READY=1` to `$NOTIFY_SOCKET` when it is set; does nothing otherwise. Errors are
/// logged, never fatal, as upstream.
pub fn notify_ready() {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    match sd_notify::notify(&[sd_notify::NotifyState::Ready]) {
        Ok(()) => tracing::debug!("sent READY=1 to systemd"),
        Err(err) => tracing::info!(err = %err, "failed to notify systemd of readiness"),
    }
}
