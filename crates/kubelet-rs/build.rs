// The skip cfgs of the real-runtime tests (`tests/static_pods_real.rs`); see e2e/build.rs.
include!("../../e2e/build.rs");
