//! Swap checks of `NewContainerManager` (`pkg/kubelet/cm/container_manager_linux.go`) and
//! `run()` (`LimitedSwap` needs cgroup v2).

use std::path::Path;

use crate::CmError;
use crate::cgroups::CgroupVersion;
use crate::hostfs::HostFs;

/// Whether `/proc/swaps` lists any swap device (its first line is a header).
pub fn swap_enabled(fs: &dyn HostFs) -> Result<bool, CmError> {
    let swaps = fs
        .read_to_string(Path::new("/proc/swaps"))
        .map_err(|source| CmError::Read {
            path: "/proc/swaps".into(),
            source,
        })?;
    Ok(swaps.lines().skip(1).any(|l| !l.trim().is_empty()))
}

/// Upstream's swap rules: with `failSwapOn` the kubelet refuses a host with swap on;
/// `LimitedSwap` is only supported on cgroup v2.
pub fn check_swap(
    fs: &dyn HostFs,
    fail_swap_on: bool,
    swap_behavior: &str,
    version: CgroupVersion,
) -> Result<(), CmError> {
    if swap_behavior == "LimitedSwap" && version == CgroupVersion::V1 {
        return Err(CmError::Config(
            "swap behavior LimitedSwap is only supported with cgroupv2".into(),
        ));
    }
    if fail_swap_on && swap_enabled(fs)? {
        return Err(CmError::Config("running with swap on is not supported, please disable swap or set --fail-swap-on flag to false".into()));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::hostfs::FakeHostFs;

    const HEADER: &str = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";

    #[test]
    fn swap_on_refused_only_with_fail_swap_on() {
        let fs = FakeHostFs::default();
        fs.add_file("/proc/swaps", format!("{HEADER}/swapfile file 1024 0 -2\n"));
        let err = check_swap(&fs, true, "", CgroupVersion::V2).unwrap_err();
        assert!(err.to_string().contains("--fail-swap-on"), "{err}");
        assert!(check_swap(&fs, false, "", CgroupVersion::V2).is_ok());
    }

    #[test]
    fn no_swap_is_fine() {
        let fs = FakeHostFs::default();
        fs.add_file("/proc/swaps", HEADER);
        assert!(check_swap(&fs, true, "", CgroupVersion::V1).is_ok());
    }

    #[test]
    fn limited_swap_needs_v2() {
        let fs = FakeHostFs::default();
        fs.add_file("/proc/swaps", HEADER);
        assert!(check_swap(&fs, false, "LimitedSwap", CgroupVersion::V1).is_err());
        assert!(check_swap(&fs, false, "LimitedSwap", CgroupVersion::V2).is_ok());
    }
}
