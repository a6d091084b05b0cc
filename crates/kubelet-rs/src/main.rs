//! `kubelet-rs`: the binary. All logic lives in `kubelet-app`.

fn main() -> std::process::ExitCode {
    raise_open_files_soft_limit();
    one_malloc_arena();
    trim_freed_memory_every_minute();
    kubelet_app::main()
}

/// The soft `RLIMIT_NOFILE` raised to the hard one, as the Go runtime does for every Go
/// program on Linux before `main` (package `syscall`, Go 1.19 on): the upstream kubelet so
/// runs with the hard limit even where its own `SetNumFiles(maxOpenFiles)` is refused (no
/// `CAP_SYS_RESOURCE`), as it is on these test machines. Under systemd's default (1024 soft,
/// 524288 hard) kubelet-rs would otherwise run with a limit 500 times lower than upstream's.
/// A failure keeps the limit it was given.
#[allow(unsafe_code)]
fn raise_open_files_soft_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `getrlimit` and `setrlimit` read and write only the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// One glibc malloc arena for every thread: each tokio worker otherwise gets its own arena,
/// and each arena keeps megabytes of freed memory mapped (bench/README.md, "Memory and idle
/// CPU"). The kubelet allocates from at most two cores at a time, so one lock is no contention.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn one_malloc_arena() {
    // SAFETY: `mallopt` only sets an allocator tunable; it runs before any other thread
    // exists, and a refusal (return value 0) leaves glibc's default in place.
    let _ = unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) };
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn one_malloc_arena() {}

/// Once a minute, gives the pages of freed heap chunks back to the kernel (`malloc_trim(0)`):
/// glibc returns only the top of the heap by itself, so what informer updates, syncs and
/// scrapes free between live allocations stays resident. About 1 MiB of the 7 MiB heap of an
/// idle cluster node with 30 pods (bench/README.md, "Memory and idle CPU"), for one walk of
/// the free lists per minute on a thread with a small stack.
///
/// The same thread gives back the pages of the binary's own code that start-up ran and the
/// steady state does not ([`page_out_own_code`]): once when the kubelet has run for
/// [`CODE_PAGEOUT_FIRST`], then every [`CODE_PAGEOUT_PERIOD`].
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn trim_freed_memory_every_minute() {
    let trimmer = std::thread::Builder::new()
        .name("malloc-trim".into())
        .stack_size(64 * 1024)
        .spawn(|| {
            let start = std::time::Instant::now();
            let mut next_pageout = CODE_PAGEOUT_FIRST;
            loop {
                std::thread::sleep(std::time::Duration::from_secs(60));
                // SAFETY: `malloc_trim` has no preconditions; it takes the arena's lock
                // itself, so it is safe to call while other threads allocate.
                let _ = unsafe { libc::malloc_trim(0) };
                if start.elapsed() >= next_pageout {
                    page_out_own_code();
                    next_pageout = start.elapsed() + CODE_PAGEOUT_PERIOD;
                }
            }
        });
    // Without the thread the kubelet only keeps more freed memory resident.
    drop(trimmer);
}

/// When the code start-up ran is first given back, at the trimmer's first round: the kubelet
/// has by then started its loops, listed the runtime and, in cluster mode, registered the
/// node and synced its informers (all within a second or two of start on the benchmark's
/// nodes). Until session 11 this was two minutes, which left an idle node at its start-up
/// RSS for its first two minutes for no gain: code a later burst of pod starts runs comes
/// back on use and goes again at the next period.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const CODE_PAGEOUT_FIRST: std::time::Duration = std::time::Duration::from_secs(60);
/// How often the code rare events ran (a pod deletion, a log request) is given back later.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const CODE_PAGEOUT_PERIOD: std::time::Duration = std::time::Duration::from_secs(600);

/// Asks the kernel to reclaim the resident pages of the kubelet binary's read-only mappings
/// (its code and constants), and to read them back one page at a time from then on.
///
/// On this kernel the binary is read into 64–128 KiB page-cache folios and a fault maps the
/// whole folio, so code run once at start (flag parsing, validation, TLS and client set-up,
/// registration) and code merely next to hot code stay resident for the process's life: they
/// make up most of its RSS (bench/README.md, "Memory and idle CPU"). `MADV_RANDOM` turns off
/// read-ahead for faults on these mappings, so what is read back comes in single pages;
/// `MADV_PAGEOUT` then drops the resident pages (clean file pages: nothing is written). The
/// steady state faults back in only the pages it runs. Pages another process also maps are
/// left alone by the kernel; a failure (a kernel without `MADV_PAGEOUT`) only keeps the pages
/// resident.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn page_out_own_code() {
    let Ok(exe) = std::fs::read_link("/proc/self/exe") else {
        return;
    };
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return;
    };
    for (start, end) in read_only_mappings_of(&maps, &exe.to_string_lossy()) {
        let addr = start as *mut libc::c_void;
        // SAFETY: the range is one of this process's own read-only file mappings, as the
        // kernel listed it. Both advices change only how and when the kernel keeps the
        // mapping's pages resident, never their contents: the file is read back on access.
        unsafe {
            let _ = libc::madvise(addr, end - start, libc::MADV_RANDOM);
            let _ = libc::madvise(addr, end - start, libc::MADV_PAGEOUT);
        }
    }
}

/// The address ranges of the `/proc/self/maps` lines that map `path` without write permission.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn read_only_mappings_of(maps: &str, path: &str) -> Vec<(usize, usize)> {
    maps.lines()
        .filter_map(|line| {
            // address perms offset dev inode, then the path, which may contain spaces.
            let mut rest = line;
            let mut fields = [""; 5];
            for field in &mut fields {
                rest = rest.trim_start();
                let end = rest.find(' ').unwrap_or(rest.len());
                *field = &rest[..end];
                rest = &rest[end..];
            }
            let [range, perms, ..] = fields;
            if rest.trim_start() != path || perms.as_bytes().get(1) != Some(&b'-') {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            let start = usize::from_str_radix(start, 16).ok()?;
            let end = usize::from_str_radix(end, 16).ok()?;
            (start < end).then_some((start, end))
        })
        .collect()
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_freed_memory_every_minute() {}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
#[allow(clippy::expect_used)]
mod tests {
    use super::read_only_mappings_of;

    #[test]
    fn only_the_binarys_read_only_mappings_are_paged_out() {
        let maps = "\
5581a0000000-5581a0200000 r--p 00000000 fe:01 1234                       /usr/bin/kubelet rs
5581a0200000-5581a0f00000 r-xp 00200000 fe:01 1234                       /usr/bin/kubelet rs
5581a0f00000-5581a1000000 rw-p 00f00000 fe:01 1234                       /usr/bin/kubelet rs
5581a1000000-5581a1010000 r--p 01000000 fe:01 1234                       /usr/bin/kubelet
5581a2000000-5581a2400000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000100000 r-xp 00000000 fe:01 99                         /usr/lib/x86_64-linux-gnu/libc.so.6
broken line
";
        assert_eq!(
            read_only_mappings_of(maps, "/usr/bin/kubelet rs"),
            vec![
                (0x5581_a000_0000, 0x5581_a020_0000),
                (0x5581_a020_0000, 0x5581_a0f0_0000)
            ]
        );
    }

    #[test]
    fn this_test_binary_has_its_code_mapped() {
        let exe = std::fs::read_link("/proc/self/exe").expect("own executable");
        let maps = std::fs::read_to_string("/proc/self/maps").expect("own maps");
        let ranges = read_only_mappings_of(&maps, &exe.to_string_lossy());
        let code = ranges.iter().map(|(a, b)| b - a).sum::<usize>();
        assert!(
            code > 0,
            "no read-only mapping of {} in\n{maps}",
            exe.display()
        );
        // The call itself must be harmless for the running process.
        super::page_out_own_code();
    }
}
