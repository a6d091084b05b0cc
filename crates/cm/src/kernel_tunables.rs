//! The kernel settings the kubelet depends on (`pkg/kubelet/cm/container_manager_linux.go`
//! `setupKernelTunables`, names and values from `component-helpers/node/util/sysctl`).
//!
//! `protectKernelDefaults: true` makes a differing value an error that stops the start;
//! otherwise the kubelet writes the expected value, logging each change at V(2).

use std::path::PathBuf;

use crate::CmError;
use crate::hostfs::HostFs;

/// The sysctls and the values the kubelet wants, in upstream's names (`/proc/sys` relative,
/// `/`-separated). Upstream iterates a Go map (random order); this order is fixed.
pub const DESIRED_KERNEL_TUNABLES: [(&str, i64); 6] = [
    // VMOvercommitMemory = VMOvercommitMemoryAlways
    ("vm/overcommit_memory", 1),
    // VMPanicOnOOM = VMPanicOnOOMInvokeOOMKiller
    ("vm/panic_on_oom", 0),
    // KernelPanic = KernelPanicRebootTimeout
    ("kernel/panic", 10),
    // KernelPanicOnOops = KernelPanicOnOopsAlways
    ("kernel/panic_on_oops", 1),
    // RootMaxKeys = RootMaxKeysSetting
    ("kernel/keys/root_maxkeys", 1_000_000),
    // RootMaxBytes = RootMaxBytesSetting (RootMaxKeysSetting * 25)
    ("kernel/keys/root_maxbytes", 25_000_000),
];

const SYSCTL_BASE: &str = "/proc/sys";

/// What to do with a differing value (upstream `KernelTunableBehavior`; `warn` is unused
/// by the kubelet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelTunableBehavior {
    /// `protectKernelDefaults: true`: report every differing value as an error.
    Error,
    /// The default: write the expected value.
    Modify,
}

impl KernelTunableBehavior {
    /// The behaviour `setupNode` picks for `protectKernelDefaults`.
    pub fn for_protect_kernel_defaults(protect: bool) -> Self {
        if protect {
            KernelTunableBehavior::Error
        } else {
            KernelTunableBehavior::Modify
        }
    }
}

fn sysctl_path(flag: &str) -> PathBuf {
    PathBuf::from(SYSCTL_BASE).join(flag)
}

/// Upstream `procSysctl.GetSysctl`: the file's content, trimmed, as an integer.
fn get_sysctl(fs: &dyn HostFs, flag: &str) -> Result<i64, String> {
    let path = sysctl_path(flag);
    let data = fs
        .read_to_string(&path)
        .map_err(|e| format!("open {}: {e}", path.display()))?;
    let trimmed = data.trim_matches([' ', '\n']);
    trimmed
        .parse()
        .map_err(|_| format!("strconv.Atoi: parsing {trimmed:?}: invalid syntax"))
}

/// `userns.RunningInUserNS`: `/proc/self/uid_map` maps anything but the whole range.
pub fn running_in_user_ns(fs: &dyn HostFs) -> bool {
    let Ok(map) = fs.read_to_string(std::path::Path::new("/proc/self/uid_map")) else {
        return false;
    };
    let fields: Vec<&str> = map.split_whitespace().collect();
    !(fields.len() == 3 && fields[0] == "0" && fields[1] == "0" && fields[2] == "4294967295")
}

/// Upstream `setupKernelTunables`. `kubelet_in_user_namespace` is the
/// `KubeletInUserNamespace` gate: in a user namespace, failed writes are then ignored.
/// Every problem is collected; the error reads like `utilerrors.NewAggregate`.
pub fn setup_kernel_tunables(
    fs: &dyn HostFs,
    behavior: KernelTunableBehavior,
    kubelet_in_user_namespace: bool,
) -> Result<(), CmError> {
    let mut errs: Vec<String> = Vec::new();
    for (flag, expected) in DESIRED_KERNEL_TUNABLES {
        let val = match get_sysctl(fs, flag) {
            Ok(v) => v,
            Err(e) => {
                errs.push(e);
                continue;
            }
        };
        if val == expected {
            continue;
        }
        match behavior {
            KernelTunableBehavior::Error => errs.push(format!(
                "invalid kernel flag: {flag}, expected value: {expected}, actual value: {val}"
            )),
            KernelTunableBehavior::Modify => {
                tracing::debug!(
                    flag,
                    expected_value = expected,
                    actual_value = val,
                    "Updating kernel flag"
                );
                let path = sysctl_path(flag);
                if let Err(e) = fs.write(&path, &expected.to_string()) {
                    let err = format!("open {}: {e}", path.display());
                    if running_in_user_ns(fs) {
                        if kubelet_in_user_namespace {
                            tracing::debug!(flag, err = %err, "Updating kernel flag failed (running in UserNS, ignoring)");
                            continue;
                        }
                        tracing::error!(flag, err = %err, "Updating kernel flag failed (Hint: enable KubeletInUserNamespace feature flag to ignore the error)");
                    }
                    errs.push(err);
                }
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    errs.retain(|e| seen.insert(e.clone()));
    match errs.len() {
        0 => Ok(()),
        1 => Err(CmError::KernelTunables(errs.remove(0))),
        _ => Err(CmError::KernelTunables(format!("[{}]", errs.join(", ")))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::hostfs::FakeHostFs;

    /// A host whose sysctls are the values on a fresh Debian machine.
    fn host() -> FakeHostFs {
        let fs = FakeHostFs::default();
        for (flag, v) in [
            ("vm/overcommit_memory", "0\n"),
            ("vm/panic_on_oom", "0\n"),
            ("kernel/panic", "1\n"),
            ("kernel/panic_on_oops", "0\n"),
            ("kernel/keys/root_maxkeys", "1000000\n"),
            ("kernel/keys/root_maxbytes", "25000000\n"),
        ] {
            fs.add_file(sysctl_path(flag), v);
        }
        fs
    }

    #[test]
    fn error_lists_every_differing_flag_modify_writes_them() {
        // protectKernelDefaults: true: every differing value is an error, nothing is written.
        let fs = host();
        let err = setup_kernel_tunables(
            &fs,
            KernelTunableBehavior::for_protect_kernel_defaults(true),
            false,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "[invalid kernel flag: vm/overcommit_memory, expected value: 1, actual value: 0, \
             invalid kernel flag: kernel/panic, expected value: 10, actual value: 1, \
             invalid kernel flag: kernel/panic_on_oops, expected value: 1, actual value: 0]"
        );
        assert!(fs.writes().is_empty(), "{:?}", fs.writes());

        // false (the default): the kubelet writes exactly the differing ones.
        let fs = host();
        setup_kernel_tunables(
            &fs,
            KernelTunableBehavior::for_protect_kernel_defaults(false),
            false,
        )
        .unwrap();
        assert_eq!(
            fs.writes(),
            [
                (sysctl_path("vm/overcommit_memory"), "1".to_string()),
                (sysctl_path("kernel/panic"), "10".to_string()),
                (sysctl_path("kernel/panic_on_oops"), "1".to_string()),
            ]
        );
        // Now everything is as desired: protect passes and nothing more is written.
        setup_kernel_tunables(&fs, KernelTunableBehavior::Error, false).unwrap();
        assert_eq!(fs.writes().len(), 3);

        // One differing value: the message is that error alone.
        let fs = host();
        setup_kernel_tunables(&fs, KernelTunableBehavior::Modify, false).unwrap();
        fs.add_file(sysctl_path("vm/panic_on_oom"), "1");
        let err = setup_kernel_tunables(&fs, KernelTunableBehavior::Error, false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid kernel flag: vm/panic_on_oom, expected value: 0, actual value: 1"
        );
    }

    #[test]
    fn unreadable_and_unwritable_sysctls_fail_the_start() {
        let fs = host();
        fs.add_file(sysctl_path("kernel/panic"), "ten");
        fs.deny_writes(sysctl_path("vm/overcommit_memory"));
        let err = setup_kernel_tunables(&fs, KernelTunableBehavior::Modify, false).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("/proc/sys/vm/overcommit_memory"), "{msg}");
        assert!(msg.contains("parsing \"ten\""), "{msg}");

        // In a user namespace with KubeletInUserNamespace, a failed write is ignored.
        fs.add_file(sysctl_path("kernel/panic"), "10");
        fs.add_file("/proc/self/uid_map", "         0     100000      65536\n");
        setup_kernel_tunables(&fs, KernelTunableBehavior::Modify, true).unwrap();
        assert!(setup_kernel_tunables(&fs, KernelTunableBehavior::Modify, false).is_err());
        fs.add_file("/proc/self/uid_map", "         0          0 4294967295\n");
        assert!(!running_in_user_ns(&fs));
    }
}
