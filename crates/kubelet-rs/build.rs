// The skip cfgs of the real-runtime tests (`tests/static_pods_real.rs`); see e2e/build.rs.
mod skip {
    include!("../../e2e/build.rs");
}

fn main() {
    skip::main();
    // Relative relocations packed (DT_RELR; glibc >= 2.36, binutils >= 2.38): the PIE
    // binary's 1 MB `.rela.dyn`, which the dynamic loader reads at every start, becomes a few
    // KB (bench/README.md, "Memory and idle CPU").
    println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
}
