//! HugePages emptyDir against the real containerd of `hack/runtime-up.sh` (upstream
//! `pkg/volume/emptydir` `setupHugepages`): 2 MiB huge pages are reserved on the host for
//! the test (`/proc/sys/vm/nr_hugepages`, restored by a guard even on failure); a static
//! pod requesting `hugepages-2Mi` with a `medium: HugePages` emptyDir sees a hugetlbfs
//! with `pagesize=2M` at its mount path (the container process's `mountinfo`); a file
//! there is mmapped through the pod's volume directory, takes a real huge page, and the
//! container reads what was written; a pod whose `medium: HugePages-1Gi` asks for a size
//! it does not request stays `Pending` (`ContainerCreating`, no sandbox) with upstream's
//! `FailedMount` message; the hugetlbfs is unmounted when the pod goes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::node::{Node, runtime_lock};

const T: Duration = Duration::from_secs(60);
const NR_HUGEPAGES: &str = "/proc/sys/vm/nr_hugepages";
/// Pages the test adds to the host's pool.
const PAGES: u64 = 8;

/// Adds [`PAGES`] 2 MiB huge pages to the pool; dropping it restores the previous count.
struct HugePagesGuard {
    previous: String,
}

impl HugePagesGuard {
    fn reserve() -> HugePagesGuard {
        let previous = std::fs::read_to_string(NR_HUGEPAGES).unwrap();
        let want = previous.trim().parse::<u64>().unwrap() + PAGES;
        let guard = HugePagesGuard { previous };
        std::fs::write(NR_HUGEPAGES, want.to_string()).unwrap();
        let got = meminfo("HugePages_Total");
        assert!(
            got >= want,
            "the kernel gave {got} of {want} huge pages (memory too fragmented?)"
        );
        guard
    }
}

impl Drop for HugePagesGuard {
    fn drop(&mut self) {
        if let Err(e) = std::fs::write(NR_HUGEPAGES, self.previous.trim()) {
            eprintln!("restoring {NR_HUGEPAGES} to {}: {e}", self.previous.trim());
        }
    }
}

fn meminfo(key: &str) -> u64 {
    let info = std::fs::read_to_string("/proc/meminfo").unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("{key} not in /proc/meminfo"))
}

fn pod(name: &str, image: &str, medium: &str, script: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: {image}
    imagePullPolicy: Never
    command: [\"sh\", \"-c\", {script:?}]
    resources:
      requests:
        memory: 64Mi
        hugepages-2Mi: 4Mi
      limits:
        memory: 64Mi
        hugepages-2Mi: 4Mi
    volumeMounts:
    - name: hp
      mountPath: /hp
  volumes:
  - name: hp
    emptyDir:
      medium: {medium}
"
    )
}

/// The mount of `point` in a `mountinfo` text: (filesystem type, super options).
fn mountinfo_entry(mountinfo: &str, point: &str) -> Option<(String, String)> {
    mountinfo.lines().find_map(|l| {
        let fields: Vec<&str> = l.split_whitespace().collect();
        if fields.get(4) != Some(&point) {
            return None;
        }
        let sep = fields.iter().position(|f| *f == "-")?;
        Some((
            fields.get(sep + 1)?.to_string(),
            fields.get(sep + 3)?.to_string(),
        ))
    })
}

/// Maps one huge page of `file` (created) shared, writes `text` at its start, unmaps.
fn mmap_write(file: &Path, text: &[u8]) {
    use std::os::fd::AsRawFd;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(file)
        .unwrap();
    let len = 2 << 20;
    // SAFETY: a fresh shared mapping of a file we own, written within its length and
    // unmapped before the file is closed.
    #[allow(unsafe_code)]
    unsafe {
        let addr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(
            addr,
            libc::MAP_FAILED,
            "mmap of {}: {}",
            file.display(),
            std::io::Error::last_os_error()
        );
        std::ptr::copy_nonoverlapping(text.as_ptr(), addr.cast::<u8>(), text.len());
        assert_eq!(libc::munmap(addr, len), 0);
    }
}

fn host_mounts(path: &Path) -> Option<String> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let p = path.to_str().unwrap();
    mounts
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(p))
        .map(str::to_string)
}

#[cfg_attr(krs_skip_runtime, ignore = "KRS_SKIP_RUNTIME_TESTS=1")]
#[tokio::test(flavor = "multi_thread")]
async fn huge_pages_empty_dir_is_a_hugetlbfs_of_the_requested_page_size() {
    let _g = runtime_lock().await;
    let _pages = HugePagesGuard::reserve();
    let mut node = Node::new("rt-huge").await;
    node.start().await;
    let image = node.busybox.clone();
    let script = "while [ ! -e /hp/ready ]; do sleep 0.2; done; \
        echo \"data=$(head -c 10 /hp/data)\"; echo done; sleep 3600";
    node.write_manifest("huge.yaml", &pod("huge", &image, "HugePages", script));
    node.write_manifest(
        "wrong.yaml",
        &pod("wrong", &image, "HugePages-1Gi", "sleep 3600"),
    );

    let name = format!("huge-{}", node.name);
    let p = node
        .wait_for("huge Running", T, || async {
            node.pod("huge")
                .filter(|p| p["status"]["phase"] == "Running")
        })
        .await;
    let uid = p["metadata"]["uid"].as_str().unwrap().to_string();
    let vol: PathBuf = node
        .dir
        .path()
        .join("root/pods")
        .join(&uid)
        .join("volumes/kubernetes.io~empty-dir/hp");
    let host = host_mounts(&vol).unwrap_or_else(|| panic!("{} not mounted", vol.display()));
    assert!(host.starts_with("nodev "), "{host}");
    assert!(host.contains(" hugetlbfs "), "{host}");

    // What the container process sees at /hp.
    let running = node.running("huge").await;
    assert_eq!(running.len(), 1);
    let pid = node.container_pid(&running[0].id).await;
    let mountinfo = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap();
    let (fs, opts) = mountinfo_entry(&mountinfo, "/hp")
        .unwrap_or_else(|| panic!("no /hp in the container's mountinfo:\n{mountinfo}"));
    assert_eq!(fs, "hugetlbfs", "{mountinfo}");
    assert!(opts.split(',').any(|o| o == "pagesize=2M"), "{opts}");

    // A file mmapped there takes a huge page, and the container reads it.
    let free = meminfo("HugePages_Free");
    mmap_write(&vol.join("data"), b"hugepages!");
    assert_eq!(
        meminfo("HugePages_Free"),
        free - 1,
        "the file holds one huge page"
    );
    std::fs::File::create(vol.join("ready")).unwrap();
    let log_path = node
        .logs_dir()
        .join(format!("default_{name}_{uid}"))
        .join("main/0.log");
    let log = node
        .wait_for("the container's report", T, || async {
            std::fs::read_to_string(&log_path)
                .ok()
                .filter(|s| s.contains("done"))
        })
        .await;
    assert!(log.contains("data=hugepages!"), "{log}");

    // medium HugePages-1Gi without a hugepages-1Gi request: upstream's FailedMount, the
    // pod waits in ContainerCreating and never gets a sandbox.
    let want = "MountVolume.SetUp failed for volume \\\"hp\\\" : medium HugePages-1Gi: hugePages storage requested, but there is no resource request for huge pages";
    node.wait_for("wrong's FailedMount", T, || async {
        node.log().contains(want).then_some(())
    })
    .await;
    let w = node.pod("wrong").unwrap();
    assert_eq!(w["status"]["phase"], "Pending", "{w}");
    assert_eq!(
        w["status"]["containerStatuses"][0]["state"]["waiting"]["reason"], "ContainerCreating",
        "{w}"
    );
    assert!(node.sandboxes("wrong").await.is_empty());

    node.cleanup().await;
    assert!(
        host_mounts(&vol).is_none(),
        "hugetlbfs left mounted at {}",
        vol.display()
    );
}
