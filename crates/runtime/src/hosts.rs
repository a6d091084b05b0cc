//! The kubelet-managed `/etc/hosts` of a pod (upstream `makeHostsMount`, `ensureHostsFile`,
//! `managedHostsFileContent`, `nodeHostsFileContent` in `pkg/kubelet/kubelet_pods.go`).

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::HostAlias;

use crate::error::RuntimeManagerError;
use crate::os::OsInterface;

/// Where containers see the file.
pub const ETC_HOSTS_PATH: &str = "/etc/hosts";
const MANAGED_HEADER: &str = "# Kubernetes-managed hosts file.\n";
const MANAGED_HOST_NETWORK_HEADER: &str = "# Kubernetes-managed hosts file (host network).\n";

/// `managedHostsFileContent`: localhost entries, the pod's IPs with its hostname, and aliases.
pub fn managed_hosts_content(
    pod_ips: &[String],
    hostname: &str,
    domain: &str,
    aliases: &[HostAlias],
) -> String {
    let mut s = String::from(MANAGED_HEADER);
    s.push_str("127.0.0.1\tlocalhost\n");
    s.push_str("::1\tlocalhost ip6-localhost ip6-loopback\n");
    s.push_str("fe00::0\tip6-localnet\n");
    s.push_str("fe00::0\tip6-mcastprefix\n");
    s.push_str("fe00::1\tip6-allnodes\n");
    s.push_str("fe00::2\tip6-allrouters\n");
    for ip in pod_ips {
        if domain.is_empty() {
            s.push_str(&format!("{ip}\t{hostname}\n"));
        } else {
            s.push_str(&format!("{ip}\t{hostname}.{domain}\t{hostname}\n"));
        }
    }
    s.push_str(&aliases_content(aliases));
    s
}

/// `hostsEntriesFromHostAliases`.
fn aliases_content(aliases: &[HostAlias]) -> String {
    if aliases.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n# Entries added by HostAliases.\n");
    for a in aliases {
        let names = a.hostnames.as_deref().unwrap_or_default().join("\t");
        s.push_str(&format!("{}\t{names}\n", a.ip));
    }
    s
}

/// `ensureHostsFile`: writes `<pod_dir>/etc-hosts` once (an existing file is kept, so
/// restarted containers see the same content) and returns its path.
#[allow(clippy::too_many_arguments)]
pub fn ensure_hosts_file(
    os: &dyn OsInterface,
    pod_dir: &Path,
    pod_ips: &[String],
    hostname: &str,
    domain: &str,
    aliases: &[HostAlias],
    host_network: bool,
    node_hosts_file: &Path,
) -> Result<PathBuf, RuntimeManagerError> {
    let path = pod_dir.join("etc-hosts");
    if os.exists(&path) {
        return Ok(path);
    }
    let io = |what: &str, p: &Path| {
        let what = what.to_string();
        let p = p.to_path_buf();
        move |source| RuntimeManagerError::Io {
            what,
            path: p,
            source,
        }
    };
    let content = if host_network {
        let node = os
            .read_to_string(node_hosts_file)
            .map_err(io("read node hosts file", node_hosts_file))?;
        format!(
            "{MANAGED_HOST_NETWORK_HEADER}{node}{}",
            aliases_content(aliases)
        )
    } else {
        managed_hosts_content(pod_ips, hostname, domain, aliases)
    };
    os.mkdir_all(pod_dir)
        .map_err(io("create pod directory", pod_dir))?;
    os.write_file(&path, content.as_bytes())
        .map_err(io("write hosts file", &path))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::os::FakeOs;

    #[test]
    fn managed_content_matches_upstream() {
        let aliases = vec![HostAlias {
            ip: "10.1.1.1".into(),
            hostnames: Some(vec!["a".into(), "b".into()]),
        }];
        let got = managed_hosts_content(
            &["198.18.0.7".into()],
            "web",
            "svc.ns.svc.cluster.local",
            &aliases,
        );
        let want = "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n198.18.0.7\tweb.svc.ns.svc.cluster.local\tweb\n\n# Entries added by HostAliases.\n10.1.1.1\ta\tb\n";
        assert_eq!(got, want);
        assert!(managed_hosts_content(&["1.2.3.4".into()], "h", "", &[]).ends_with("1.2.3.4\th\n"));
    }

    #[test]
    fn file_is_written_once() {
        let os = FakeOs::new();
        let dir = Path::new("/var/lib/kubelet/pods/u1");
        let p = ensure_hosts_file(
            &os,
            dir,
            &["1.2.3.4".into()],
            "h",
            "",
            &[],
            false,
            Path::new("/etc/hosts"),
        )
        .unwrap();
        assert_eq!(p, dir.join("etc-hosts"));
        let p2 = ensure_hosts_file(
            &os,
            dir,
            &["5.6.7.8".into()],
            "h",
            "",
            &[],
            false,
            Path::new("/etc/hosts"),
        )
        .unwrap();
        assert!(os.read_to_string(&p2).unwrap().contains("1.2.3.4\th"));

        os.write_file(Path::new("/etc/hosts"), b"127.0.0.1 node\n")
            .unwrap();
        let dir2 = Path::new("/var/lib/kubelet/pods/u2");
        let p =
            ensure_hosts_file(&os, dir2, &[], "h", "", &[], true, Path::new("/etc/hosts")).unwrap();
        assert_eq!(
            os.read_to_string(&p).unwrap(),
            "# Kubernetes-managed hosts file (host network).\n127.0.0.1 node\n"
        );
    }
}
