//! Command line of `static-pods` (pure; unit-tested).

use std::path::PathBuf;
use std::time::Duration;

/// Usage text.
pub const USAGE: &str = "\
usage: static-pods [options]

Starts N pods on the private containerd of hack/runtime-up.sh three ways and compares:
the raw CRI floor, kubelet-rs with static pods, and (optionally) the upstream kubelet.

  --pods N             batch size; repeat for several (default: --pods 30 --pods 100)
  --repeat R           runs of each variant per N, interleaved; medians reported (default 1)
  --out FILE           also write the results as JSON to FILE
  --kubelet PATH       kubelet-rs binary (default: $CARGO_TARGET_DIR/release/kubelet-rs,
                       else <repo>/target/release/kubelet-rs)
  --upstream PATH      upstream kubelet binary; skipped (with a note) if PATH does not exist
  --workers W          floor parallelism (default: N if N <= 30, else 10; perf-anchors 5.2)
  --timeout SECS       wait for all RUNNING / all stopped (default 60)
  --settle SECS        pause between /healthz ok and writing the manifests (default 1)
  --poll-ms MS         CRI poll interval, 20..=50 (default 25)
  --gone-timeout SECS  after all stopped, wait this long for the sandboxes to be removed (default 15)
  --work-dir DIR       run directories (default /var/lib/kubelet-rs-test/bench)
  --goal RATIO         makespan goal against the floor (default 1.2)
  --skip-floor         do not run the CRI floor
  --skip-kubelet-rs    do not run kubelet-rs
  --keep               keep run directories (config, kubelet log) of successful runs
  --quiet-timeout SECS before each run, wait this long for no other kubelet process and no
                       foreign ready pod on the shared containerd (default 120)
  --allow-foreign-pods run the kubelets even then (they kill pods they do not own!)
  --steady-seconds S   B6/B10: once all pods run, wait --steady-settle, then measure the
                       kubelet's CPU, RSS/PSS and CRI calls by method over S seconds; the
                       kubelets then talk to containerd through the counting proxy
  --steady-settle S    all RUNNING → steady window start (default 30)
";

/// Parsed options.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Batch sizes.
    pub pods: Vec<usize>,
    /// Repeats per variant and N.
    pub repeat: usize,
    /// JSON output file.
    pub out: Option<PathBuf>,
    /// kubelet-rs binary.
    pub kubelet: Option<PathBuf>,
    /// Upstream kubelet binary.
    pub upstream: Option<PathBuf>,
    /// Floor parallelism override.
    pub workers: Option<usize>,
    /// Start-up / teardown timeout.
    pub timeout: Duration,
    /// Pause after healthy.
    pub settle: Duration,
    /// Poll interval.
    pub poll: Duration,
    /// Wait for removal after stop.
    pub gone_timeout: Duration,
    /// Parent of the run directories.
    pub work_dir: PathBuf,
    /// Makespan goal ratio.
    pub goal: f64,
    /// Skip the floor.
    pub skip_floor: bool,
    /// Skip kubelet-rs.
    pub skip_kubelet_rs: bool,
    /// Keep run directories.
    pub keep: bool,
    /// Wait for a free machine before each run.
    pub quiet_timeout: Duration,
    /// Run kubelets even when foreign pods or kubelets are present.
    pub allow_foreign_pods: bool,
    /// Steady-state window after start-up (B6, B10).
    pub steady: Option<crate::steady::SteadyConfig>,
    /// Idle window with no pod before the manifests (B1/B2 standalone, 0 pods).
    pub idle_window: Option<crate::steady::SteadyConfig>,
    /// Manifests in place before the kubelet starts; clocks start at exec (B3).
    pub preplaced: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            pods: Vec::new(),
            repeat: 1,
            out: None,
            kubelet: None,
            upstream: None,
            workers: None,
            timeout: Duration::from_secs(60),
            settle: Duration::from_secs(1),
            poll: Duration::from_millis(25),
            gone_timeout: Duration::from_secs(15),
            work_dir: PathBuf::from("/var/lib/kubelet-rs-test/bench"),
            goal: 1.2,
            skip_floor: false,
            skip_kubelet_rs: false,
            keep: false,
            quiet_timeout: Duration::from_secs(120),
            allow_foreign_pods: false,
            steady: None,
            idle_window: None,
            preplaced: false,
        }
    }
}

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Parsed {
    /// Run with these options.
    Run(Box<Options>),
    /// Print [`USAGE`].
    Help,
}

fn value<'a>(flag: &str, it: &mut impl Iterator<Item = &'a String>) -> Result<&'a str, String> {
    it.next()
        .map(String::as_str)
        .ok_or_else(|| format!("{flag} needs a value"))
}

fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{flag} {v:?}: not a valid number"))
}

fn positive(flag: &str, v: &str) -> Result<usize, String> {
    match number::<usize>(flag, v)? {
        0 => Err(format!("{flag} must be at least 1")),
        n => Ok(n),
    }
}

fn secs(flag: &str, v: &str) -> Result<Duration, String> {
    let s: f64 = number(flag, v)?;
    if !s.is_finite() || s < 0.0 {
        return Err(format!(
            "{flag} {v:?}: must be a non-negative number of seconds"
        ));
    }
    Ok(Duration::from_secs_f64(s))
}

/// Parses the arguments after the program name.
pub fn parse_args(args: &[String]) -> Result<Parsed, String> {
    let mut o = Options::default();
    let mut steady_settle = None;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let f = flag.as_str();
        match f {
            "-h" | "--help" => return Ok(Parsed::Help),
            "--pods" => o.pods.push(positive(f, value(f, &mut it)?)?),
            "--repeat" => o.repeat = positive(f, value(f, &mut it)?)?,
            "--out" => o.out = Some(PathBuf::from(value(f, &mut it)?)),
            "--kubelet" => o.kubelet = Some(PathBuf::from(value(f, &mut it)?)),
            "--upstream" => o.upstream = Some(PathBuf::from(value(f, &mut it)?)),
            "--workers" => o.workers = Some(positive(f, value(f, &mut it)?)?),
            "--timeout" => o.timeout = secs(f, value(f, &mut it)?)?,
            "--settle" => o.settle = secs(f, value(f, &mut it)?)?,
            "--gone-timeout" => o.gone_timeout = secs(f, value(f, &mut it)?)?,
            "--poll-ms" => {
                let ms: u64 = number(f, value(f, &mut it)?)?;
                if !(20..=50).contains(&ms) {
                    return Err(format!("--poll-ms {ms}: must be between 20 and 50"));
                }
                o.poll = Duration::from_millis(ms);
            }
            "--work-dir" => o.work_dir = PathBuf::from(value(f, &mut it)?),
            "--goal" => o.goal = number(f, value(f, &mut it)?)?,
            "--skip-floor" => o.skip_floor = true,
            "--skip-kubelet-rs" => o.skip_kubelet_rs = true,
            "--keep" => o.keep = true,
            "--quiet-timeout" => o.quiet_timeout = secs(f, value(f, &mut it)?)?,
            "--allow-foreign-pods" => o.allow_foreign_pods = true,
            "--steady-seconds" => {
                let w = secs(f, value(f, &mut it)?)?;
                if w.is_zero() {
                    return Err(format!("{f} must be more than 0"));
                }
                o.steady = Some(crate::steady::SteadyConfig::with_window(w));
            }
            "--steady-settle" => steady_settle = Some(secs(f, value(f, &mut it)?)?),
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    if o.pods.is_empty() {
        o.pods = vec![30, 100];
    }
    match (&mut o.steady, steady_settle) {
        (Some(s), Some(settle)) => s.settle = settle,
        (None, Some(_)) => return Err("--steady-settle needs --steady-seconds".into()),
        _ => {}
    }
    Ok(Parsed::Run(Box::new(o)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Options, String> {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        match parse_args(&args)? {
            Parsed::Run(o) => Ok(*o),
            Parsed::Help => panic!("help"),
        }
    }

    #[test]
    fn defaults() {
        let o = run(&[]).unwrap();
        assert_eq!(o.pods, vec![30, 100]);
        assert_eq!(o.repeat, 1);
        assert_eq!(o.poll, Duration::from_millis(25));
        assert!(o.upstream.is_none());
    }

    #[test]
    fn all_flags() {
        let o = run(&[
            "--pods",
            "30",
            "--pods",
            "100",
            "--repeat",
            "3",
            "--out",
            "r.json",
            "--kubelet",
            "/k",
            "--upstream",
            "/u",
            "--workers",
            "5",
            "--timeout",
            "90",
            "--settle",
            "0.5",
            "--poll-ms",
            "20",
            "--gone-timeout",
            "0",
            "--work-dir",
            "/w",
            "--goal",
            "1.5",
            "--skip-floor",
            "--skip-kubelet-rs",
            "--keep",
            "--quiet-timeout",
            "7",
            "--allow-foreign-pods",
            "--steady-seconds",
            "60",
            "--steady-settle",
            "5",
        ])
        .unwrap();
        assert_eq!(o.pods, vec![30, 100]);
        assert_eq!(o.repeat, 3);
        assert_eq!(o.out, Some(PathBuf::from("r.json")));
        assert_eq!(o.kubelet, Some(PathBuf::from("/k")));
        assert_eq!(o.upstream, Some(PathBuf::from("/u")));
        assert_eq!(o.workers, Some(5));
        assert_eq!(o.timeout, Duration::from_secs(90));
        assert_eq!(o.settle, Duration::from_millis(500));
        assert_eq!(o.poll, Duration::from_millis(20));
        assert_eq!(o.gone_timeout, Duration::ZERO);
        assert_eq!(o.work_dir, PathBuf::from("/w"));
        assert_eq!(o.goal, 1.5);
        assert!(o.skip_floor && o.skip_kubelet_rs && o.keep && o.allow_foreign_pods);
        assert_eq!(o.quiet_timeout, Duration::from_secs(7));
        let steady = o.steady.unwrap();
        assert_eq!(steady.window, Duration::from_secs(60));
        assert_eq!(steady.settle, Duration::from_secs(5));
        assert_eq!(steady.sample_every, Duration::from_secs(5));
        assert!(run(&[]).unwrap().steady.is_none());
        assert_eq!(
            run(&["--steady-settle", "5"]).unwrap_err(),
            "--steady-settle needs --steady-seconds"
        );
        assert_eq!(
            run(&["--steady-seconds", "0"]).unwrap_err(),
            "--steady-seconds must be more than 0"
        );
    }

    #[test]
    fn bad_input_names_the_flag() {
        assert_eq!(run(&["--pods"]).unwrap_err(), "--pods needs a value");
        assert_eq!(
            run(&["--pods", "0"]).unwrap_err(),
            "--pods must be at least 1"
        );
        assert_eq!(
            run(&["--repeat", "x"]).unwrap_err(),
            "--repeat \"x\": not a valid number"
        );
        assert_eq!(
            run(&["--poll-ms", "5"]).unwrap_err(),
            "--poll-ms 5: must be between 20 and 50"
        );
        assert!(
            run(&["--settle", "-1"])
                .unwrap_err()
                .starts_with("--settle")
        );
        assert_eq!(
            run(&["--frobnicate"]).unwrap_err(),
            "unknown argument \"--frobnicate\" (see --help)"
        );
    }

    #[test]
    fn help() {
        assert_eq!(parse_args(&["--help".to_owned()]).unwrap(), Parsed::Help);
    }
}
