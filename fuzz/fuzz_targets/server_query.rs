//! The secure port's query, header and path parsers (`kubelet_server::fuzzing::query`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kubelet_server::fuzzing::query(data);
});
