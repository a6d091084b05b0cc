//! The kubelet's open-files limit (`pkg/util/rlimit/rlimit_linux.go` `SetNumFiles`,
//! called by `RunKubelet` with `maxOpenFiles`), behind a trait with a recording fake.

use std::sync::Mutex;

/// Process resource limits the kubelet sets on itself.
pub trait Rlimits: Send + Sync {
    /// Sets the soft and hard `RLIMIT_NOFILE` to `max_open_files` (upstream `SetNumFiles`).
    fn set_num_files(&self, max_open_files: u64) -> std::io::Result<()>;
}

/// The real process.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealRlimits;

impl Rlimits for RealRlimits {
    fn set_num_files(&self, max_open_files: u64) -> std::io::Result<()> {
        nix::sys::resource::setrlimit(
            nix::sys::resource::Resource::RLIMIT_NOFILE,
            max_open_files,
            max_open_files,
        )
        .map_err(std::io::Error::from)
    }
}

/// Records every call; fails them all when built with [`FakeRlimits::failing`].
#[derive(Debug, Default)]
pub struct FakeRlimits {
    calls: Mutex<Vec<u64>>,
    fail: bool,
}

impl FakeRlimits {
    /// A fake whose calls fail with `EPERM`, as for an unprivileged kubelet.
    pub fn failing() -> Self {
        FakeRlimits {
            fail: true,
            ..Self::default()
        }
    }

    /// The values asked for, in order.
    pub fn calls(&self) -> Vec<u64> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl Rlimits for FakeRlimits {
    fn set_num_files(&self, max_open_files: u64) -> std::io::Result<()> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(max_open_files);
        if self.fail {
            return Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        }
        Ok(())
    }
}
