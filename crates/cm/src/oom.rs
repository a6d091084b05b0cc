//! OOM score adjustment of a process (mirrors `pkg/util/oom/oom_linux.go`).

use std::path::PathBuf;

use crate::CmError;
use crate::hostfs::HostFs;

/// Writes `value` to `/proc/<pid>/oom_score_adj` (`pid` 0 means this process), as
/// upstream's `ApplyOOMScoreAdj`. Lowering the value needs `CAP_SYS_RESOURCE`; callers on
/// the startup path log the error and carry on, as upstream does.
pub fn apply_oom_score_adj(fs: &dyn HostFs, pid: u32, value: i32) -> Result<(), CmError> {
    if !(-1000..=1000).contains(&value) {
        return Err(CmError::OomScoreAdj {
            value,
            path: String::new(),
            reason: "invalid value (must be in [-1000, 1000])".into(),
        });
    }
    let proc = if pid == 0 {
        "self".to_string()
    } else {
        pid.to_string()
    };
    let path = PathBuf::from(format!("/proc/{proc}/oom_score_adj"));
    fs.write(&path, &value.to_string())
        .map_err(|e| CmError::OomScoreAdj {
            value,
            path: path.display().to_string(),
            reason: e.to_string(),
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::hostfs::FakeHostFs;

    #[test]
    fn writes_self() {
        let fs = FakeHostFs::default();
        apply_oom_score_adj(&fs, 0, -999).unwrap();
        assert_eq!(
            fs.writes(),
            vec![(
                PathBuf::from("/proc/self/oom_score_adj"),
                "-999".to_string()
            )]
        );
    }

    #[test]
    fn permission_denied_is_reported_with_value_and_path() {
        let fs = FakeHostFs::default();
        fs.deny_writes("/proc/42/oom_score_adj");
        let err = apply_oom_score_adj(&fs, 42, -999).unwrap_err().to_string();
        assert!(
            err.contains("-999") && err.contains("/proc/42/oom_score_adj"),
            "{err}"
        );
    }

    #[test]
    fn out_of_range_rejected() {
        let fs = FakeHostFs::default();
        assert!(apply_oom_score_adj(&fs, 0, 1001).is_err());
        assert!(fs.writes().is_empty());
    }
}
