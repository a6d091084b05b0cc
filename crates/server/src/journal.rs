//! The node log query of `/logs/` (`enableSystemLogQuery` with the `NodeLogQuery` gate):
//! `pkg/kubelet/kubelet_server_journal.go` and `kubelet_server_journal_linux.go`.
//!
//! * [`new_node_log_query`] reads `query` (repeated: services, or a file when it contains `/`
//!   or `\`), `sinceTime`, `untilTime` (RFC 3339), `tailLines`, `boot`, `pattern` as
//!   `newNodeLogQuery` does, with its field errors (answered 400);
//! * [`NodeLogQuery::validate`] is upstream's `validate` (answered 406): service names
//!   (`[a-zA-Z\-_.:0-9@]`, at most 256 bytes, at most 4), one file or services, no options
//!   with a file, the file inside the log directory (`os.Root.Stat`), `untilTime` after
//!   `sinceTime`, `boot` ≤ 0, `tailLines` in 0..=100000, `pattern` a Go (Perl-flavoured)
//!   regular expression;
//! * [`copy`] is `nodeLogQuery.Copy`: within 30 seconds, each service found in the journal
//!   (`journalctl --field _SYSTEMD_UNIT` lists `<service>.service`) is read with journalctl
//!   and upstream's argument list ([`logging_cmd`]); the others are looked for as files,
//!   `<dir>/<service>`, `<dir>/<service>.log`, `<dir>/<service>/<service>.log`, never
//!   outside the directory (`os.OpenInRoot`); problems are written into the body, as
//!   upstream does.
//!
//! The commands run through [`LogCommandRunner`] ([`JournalCommands`] runs them for real,
//! stdout and stderr into one pipe like Go's `cmd.Stdout = cmd.Stderr = w`).
//!
//! Where kubelet-rs differs: `pattern` is checked with `regex-syntax` (Go's `regexp/syntax`
//! accepts the same Perl-like syntax; the error names Go's error code and the offending
//! text as Go does for the common mistakes, other errors as `invalid or unsupported Perl
//! syntax`).

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use crate::HostFuture;
use crate::container_logs::LogSink;

/// `maxTailLines`.
const MAX_TAIL_LINES: i64 = 100_000;
/// `maxServiceLength`.
const MAX_SERVICE_LENGTH: usize = 256;
/// `maxServices`.
const MAX_SERVICES: usize = 4;
/// How long one query may run (`Copy`'s deadline).
const COPY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

/// How a command ended (Go's `cmd.Run()` error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandStatus {
    /// Exit status 0.
    Success,
    /// A non-zero exit (`*exec.ExitError`).
    ExitFailure,
    /// It could not start, or the deadline killed it (any other error).
    NotRun(String),
}

/// Runs the node log commands (`exec.CommandContext`): the I/O boundary of the node log
/// query, faked in tests.
pub trait LogCommandRunner: Send + Sync {
    /// Runs `program args` (with the kubelet's environment), stdout and stderr both written
    /// to `out` as they come, killed at `deadline`.
    fn run<'a>(
        &'a self,
        program: &'a str,
        args: &'a [String],
        out: LogSink,
        deadline: Instant,
    ) -> HostFuture<'a, CommandStatus>;
}

/// The real commands (`tokio::process`).
#[derive(Debug, Default, Clone, Copy)]
pub struct JournalCommands;

impl LogCommandRunner for JournalCommands {
    fn run<'a>(
        &'a self,
        program: &'a str,
        args: &'a [String],
        out: LogSink,
        deadline: Instant,
    ) -> HostFuture<'a, CommandStatus> {
        Box::pin(async move {
            match run_command(program, args, out, deadline).await {
                Ok(status) => status,
                Err(e) => CommandStatus::NotRun(e.to_string()),
            }
        })
    }
}

async fn run_command(
    program: &str,
    args: &[String],
    out: LogSink,
    deadline: Instant,
) -> std::io::Result<CommandStatus> {
    // One pipe for both streams, as Go gives the child when Stdout and Stderr are the
    // same writer.
    let (reader, writer) = std::io::pipe()?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .kill_on_drop(true)
        .spawn()?;
    let mut reader = tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into())?;
    let copy = async {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if out.send(buf[..n].to_vec()).await.is_err() {
                        break;
                    }
                }
            }
        }
    };
    let run = async {
        let ((), status) = tokio::join!(copy, child.wait());
        status
    };
    match tokio::time::timeout_at(deadline, run).await {
        Ok(status) => Ok(if status?.success() {
            CommandStatus::Success
        } else {
            CommandStatus::ExitFailure
        }),
        Err(_) => {
            let _ = child.kill().await;
            Ok(CommandStatus::NotRun("context deadline exceeded".into()))
        }
    }
}

/// An RFC 3339 time as Go's `time.Parse(time.RFC3339, …)` reads it: the wall clock in the
/// offset given, and the instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoTime {
    year: i16,
    month: i8,
    day: i8,
    hour: i8,
    minute: i8,
    second: i8,
    nanos: i32,
    offset_seconds: i32,
    instant: jiff::Timestamp,
}

fn digits(s: &[u8]) -> Option<i32> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

impl GoTime {
    /// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±hh:mm)`.
    pub fn parse_rfc3339(s: &str) -> Option<GoTime> {
        let b = s.as_bytes();
        if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' {
            return None;
        }
        if b[13] != b':' || b[16] != b':' {
            return None;
        }
        let year = i16::try_from(digits(&b[0..4])?).ok()?;
        let month = i8::try_from(digits(&b[5..7])?).ok()?;
        let day = i8::try_from(digits(&b[8..10])?).ok()?;
        let hour = i8::try_from(digits(&b[11..13])?).ok()?;
        let minute = i8::try_from(digits(&b[14..16])?).ok()?;
        let second = i8::try_from(digits(&b[17..19])?).ok()?;
        let mut rest = &b[19..];
        let mut nanos = 0i32;
        if let Some(frac) = rest.strip_prefix(b".") {
            let n = frac.iter().take_while(|c| c.is_ascii_digit()).count();
            if n == 0 || n > 9 {
                return None;
            }
            nanos = digits(&frac[..n])? * 10i32.pow(u32::try_from(9 - n).ok()?);
            rest = &frac[n..];
        }
        let offset_seconds = match rest {
            b"Z" => 0,
            [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
                let h = digits(&[*h1, *h2])?;
                let m = digits(&[*m1, *m2])?;
                if h > 23 || m > 59 {
                    return None;
                }
                let secs = h * 3600 + m * 60;
                if *sign == b'-' { -secs } else { secs }
            }
            _ => return None,
        };
        let civil =
            jiff::civil::DateTime::new(year, month, day, hour, minute, second, nanos).ok()?;
        let offset = jiff::tz::Offset::from_seconds(offset_seconds).ok()?;
        let instant = offset.to_timestamp(civil).ok()?;
        Some(GoTime {
            year,
            month,
            day,
            hour,
            minute,
            second,
            nanos,
            offset_seconds,
            instant,
        })
    }

    /// `Format("2006-1-2 15:4:5")` (`dateLayout`): month, day, minute and second unpadded.
    pub fn date_layout(&self) -> String {
        format!(
            "{}-{}-{} {:02}:{}:{}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// `json.Marshal` of the time: RFC 3339 with nanoseconds, trailing zeros dropped.
    pub fn json(&self) -> String {
        let mut frac = String::new();
        if self.nanos != 0 {
            frac = format!(".{:09}", self.nanos)
                .trim_end_matches('0')
                .to_string();
        }
        let zone = if self.offset_seconds == 0 {
            "Z".to_string()
        } else {
            let sign = if self.offset_seconds < 0 { '-' } else { '+' };
            let a = self.offset_seconds.abs();
            format!("{sign}{:02}:{:02}", a / 3600, a % 3600 / 60)
        };
        format!(
            "\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{frac}{zone}\"",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

/// The query's options (`options`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `sinceTime`.
    pub since_time: Option<GoTime>,
    /// `untilTime`.
    pub until_time: Option<GoTime>,
    /// `tailLines`.
    pub tail_lines: Option<i64>,
    /// `boot`.
    pub boot: Option<i64>,
    /// `pattern` (empty: none).
    pub pattern: String,
}

/// A node log query (`nodeLogQuery`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeLogQuery {
    /// Services (journal units, or log files by the heuristics).
    pub services: Vec<String>,
    /// Files (a `query` with `/` or `\`).
    pub files: Vec<String>,
    /// The options.
    pub options: Options,
}

/// Go's `%q` (`strconv.Quote`).
pub fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `json.Marshal` of a `[]string` (Go escapes `<`, `>`, `&` for HTML).
fn go_json_strings(v: &[String]) -> String {
    serde_json::to_string(v)
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// Go's `%v` of a `[]string`.
fn go_list(v: &[String]) -> String {
    format!("[{}]", v.join(" "))
}

/// `field.ErrorList.ToAggregate().Error()`: duplicates dropped, one error as is, more in
/// brackets.
pub fn aggregate(errs: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errs {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [one] => (*one).to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// `strconv.Atoi`'s error.
fn atoi(s: &str) -> Result<i64, String> {
    s.parse::<i64>().map_err(|e| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        format!("strconv.Atoi: parsing {}: {why}", go_quote(s))
    })
}

/// `newNodeLogQuery`: `Ok(None)` when the request has none of the parameters (the plain
/// file server answers); `Err` is the field errors' text (400).
pub fn new_node_log_query(query: Option<&str>) -> Result<Option<NodeLogQuery>, String> {
    // Go's `url.ParseQuery` drops every `&`-separated piece holding a `;`.
    let raw: Vec<&str> = query
        .unwrap_or_default()
        .split('&')
        .filter(|piece| !piece.contains(';'))
        .collect();
    let pairs: Vec<(String, String)> = form_urlencoded::parse(raw.join("&").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let all = |key: &str| -> Vec<String> {
        pairs
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect()
    };
    let first = |key: &str| all(key).into_iter().next().unwrap_or_default();
    let mut errs = Vec::new();
    let mut nlq = NodeLogQuery::default();
    let queries = all("query");
    for q in &queries {
        if q.contains(['/', '\\']) {
            nlq.files.push(q.clone());
        } else if !q.trim().is_empty() {
            nlq.services.push(q.clone());
        }
    }
    if !queries.is_empty() && nlq.files.is_empty() && nlq.services.is_empty() {
        errs.push(format!(
            "query: Invalid value: {}: may not be empty",
            go_json_strings(&queries)
        ));
    }
    for (key, slot) in [
        ("sinceTime", &mut nlq.options.since_time),
        ("untilTime", &mut nlq.options.until_time),
    ] {
        let v = first(key);
        if !v.is_empty() {
            match GoTime::parse_rfc3339(&v) {
                Some(t) => *slot = Some(t),
                None => errs.push(format!(
                    "{key}: Invalid value: {}: invalid time format",
                    go_quote(&v)
                )),
            }
        }
    }
    for (key, slot) in [
        ("boot", &mut nlq.options.boot),
        ("tailLines", &mut nlq.options.tail_lines),
    ] {
        let v = first(key);
        if !v.is_empty() {
            match atoi(&v) {
                Ok(n) => *slot = Some(n),
                Err(e) => errs.push(format!("{key}: Invalid value: {}: {e}", go_quote(&v))),
            }
        }
    }
    nlq.options.pattern = first("pattern");
    if !errs.is_empty() {
        return Err(aggregate(&errs));
    }
    if nlq == NodeLogQuery::default() {
        return Ok(None);
    }
    Ok(Some(nlq))
}

/// `safeServiceName`.
fn safe_service_name(s: &str) -> Result<(), &'static str> {
    if s.len() > MAX_SERVICE_LENGTH {
        return Err("length must be less than 100");
    }
    let safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '@');
    if !s.chars().all(safe) {
        return Err("input contains unsupported characters");
    }
    Ok(())
}

/// Why a path is not opened inside the log directory (`os.Root`).
#[derive(Debug)]
enum RootError {
    /// `errPathEscapes`.
    Escapes,
    Io(std::io::Error),
}

impl RootError {
    fn not_exist(&self) -> bool {
        matches!(self, RootError::Io(e) if e.kind() == std::io::ErrorKind::NotFound)
    }

    /// Go's `PathError` text: `<op> <name>: <error>`.
    fn path_error(&self, op: &str, name: &str) -> String {
        let why = match self {
            RootError::Escapes => "path escapes from parent".to_string(),
            RootError::Io(e) => go_errno_text(e),
        };
        format!("{op} {name}: {why}")
    }
}

/// The errno text Go prints (`syscall.Errno.Error()`), without Rust's " (os error N)".
fn go_errno_text(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_lowercase(),
        None => s,
    }
}

/// `name` inside `root` as `os.Root` resolves it: relative, never above the root (also not
/// through `..` or a symlink), `Err` for anything else.
fn resolve_in_root(root: &Path, name: &str) -> Result<PathBuf, RootError> {
    let root = std::fs::canonicalize(root).map_err(RootError::Io)?;
    let mut joined = root.clone();
    let mut depth = 0usize;
    for c in Path::new(name).components() {
        match c {
            Component::Normal(p) => {
                joined.push(p);
                depth += 1;
            }
            Component::CurDir => {}
            Component::ParentDir => {
                if depth == 0 {
                    return Err(RootError::Escapes);
                }
                joined.pop();
                depth -= 1;
            }
            Component::RootDir | Component::Prefix(_) => return Err(RootError::Escapes),
        }
    }
    let real = std::fs::canonicalize(&joined).map_err(RootError::Io)?;
    if !real.starts_with(&root) {
        return Err(RootError::Escapes);
    }
    Ok(real)
}

/// A Go regular expression (`syntax.Parse(pattern, syntax.Perl)`); `Err` is Go's text.
fn check_pattern(pattern: &str) -> Result<(), String> {
    use regex_syntax::ast::ErrorKind as K;
    let Err(e) = regex_syntax::ast::parse::Parser::new().parse(pattern) else {
        return Ok(());
    };
    let span = e.span();
    let text = |from: usize, to: usize| pattern.get(from..to).unwrap_or(pattern).to_string();
    let (code, expr) = match e.kind() {
        K::GroupUnclosed => ("missing closing )", pattern.to_string()),
        K::GroupUnopened => ("unexpected )", pattern.to_string()),
        K::ClassUnclosed => ("missing closing ]", text(span.start.offset, pattern.len())),
        K::ClassRangeInvalid => (
            "invalid character class range",
            text(span.start.offset, span.end.offset),
        ),
        K::EscapeUnexpectedEof => ("trailing backslash at end of expression", String::new()),
        K::ClassEscapeInvalid
        | K::EscapeUnrecognized
        | K::EscapeHexEmpty
        | K::EscapeHexInvalid
        | K::EscapeHexInvalidDigit
        | K::UnicodeClassInvalid => (
            "invalid escape sequence",
            text(span.start.offset, span.end.offset),
        ),
        K::RepetitionMissing => {
            // The operator itself (`*`, `+`, `?`, `{n,m}`).
            let from = span.start.offset;
            let rest = pattern.get(from..).unwrap_or_default();
            let len = match rest.find('}') {
                Some(i) if rest.starts_with('{') => i + 1,
                _ => rest.chars().next().map_or(0, char::len_utf8),
            };
            (
                "missing argument to repetition operator",
                text(from, from + len),
            )
        }
        K::RepetitionCountInvalid
        | K::RepetitionCountUnclosed
        | K::RepetitionCountDecimalEmpty
        | K::DecimalEmpty
        | K::DecimalInvalid => (
            "invalid repeat count",
            text(span.start.offset, span.end.offset),
        ),
        K::GroupNameDuplicate { .. }
        | K::GroupNameEmpty
        | K::GroupNameInvalid
        | K::GroupNameUnexpectedEof => (
            "invalid named capture",
            text(span.start.offset, span.end.offset),
        ),
        K::NestLimitExceeded(_) => ("expression nests too deeply", pattern.to_string()),
        _ => (
            "invalid or unsupported Perl syntax",
            text(span.start.offset, span.end.offset),
        ),
    };
    Err(format!("error parsing regexp: {code}: `{expr}`"))
}

impl NodeLogQuery {
    /// `validate` over the log directory `log_dir`: the field errors (answered 406).
    pub fn validate(&self, log_dir: &Path) -> Vec<String> {
        let mut errs = Vec::new();
        for s in &self.services {
            if let Err(why) = safe_service_name(s) {
                errs.push(format!("query: Invalid value: {}: {why}", go_quote(s)));
            }
        }
        if self.services.len() > MAX_SERVICES {
            errs.push(format!(
                "query: Too many: {}: must have at most {MAX_SERVICES} items",
                self.services.len()
            ));
        }
        let files = go_json_strings(&self.files);
        if self.files.is_empty() && self.services.is_empty() {
            errs.push("query: Required value: cannot be empty with options".into());
        } else if !self.files.is_empty() && !self.services.is_empty() {
            let v = format!("{}, {}", go_list(&self.files), go_list(&self.services));
            errs.push(format!(
                "query: Invalid value: {}: cannot specify a file and service",
                go_quote(&v)
            ));
        } else if self.files.len() > 1 {
            errs.push(format!(
                "query: Invalid value: {files}: cannot specify more than one file"
            ));
        } else if self.files.len() == 1 && self.options != Options::default() {
            errs.push(format!(
                "query: Invalid value: {files}: cannot specify file with options"
            ));
        } else if let [file] = self.files.as_slice() {
            match std::fs::canonicalize(log_dir) {
                Err(e) => errs.push(format!(
                    "query: Invalid value: {files}: open {}: {}",
                    log_dir.display(),
                    go_errno_text(&e)
                )),
                Ok(_) => {
                    if let Err(e) = resolve_in_root(log_dir, file) {
                        errs.push(format!(
                            "query: Invalid value: {files}: {}",
                            e.path_error("statat", file)
                        ));
                    }
                }
            }
        }
        let o = &self.options;
        if let (Some(since), Some(until)) = (&o.since_time, &o.until_time)
            && since.instant > until.instant
        {
            errs.push(format!(
                "untilTime: Invalid value: {}: must be after `sinceTime`",
                until.json()
            ));
        }
        if let Some(boot) = o.boot
            && boot > 0
        {
            errs.push(format!("boot: Invalid value: {boot}: must be less than 1"));
        }
        if let Some(t) = o.tail_lines
            && !(0..=MAX_TAIL_LINES).contains(&t)
        {
            errs.push(format!(
                "tailLines: Invalid value: {t}: must be between 0 and {MAX_TAIL_LINES}, inclusive"
            ));
        }
        if let Err(e) = check_pattern(&o.pattern) {
            errs.push(format!(
                "pattern: Invalid value: {}: {e}",
                go_quote(&o.pattern)
            ));
        }
        errs
    }
}

/// `getLoggingCmd` (Linux): journalctl and its arguments for `services`.
pub fn logging_cmd(n: &NodeLogQuery, services: &[String]) -> (&'static str, Vec<String>) {
    let mut args: Vec<String> = ["--utc", "--no-pager", "--output=short-precise"]
        .map(String::from)
        .to_vec();
    let o = &n.options;
    if let Some(t) = &o.since_time {
        args.push(format!("--since={}", t.date_layout()));
    }
    if let Some(t) = &o.until_time {
        args.push(format!("--until={}", t.date_layout()));
    }
    if let Some(t) = o.tail_lines {
        args.push("--pager-end".into());
        args.push(format!("--lines={t}"));
    }
    for s in services.iter().filter(|s| !s.is_empty()) {
        args.push(format!("--unit={s}"));
    }
    if !o.pattern.is_empty() {
        args.push(format!("--grep={}", o.pattern));
    }
    if let Some(b) = o.boot {
        args.push("--boot".into());
        args.push(b.to_string());
    }
    ("journalctl", args)
}

async fn write(w: &LogSink, s: impl Into<Vec<u8>>) {
    let _ = w.send(s.into()).await;
}

/// `checkForNativeLogger`: whether journald knows `<service>.service`.
async fn check_for_native_logger(
    runner: &dyn LogCommandRunner,
    service: &str,
    deadline: Instant,
) -> bool {
    let args = ["--field", "_SYSTEMD_UNIT"].map(String::from);
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let collect = async {
        let mut out = Vec::new();
        while let Some(chunk) = rx.recv().await {
            out.extend(chunk);
        }
        out
    };
    let run = runner.run("journalctl", &args, tx, deadline);
    let (status, out) = tokio::join!(run, collect);
    status == CommandStatus::Success
        && String::from_utf8_lossy(&out).contains(&format!("{service}.service"))
}

/// `nodeLogQuery.Copy`: the query's output into `w`, within 30 seconds.
pub async fn copy(n: &NodeLogQuery, runner: Arc<dyn LogCommandRunner>, log_dir: &Path, w: LogSink) {
    let deadline = Instant::now() + COPY_DEADLINE;
    let boot = n.options.boot.unwrap_or(0);
    copy_for_boot(n, runner.as_ref(), log_dir, &w, boot, deadline).await;
}

async fn copy_for_boot(
    n: &NodeLogQuery,
    runner: &dyn LogCommandRunner,
    log_dir: &Path,
    w: &LogSink,
    previous_boot: i64,
    deadline: Instant,
) {
    if Instant::now() >= deadline {
        return;
    }
    let mut native = Vec::new();
    let mut file_loggers = Vec::new();
    for s in &n.services {
        if check_for_native_logger(runner, s, deadline).await {
            native.push(s.clone());
        } else {
            file_loggers.push(s.clone());
        }
    }
    if !native.is_empty() {
        let (program, args) = logging_cmd(n, &native);
        if let CommandStatus::NotRun(_) = runner.run(program, &args, w.clone(), deadline).await
            && previous_boot == 0
        {
            write(w, "\nerror: journal output not available\n").await;
        }
    }
    if !file_loggers.is_empty() && n.options != Options::default() {
        write(
            w,
            format!(
                "\noptions present and query resolved to log files for {}\ntry without specifying options\n",
                go_list(&file_loggers)
            ),
        )
        .await;
        return;
    }
    if !file_loggers.is_empty() {
        if Instant::now() >= deadline {
            write(w, "\ncontext error: context deadline exceeded\n").await;
            return;
        }
        for s in &file_loggers {
            heuristics_copy_file_logs(w, log_dir, s, deadline).await;
        }
    }
}

/// `heuristicsCopyFileLogs`: `<service>`, `<service>.log`, `<service>/<service>.log`, the
/// first that exists.
async fn heuristics_copy_file_logs(w: &LogSink, log_dir: &Path, service: &str, deadline: Instant) {
    let names = [
        service.to_string(),
        format!("{service}.log"),
        format!("{service}/{service}.log"),
    ];
    let mut last = None;
    for name in &names {
        match copy_file_log(w, log_dir, name, deadline).await {
            Ok(()) => return,
            Err(e) if e.1.not_exist() => last = Some(e),
            Err(e) => {
                last = Some(e);
                break;
            }
        }
    }
    match last {
        Some((_, e)) if e.not_exist() => {
            write(w, format!("\nlog not found for {service}\n")).await;
        }
        Some((msg, _)) => {
            write(w, format!("\nerror getting log for {service}: {msg}\n")).await;
        }
        None => {}
    }
}

/// `heuristicsCopyFileLog`: the file's content (a directory counts as missing).
async fn copy_file_log(
    w: &LogSink,
    log_dir: &Path,
    name: &str,
    deadline: Instant,
) -> Result<(), (String, RootError)> {
    let fail = |e: RootError| (e.path_error("openat", name), e);
    let real = resolve_in_root(log_dir, name).map_err(fail)?;
    let mut f = tokio::fs::File::open(&real)
        .await
        .map_err(|e| fail(RootError::Io(e)))?;
    let meta = f.metadata().await.map_err(|e| fail(RootError::Io(e)))?;
    if meta.is_dir() {
        return Err(fail(RootError::Io(std::io::ErrorKind::NotFound.into())));
    }
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        if Instant::now() >= deadline {
            let e = RootError::Io(std::io::Error::other("context deadline exceeded"));
            return Err(("context deadline exceeded".into(), e));
        }
        match f.read(&mut buf).await {
            Ok(0) => return Ok(()),
            Ok(n) => write(w, &buf[..n]).await,
            Err(e) => {
                let msg = format!("read {}: {}", real.display(), go_errno_text(&e));
                return Err((msg, RootError::Io(e)));
            }
        }
    }
}

/// gzip (`gzip.BestSpeed`) of a chunk stream, each chunk flushed as it comes.
pub(crate) fn gzip_stream(
    chunks: impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> + Send + 'static,
) -> impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> + Send + 'static {
    use futures::StreamExt;
    use std::io::Write;
    let enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    futures::stream::unfold(
        (Box::pin(chunks), Some(enc)),
        |(mut chunks, enc)| async move {
            let mut enc = enc?;
            match chunks.next().await {
                Some(Ok(chunk)) => {
                    let out = enc
                        .write_all(&chunk)
                        .and_then(|()| enc.flush())
                        .map(|()| std::mem::take(enc.get_mut()));
                    Some((out, (chunks, Some(enc))))
                }
                Some(Err(e)) => Some((Err(e), (chunks, None))),
                None => Some((enc.finish(), (chunks, None))),
            }
        },
    )
}

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;
