//! The node log query: parameters and their errors, validation, journalctl's arguments, the
//! file heuristics, and the `/logs/` handler in query mode, over a recording runner.

#![allow(clippy::unwrap_used)]

use std::sync::Mutex;

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use tower::ServiceExt;

use super::*;

/// Records every command; `journalctl --field _SYSTEMD_UNIT` answers `units`, any other
/// command writes `output` and ends with `status`.
struct FakeRunner {
    calls: Mutex<Vec<String>>,
    units: Option<String>,
    output: String,
    status: CommandStatus,
}

impl FakeRunner {
    fn new(units: Option<&str>, output: &str, status: CommandStatus) -> Arc<FakeRunner> {
        Arc::new(FakeRunner {
            calls: Mutex::new(Vec::new()),
            units: units.map(str::to_string),
            output: output.into(),
            status,
        })
    }
    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

impl LogCommandRunner for FakeRunner {
    fn run<'a>(
        &'a self,
        program: &'a str,
        args: &'a [String],
        out: LogSink,
        _deadline: Instant,
    ) -> HostFuture<'a, CommandStatus> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("{program} {}", args.join(" ")));
        Box::pin(async move {
            if args == ["--field", "_SYSTEMD_UNIT"] {
                return match &self.units {
                    Some(u) => {
                        let _ = out.send(u.clone().into_bytes()).await;
                        CommandStatus::Success
                    }
                    None => CommandStatus::NotRun("not found".into()),
                };
            }
            let _ = out.send(self.output.clone().into_bytes()).await;
            self.status.clone()
        })
    }
}

fn parse(q: &str) -> Result<Option<NodeLogQuery>, String> {
    new_node_log_query(Some(q))
}

#[test]
fn parameters_and_their_errors_as_new_node_log_query() {
    assert_eq!(parse(""), Ok(None));
    assert_eq!(parse("other=1"), Ok(None));
    // A raw `;` drops the piece (Go's `ParseQuery`); an encoded one is a character.
    assert_eq!(parse("query=a;b"), Ok(None));
    assert_eq!(parse("query=a%3Bb").unwrap().unwrap().services, ["a;b"]);
    let q = parse("query=kubelet&query=/var/log/x.log&query=%20&sinceTime=2024-01-02T03:04:05Z&tailLines=10&boot=-1&pattern=err")
        .unwrap()
        .unwrap();
    assert_eq!(q.services, ["kubelet"]);
    assert_eq!(q.files, ["/var/log/x.log"]);
    assert_eq!(q.options.tail_lines, Some(10));
    assert_eq!(q.options.boot, Some(-1));
    assert_eq!(q.options.pattern, "err");
    assert_eq!(
        q.options.since_time.unwrap().date_layout(),
        "2024-1-2 03:4:5"
    );
    // Options alone are a query (validation then wants a service).
    assert!(parse("tailLines=5").unwrap().is_some());
    assert_eq!(
        parse("query=%20%20").unwrap_err(),
        r#"query: Invalid value: ["  "]: may not be empty"#
    );
    assert_eq!(
        parse("query=").unwrap_err(),
        r#"query: Invalid value: [""]: may not be empty"#
    );
    assert_eq!(
        parse("sinceTime=yesterday").unwrap_err(),
        r#"sinceTime: Invalid value: "yesterday": invalid time format"#
    );
    assert_eq!(
        parse("query=k&untilTime=2024-01-02").unwrap_err(),
        r#"untilTime: Invalid value: "2024-01-02": invalid time format"#
    );
    assert_eq!(
        parse("query=k&tailLines=x&boot=99999999999999999999").unwrap_err(),
        r#"[boot: Invalid value: "99999999999999999999": strconv.Atoi: parsing "99999999999999999999": value out of range, tailLines: Invalid value: "x": strconv.Atoi: parsing "x": invalid syntax]"#
    );
}

#[test]
fn rfc3339_as_go_parses_and_prints_it() {
    let t = GoTime::parse_rfc3339("2024-12-31T23:05:09.120+01:30").unwrap();
    assert_eq!(t.date_layout(), "2024-12-31 23:5:9");
    assert_eq!(t.json(), "\"2024-12-31T23:05:09.12+01:30\"");
    assert_eq!(t.instant.to_string(), "2024-12-31T21:35:09.12Z");
    for bad in [
        "2024-12-31",
        "2024-12-31 23:05:09Z",
        "2024-13-01T00:00:00Z",
        "2024-02-30T00:00:00Z",
        "2024-12-31T23:05:09",
        "2024-12-31T23:05:09+0100",
        "2024-12-31T23:05:09.Z",
    ] {
        assert_eq!(GoTime::parse_rfc3339(bad), None, "{bad}");
    }
}

fn validate(q: &str, dir: &Path) -> String {
    aggregate(&parse(q).unwrap().unwrap().validate(dir))
}

#[test]
fn validation_as_upstream() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("x.log"), "x").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.join("out.log")).unwrap();
    assert!(
        parse("query=kubelet")
            .unwrap()
            .unwrap()
            .validate(dir)
            .is_empty()
    );
    assert!(
        parse("query=./x.log")
            .unwrap()
            .unwrap()
            .validate(dir)
            .is_empty()
    );
    for (q, want) in [
        (
            "query=a%3Bb",
            r#"query: Invalid value: "a;b": input contains unsupported characters"#,
        ),
        (
            "query=a&query=b&query=c&query=d&query=e",
            "query: Too many: 5: must have at most 4 items",
        ),
        (
            "tailLines=1",
            "query: Required value: cannot be empty with options",
        ),
        (
            "query=a/b.log&query=kubelet",
            r#"query: Invalid value: "[a/b.log], [kubelet]": cannot specify a file and service"#,
        ),
        (
            "query=a/b&query=c/d",
            r#"query: Invalid value: ["a/b","c/d"]: cannot specify more than one file"#,
        ),
        (
            "query=/x.log&tailLines=1",
            r#"query: Invalid value: ["/x.log"]: cannot specify file with options"#,
        ),
        (
            "query=/x.log",
            r#"query: Invalid value: ["/x.log"]: statat /x.log: path escapes from parent"#,
        ),
        (
            "query=./nope.log",
            r#"query: Invalid value: ["./nope.log"]: statat ./nope.log: no such file or directory"#,
        ),
        (
            "query=../etc/passwd",
            r#"query: Invalid value: ["../etc/passwd"]: statat ../etc/passwd: path escapes from parent"#,
        ),
        (
            "query=./out.log",
            r#"query: Invalid value: ["./out.log"]: statat ./out.log: path escapes from parent"#,
        ),
        (
            "query=k&sinceTime=2024-01-02T00:00:00Z&untilTime=2024-01-01T00:00:00%2B01:00",
            r#"untilTime: Invalid value: "2024-01-01T00:00:00+01:00": must be after `sinceTime`"#,
        ),
        (
            "query=k&boot=1",
            "boot: Invalid value: 1: must be less than 1",
        ),
        (
            "query=k&tailLines=100001",
            "tailLines: Invalid value: 100001: must be between 0 and 100000, inclusive",
        ),
        (
            "query=k&tailLines=-1",
            "tailLines: Invalid value: -1: must be between 0 and 100000, inclusive",
        ),
        (
            "query=k&pattern=(a",
            r#"pattern: Invalid value: "(a": error parsing regexp: missing closing ): `(a`"#,
        ),
        (
            "query=k&pattern=a)",
            r#"pattern: Invalid value: "a)": error parsing regexp: unexpected ): `a)`"#,
        ),
        (
            "query=k&pattern=x[a",
            r#"pattern: Invalid value: "x[a": error parsing regexp: missing closing ]: `[a`"#,
        ),
        (
            "query=k&pattern=*a",
            r#"pattern: Invalid value: "*a": error parsing regexp: missing argument to repetition operator: `*`"#,
        ),
        (
            "query=a%3Bb&boot=2",
            r#"[query: Invalid value: "a;b": input contains unsupported characters, boot: Invalid value: 2: must be less than 1]"#,
        ),
    ] {
        assert_eq!(validate(q, dir), want, "{q}");
    }
    let long = "a".repeat(257);
    assert_eq!(
        validate(&format!("query={long}"), dir),
        format!("query: Invalid value: \"{long}\": length must be less than 100")
    );
}

#[test]
fn journalctl_arguments_as_get_logging_cmd() {
    let q = parse("query=kubelet&query=containerd&sinceTime=2024-01-02T03:04:05Z&untilTime=2024-11-12T13:14:15.5-02:00&tailLines=20&pattern=err.*&boot=-2")
        .unwrap()
        .unwrap();
    let (program, args) = logging_cmd(&q, &q.services);
    assert_eq!(program, "journalctl");
    assert_eq!(
        args,
        [
            "--utc",
            "--no-pager",
            "--output=short-precise",
            "--since=2024-1-2 03:4:5",
            "--until=2024-11-12 13:14:15",
            "--pager-end",
            "--lines=20",
            "--unit=kubelet",
            "--unit=containerd",
            "--grep=err.*",
            "--boot",
            "-2",
        ]
    );
    let q = parse("query=kubelet").unwrap().unwrap();
    assert_eq!(
        logging_cmd(&q, &q.services).1,
        [
            "--utc",
            "--no-pager",
            "--output=short-precise",
            "--unit=kubelet"
        ]
    );
}

async fn run_copy(q: &str, runner: Arc<FakeRunner>, dir: &Path) -> String {
    let q = parse(q).unwrap().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    copy(&q, runner, dir, tx).await;
    let mut out = Vec::new();
    while let Some(c) = rx.recv().await {
        out.extend(c);
    }
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn services_in_the_journal_are_read_with_journalctl() {
    let tmp = tempfile::tempdir().unwrap();
    let units = "containerd.service\nkubelet.service\n";
    let r = FakeRunner::new(Some(units), "journal lines\n", CommandStatus::Success);
    let out = run_copy("query=kubelet&tailLines=3", r.clone(), tmp.path()).await;
    assert_eq!(out, "journal lines\n");
    assert_eq!(
        r.calls(),
        [
            "journalctl --field _SYSTEMD_UNIT",
            "journalctl --utc --no-pager --output=short-precise --pager-end --lines=3 --unit=kubelet",
        ]
    );
    // journalctl's own failure is in its output; a journalctl that does not run is said.
    let r = FakeRunner::new(Some(units), "No entries\n", CommandStatus::ExitFailure);
    assert_eq!(
        run_copy("query=kubelet", r, tmp.path()).await,
        "No entries\n"
    );
    let r = FakeRunner::new(Some(units), "", CommandStatus::NotRun("gone".into()));
    assert_eq!(
        run_copy("query=kubelet", r, tmp.path()).await,
        "\nerror: journal output not available\n"
    );
    let r = FakeRunner::new(Some(units), "", CommandStatus::NotRun("gone".into()));
    assert_eq!(run_copy("query=kubelet&boot=-1", r, tmp.path()).await, "");
}

#[tokio::test]
async fn other_services_are_looked_for_as_log_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("log");
    std::fs::create_dir_all(dir.join("nested")).unwrap();
    std::fs::create_dir_all(dir.join("dironly")).unwrap();
    std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
    std::fs::write(dir.join("plain"), "plain file\n").unwrap();
    std::fs::write(dir.join("withext.log"), "with .log\n").unwrap();
    std::fs::write(dir.join("nested/nested.log"), "nested\n").unwrap();
    std::fs::write(tmp.path().join("outside/secret.log"), "SECRET").unwrap();
    std::os::unix::fs::symlink("../outside/secret.log", dir.join("escape.log")).unwrap();
    // No journal at all (journalctl missing or failing): every service is a file.
    for (q, want) in [
        ("query=plain", "plain file\n"),
        ("query=withext", "with .log\n"),
        ("query=nested", "nested\n"),
        ("query=dironly", "\nlog not found for dironly\n"),
        ("query=missing", "\nlog not found for missing\n"),
        (
            "query=escape",
            "\nerror getting log for escape: openat escape.log: path escapes from parent\n",
        ),
        (
            "query=..",
            "\nerror getting log for ..: openat ..: path escapes from parent\n",
        ),
        ("query=plain&query=withext", "plain file\nwith .log\n"),
        (
            "query=plain&tailLines=1",
            "\noptions present and query resolved to log files for [plain]\ntry without specifying options\n",
        ),
    ] {
        let r = FakeRunner::new(None, "", CommandStatus::Success);
        assert_eq!(run_copy(q, r, &dir).await, want, "{q}");
    }
    // A journal that does not list the unit: the file.
    let r = FakeRunner::new(Some("kubelet.service\n"), "", CommandStatus::Success);
    assert_eq!(
        run_copy("query=plain", r.clone(), &dir).await,
        "plain file\n"
    );
    assert_eq!(r.calls(), ["journalctl --field _SYSTEMD_UNIT"]);
}

async fn get(router: &axum::Router, uri: &str, gzip: bool) -> (u16, String, String, Vec<u8>) {
    let mut req = Request::get(uri);
    if gzip {
        req = req.header("accept-encoding", "gzip");
    }
    let resp = router
        .clone()
        .oneshot(req.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let h = |n: &str| {
        resp.headers()
            .get(n)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    };
    let (ct, ce) = (h("content-type"), h("content-encoding"));
    let body = resp
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (status, ct, ce, body)
}

#[tokio::test]
async fn logs_handler_in_query_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    std::fs::write(dir.join("x.log"), "file x\n").unwrap();
    let r = FakeRunner::new(
        Some("kubelet.service\n"),
        "journal\n",
        CommandStatus::Success,
    );
    let router = crate::logs::system_log_handler_with_query(dir.clone(), Some(r.clone()));
    let (s, ct, _, body) = get(&router, "/logs/?query=kubelet", false).await;
    assert_eq!((s, ct.as_str()), (200, "text/plain;charset=UTF-8"));
    assert_eq!(body, b"journal\n");
    let (s, _, ce, body) = get(&router, "/logs/?query=kubelet", true).await;
    assert_eq!((s, ce.as_str()), (200, "gzip"));
    let mut plain = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&body[..]), &mut plain)
        .unwrap();
    assert_eq!(plain, "journal\n");
    // One file through the file server; no query: the file server as before.
    let (s, _, _, body) = get(&router, "/logs/?query=./x.log", false).await;
    assert_eq!((s, body.as_slice()), (200, b"file x\n".as_slice()));
    let (s, _, _, body) = get(&router, "/logs/x.log", false).await;
    assert_eq!((s, body.as_slice()), (200, b"file x\n".as_slice()));
    for (uri, want_status, want_body) in [
        (
            "/logs/?sinceTime=x",
            400,
            "sinceTime: Invalid value: \"x\": invalid time format\n",
        ),
        (
            "/logs/x.log?sinceTime=x",
            400,
            "sinceTime: Invalid value: \"x\": invalid time format\n",
        ),
        (
            "/logs/x.log?query=kubelet",
            406,
            "path not allowed in query mode\n",
        ),
        (
            "/logs/?query=/x.log",
            406,
            "query: Invalid value: [\"/x.log\"]: statat /x.log: path escapes from parent\n",
        ),
        (
            "/logs/?query=kubelet&boot=1",
            406,
            "boot: Invalid value: 1: must be less than 1\n",
        ),
    ] {
        let (s, _, _, body) = get(&router, uri, false).await;
        assert_eq!(
            (s, String::from_utf8(body).unwrap().as_str()),
            (want_status, want_body),
            "{uri}"
        );
    }
    // Without query mode, the parameters mean nothing.
    let plain_router = crate::logs::system_log_handler_with_query(dir, None);
    let (s, _, _, body) = get(&plain_router, "/logs/x.log?query=kubelet", false).await;
    assert_eq!((s, body.as_slice()), (200, b"file x\n".as_slice()));
}

/// The real runner on this machine: journalctl runs (its exit status as it is), a missing
/// program does not, and the deadline kills a command.
#[tokio::test]
async fn the_real_runner_runs_journalctl() {
    let deadline = Instant::now() + std::time::Duration::from_secs(20);
    let run = |program: &'static str, args: Vec<String>, deadline| async move {
        let (tx, mut rx) = tokio::sync::mpsc::channel(16);
        let status = JournalCommands.run(program, &args, tx, deadline).await;
        let mut out = Vec::new();
        while let Some(c) = rx.recv().await {
            out.extend(c);
        }
        (status, String::from_utf8_lossy(&out).into_owned())
    };
    let (status, out) = run("journalctl", vec!["--version".into()], deadline).await;
    assert_eq!(status, CommandStatus::Success, "{out}");
    assert!(out.starts_with("systemd "), "{out}");
    let (status, out) = run(
        "sh",
        ["-c", "echo out; echo err >&2; exit 3"]
            .map(String::from)
            .to_vec(),
        deadline,
    )
    .await;
    assert_eq!(
        (status, out.as_str()),
        (CommandStatus::ExitFailure, "out\nerr\n")
    );
    let (status, _) = run("/nonexistent/journalctl", vec![], deadline).await;
    assert!(matches!(status, CommandStatus::NotRun(_)), "{status:?}");
    let soon = Instant::now() + std::time::Duration::from_millis(200);
    let (status, _) = run("sleep", vec!["30".into()], soon).await;
    assert_eq!(
        status,
        CommandStatus::NotRun("context deadline exceeded".into())
    );
}
