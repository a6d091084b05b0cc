//! The fuzz targets of `fuzz/` on stable Rust, without libFuzzer: the seed corpora of
//! `fuzz/corpus/<target>/` and then deterministic mutations of them (byte flips,
//! insertions from a dictionary of traversal, encoding and upgrade tokens, truncations,
//! splices) go through `kubelet_server::fuzzing::{request, query}`, whose invariants panic
//! (no panic anywhere; nothing from outside `/logs/`'s directory served; parsers' results
//! consistent). Bounded by `KRS_FUZZ_STABLE_SECONDS` (default 5) per target and an iteration cap,
//! so it finishes whatever the machine's speed; the coverage-guided run is `hack/fuzz.sh`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::{Duration, Instant};

const DICTIONARY: &[&[u8]] = &[
    b"..",
    b"/",
    b"%2e",
    b"%2E",
    b"%2f",
    b"%2F",
    b"%5c",
    b"%00",
    b"%25",
    b"?",
    b"&",
    b"=",
    b"\n",
    b"/logs/",
    b"/exec/",
    b"/portForward/",
    b"/containerLogs/",
    b"link-out",
    b"dirlink-out/",
    b"sub/up/",
    b"Connection: Upgrade\n",
    b"Upgrade: websocket\n",
    b"Upgrade: SPDY/3.1\n",
    b"Sec-WebSocket-Protocol: v5.channel.k8s.io\n",
    b"port=",
    b"tailLines=",
    b"sinceTime=",
    b"limitBytes=-1",
    b"bytes=",
    b"-",
    b",",
    b"4294967296",
    b"Range: bytes=",
    b"tty=1",
    b"input=1",
];

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>], input: &mut Vec<u8>) {
    for _ in 0..=rng.below(4) {
        let at = rng.below(input.len() + 1);
        match rng.below(5) {
            0 if !input.is_empty() => {
                let i = rng.below(input.len());
                input[i] ^= 1 << rng.below(8);
            }
            1 => {
                let word = DICTIONARY[rng.below(DICTIONARY.len())];
                input.splice(at..at, word.iter().copied());
            }
            2 if !input.is_empty() => {
                let end = (at + rng.below(8)).min(input.len());
                input.drain(at..end);
            }
            3 => {
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len() + 1);
                input.splice(at..at, other[from..].iter().copied());
            }
            _ => input.insert(at, rng.next() as u8),
        }
    }
    input.truncate(8192);
}

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut out: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no seeds in {}", dir.display());
    out
}

fn budget() -> Duration {
    let secs = std::env::var("KRS_FUZZ_STABLE_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    Duration::from_secs(secs)
}

fn run(target: &str, f: fn(&[u8])) -> u64 {
    let seeds = seeds(target);
    for s in &seeds {
        f(s);
    }
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let deadline = Instant::now() + budget();
    let mut runs = 0;
    while Instant::now() < deadline && runs < 200_000 {
        let mut input = seeds[rng.below(seeds.len())].clone();
        mutate(&mut rng, &seeds, &mut input);
        f(&input);
        runs += 1;
    }
    eprintln!("{target}: {} seeds, {runs} mutated inputs", seeds.len());
    runs
}

#[test]
fn server_request_on_stable() {
    run("server_request", kubelet_server::fuzzing::request);
}

#[test]
fn server_query_on_stable() {
    run("server_query", kubelet_server::fuzzing::query);
}

/// CI's libFuzzer run of 2026-12-02 (`hack/fuzz.sh`): a `/run/` request naming a container
/// whose name holds the secret, which the error answer echoes. Not a leak: the request named
/// it; the oracle now tells the two apart.
#[test]
fn a_secret_the_request_names_may_be_echoed() {
    let input: &[u8] =
        b"POST\n/run/default/p/LLLLLLLLLLLLLKRS-FUZZ-SECRET-OUTSIDE-THE-LOG-DIRLLc?cmd[ls%20-l";
    assert!(kubelet_server::fuzzing::names_the_secret(input));
    kubelet_server::fuzzing::request(input);
    // Percent-encoded (twice) still names it; a request without it does not.
    assert!(kubelet_server::fuzzing::names_the_secret(
        b"GET\n/run/default/p/%254BRS-FUZZ-SECRET-OUTSIDE-THE-LOG-DIR"
    ));
    assert!(!kubelet_server::fuzzing::names_the_secret(
        b"GET\n/logs/link-out%zz"
    ));
}

/// The invariant is real: a request for the secret through a symlink would be caught.
#[test]
fn the_secret_is_outside_and_requests_for_it_are_refused() {
    kubelet_server::fuzzing::request(b"GET\n/logs/link-out");
    kubelet_server::fuzzing::request(b"GET\n/logs/dirlink-out/secret");
    let dir = std::env::temp_dir().join(format!("krs-fuzz-{}", std::process::id()));
    assert_eq!(
        std::fs::read_to_string(dir.join("outside/secret")).unwrap(),
        kubelet_server::fuzzing::SECRET
    );
}
