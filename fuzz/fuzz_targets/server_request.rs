//! One request through the kubelet's secure router: routing, the auth filter, every
//! handler, the streaming upgrade handshake (`kubelet_server::fuzzing::request`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kubelet_server::fuzzing::request(data);
});
