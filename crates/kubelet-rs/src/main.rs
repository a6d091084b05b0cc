//! `kubelet-rs`: the binary. All logic lives in `kubelet-app`.

fn main() -> std::process::ExitCode {
    one_malloc_arena();
    trim_freed_memory_every_minute();
    kubelet_app::main()
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
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn trim_freed_memory_every_minute() {
    let trimmer = std::thread::Builder::new()
        .name("malloc-trim".into())
        .stack_size(64 * 1024)
        .spawn(|| {
            loop {
                std::thread::sleep(std::time::Duration::from_secs(60));
                // SAFETY: `malloc_trim` has no preconditions; it takes the arena's lock
                // itself, so it is safe to call while other threads allocate.
                let _ = unsafe { libc::malloc_trim(0) };
            }
        });
    // Without the thread the kubelet only keeps more freed memory resident.
    drop(trimmer);
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_freed_memory_every_minute() {}
