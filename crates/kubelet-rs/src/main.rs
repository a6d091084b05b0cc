//! `kubelet-rs`: the binary. All logic lives in `kubelet-app`.

fn main() -> std::process::ExitCode {
    one_malloc_arena();
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
