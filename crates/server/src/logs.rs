//! `/logs/`: the node's log directory (`nodeLogDir`, `/var/log/`), as upstream's
//! `InstallSystemLogHandler` with `enableSystemLogHandler` serves it: `kl.logServer` is
//! `http.StripPrefix("/logs/", http.FileServer(http.Dir("/var/log/")))`
//! (`pkg/kubelet/kubelet.go` `Run`, `pkg/kubelet/server/server.go` `getLogs`).
//!
//! Like Go's `http.FileServer`:
//! * `GET /logs/` and `GET /logs/<dir>/` list the directory (`<pre>` with one `<a href>`
//!   per entry, sorted, directories with a trailing `/`; an `index.html` inside is served
//!   instead); a directory without the trailing slash is redirected (301) to it, a file with
//!   one back without it; a path ending in `/index.html` is redirected to `./`;
//! * files are served with `Last-Modified`, `Accept-Ranges: bytes`, a single `Range`
//!   (206 / 416), and the content type from the extension or sniffed (text or
//!   `application/octet-stream`);
//! * missing: 404 `404 page not found`; permission denied: 403 `403 Forbidden`; other
//!   errors: 500 `500 Internal Server Error`.
//!
//! Never outside the directory: the path is percent-decoded and cleaned lexically (as
//! `http.Dir` does with `path.Clean("/"+name)`), then resolved (symlinks followed) and
//! refused (404) unless it stays inside the directory; after opening, the opened file's
//! real path (`/proc/self/fd/<n>`) is checked again, so a symlink swapped in between the
//! check and the open is refused too. Upstream's `http.Dir` follows symlinks out of
//! `/var/log/`; kubelet-rs does not (a stricter answer, documented in `docs/kubelet-api.md`).
//!
//! With `enableSystemLogQuery` and the `NodeLogQuery` gate, a request with query parameters
//! is the node log query first, as upstream's `logServer` (`crate::journal`): parameter
//! errors 400, a path other than `/logs/` 406 `path not allowed in query mode`, validation
//! errors 406, services answered by journalctl or their log files, one file by the file
//! server below; without parameters, the file server.
//! Multi-range requests (`Range: bytes=0-1,5-6`) get the whole file (200), where Go answers
//! `multipart/byteranges`.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use crate::journal::LogCommandRunner;
use crate::methods::get_only;
use crate::respond::text;

/// Upstream's `nodeLogDir`.
pub const NODE_LOG_DIR: &str = "/var/log/";

/// Longest path (bytes, after decoding) looked at; longer ones are 404 without touching
/// the filesystem (Linux `PATH_MAX`).
const MAX_PATH: usize = 4096;

#[derive(Clone)]
struct LogDir {
    dir: Arc<PathBuf>,
    /// The node log query's commands (`enableSystemLogQuery` with `NodeLogQuery`); `None`:
    /// the plain file server.
    query: Option<Arc<dyn LogCommandRunner>>,
}

/// The `/logs/` routes (GET only, as go-restful's `ws.GET`), serving `dir`.
#[cfg(test)]
pub(crate) fn system_log_handler(dir: PathBuf) -> Router {
    system_log_handler_with_query(dir, None)
}

/// The `/logs/` routes, serving `dir`, and with `query` the node log query (`kl.logServer`
/// in `NodeLogQuery` mode).
pub(crate) fn system_log_handler_with_query(
    dir: PathBuf,
    query: Option<Arc<dyn LogCommandRunner>>,
) -> Router {
    Router::new()
        .route("/logs/", get(serve_logs))
        .route("/logs/{*logpath}", get(serve_logs))
        .route_layer(axum::middleware::from_fn(get_only))
        .with_state(LogDir {
            dir: Arc::new(dir),
            query,
        })
}

async fn serve_logs(State(state): State<LogDir>, req: Request) -> Response {
    let dir = state.dir;
    let raw = req.uri().path().to_string();
    let Some(rest) = raw.strip_prefix("/logs/") else {
        return not_found();
    };
    if let Some(runner) = state.query {
        match crate::journal::new_node_log_query(req.uri().query()) {
            Err(e) => return text(StatusCode::BAD_REQUEST, format!("{e}\n")),
            Ok(Some(nlq)) => {
                if !rest.is_empty() {
                    return text(
                        StatusCode::NOT_ACCEPTABLE,
                        "path not allowed in query mode\n",
                    );
                }
                let errs = nlq.validate(&dir);
                if !errs.is_empty() {
                    let msg = crate::journal::aggregate(&errs);
                    return text(StatusCode::NOT_ACCEPTABLE, format!("{msg}\n"));
                }
                if !nlq.services.is_empty() {
                    return journal_response(nlq, runner, dir, req.headers());
                }
                if let [file] = nlq.files.as_slice() {
                    // `req.URL.Path = filepath.ToSlash(file)` (a no-op on Linux; validation
                    // refused absolute paths) for the file server.
                    return serve_path(&dir, &format!("/{file}"), file, req.headers()).await;
                }
            }
            Ok(None) => {}
        }
    }
    let decoded = match percent_decode(rest) {
        Some(d) => d,
        None => return not_found(),
    };
    serve_path(&dir, &format!("/{rest}"), &decoded, req.headers()).await
}

/// `journalServer.ServeHTTP`: `text/plain;charset=UTF-8`, gzip when `Accept-Encoding` is
/// exactly `gzip`, the query's output streamed as it comes.
fn journal_response(
    nlq: crate::journal::NodeLogQuery,
    runner: Arc<dyn LogCommandRunner>,
    dir: Arc<PathBuf>,
    headers: &HeaderMap,
) -> Response {
    let gzip = headers
        .get(header::ACCEPT_ENCODING)
        .is_some_and(|v| v.as_bytes() == b"gzip");
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(16);
    tokio::spawn(async move {
        crate::journal::copy(&nlq, runner, &dir, tx).await;
    });
    let chunks = tokio_stream_from(rx);
    let body = if gzip {
        Body::from_stream(crate::journal::gzip_stream(chunks))
    } else {
        Body::from_stream(chunks)
    };
    let mut resp = (StatusCode::OK, body).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain;charset=UTF-8"),
    );
    if gzip {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    resp
}

/// The receiver as a body stream.
fn tokio_stream_from(
    rx: tokio::sync::mpsc::Receiver<Vec<u8>>,
) -> impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> + Send + 'static {
    futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (Ok(chunk), rx))
    })
}

/// Percent-decodes a URL path (Go's `url.PathUnescape`); `None` for invalid escapes, NUL
/// bytes, or bytes that are not UTF-8 (Go would fail to open those names too).
pub fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    if out.contains(&0) {
        return None;
    }
    String::from_utf8(out).ok()
}

/// `path.Clean("/" + name)` split into its components: `.` dropped, `..` pops (never above
/// the root), empty components dropped.
pub fn clean_components(name: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = Vec::new();
    for c in name.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    parts
}

/// Where `name` (decoded, relative to `/logs/`) lies inside `root`, symlinks resolved;
/// `Err` is the response (404 for anything outside or missing).
pub fn resolve_inside(root: &Path, name: &str) -> Result<PathBuf, ResolveError> {
    if name.len() > MAX_PATH {
        return Err(ResolveError::NotFound);
    }
    let root = std::fs::canonicalize(root).map_err(ResolveError::from_io)?;
    let mut joined = root.clone();
    for c in clean_components(name) {
        joined.push(c);
    }
    // `push` of a cleaned component can only add a normal component.
    if joined
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
    {
        return Err(ResolveError::NotFound);
    }
    let real = std::fs::canonicalize(&joined).map_err(ResolveError::from_io)?;
    if !real.starts_with(&root) {
        tracing::info!(path = %joined.display(), target = %real.display(), "Refusing a /logs/ path that leads outside the node log directory");
        return Err(ResolveError::NotFound);
    }
    Ok(real)
}

/// Why a `/logs/` path is not served (`toHTTPError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolveError {
    /// Missing, or outside the directory: 404.
    NotFound,
    /// Permission denied: 403.
    Forbidden,
    /// Anything else: 500.
    Internal,
}

impl ResolveError {
    fn from_io(e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => {
                ResolveError::NotFound
            }
            std::io::ErrorKind::PermissionDenied => ResolveError::Forbidden,
            // ENAMETOOLONG, ELOOP and the like: nothing to serve.
            _ if e.raw_os_error() == Some(36) || e.raw_os_error() == Some(40) => {
                ResolveError::NotFound
            }
            _ => ResolveError::Internal,
        }
    }

    fn response(self) -> Response {
        match self {
            ResolveError::NotFound => not_found(),
            ResolveError::Forbidden => text(StatusCode::FORBIDDEN, "403 Forbidden\n"),
            ResolveError::Internal => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "500 Internal Server Error\n",
            ),
        }
    }
}

fn not_found() -> Response {
    text(StatusCode::NOT_FOUND, "404 page not found\n")
}

/// `localRedirect`: a 301 with a relative `Location`.
fn redirect(to: &str) -> Response {
    let mut resp = StatusCode::MOVED_PERMANENTLY.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

/// `serveFile(w, r, fs, path.Clean(upath), true)`: `url` is the request path after
/// `/logs` (with its leading `/`, still escaped), `name` the decoded one without it.
async fn serve_path(root: &Path, url: &str, name: &str, headers: &HeaderMap) -> Response {
    if url.ends_with("/index.html") {
        return redirect("./");
    }
    let real = match resolve_inside(root, name) {
        Ok(p) => p,
        Err(e) => return e.response(),
    };
    let file = match tokio::fs::File::open(&real).await {
        Ok(f) => f,
        Err(e) => return ResolveError::from_io(e).response(),
    };
    // The file opened is the one checked (no symlink swapped in meanwhile).
    if !opened_is(&file, &real) {
        return not_found();
    }
    let meta = match file.metadata().await {
        Ok(m) => m,
        Err(e) => return ResolveError::from_io(e).response(),
    };
    let base = url.rsplit('/').next().unwrap_or_default();
    if meta.is_dir() {
        if !url.ends_with('/') {
            return redirect(&format!("{base}/"));
        }
        let index = real.join("index.html");
        if let Ok(index_real) = resolve_inside(root, &format!("{name}/index.html"))
            && index_real == index
            && index_real.is_file()
        {
            return serve_file(&index_real, headers).await;
        }
        return dir_list(&real).await;
    }
    if url.ends_with('/') {
        return redirect(&format!(
            "../{}",
            url.trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or_default()
        ));
    }
    serve_file_open(file, meta, &real, headers).await
}

/// Whether `file`'s real path is `want` (`/proc/self/fd`); without `/proc`, trusts the check.
fn opened_is(file: &tokio::fs::File, want: &Path) -> bool {
    use std::os::fd::AsRawFd;
    match std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
        Ok(p) => p == want,
        Err(_) => true,
    }
}

async fn serve_file(path: &Path, headers: &HeaderMap) -> Response {
    let file = match tokio::fs::File::open(path).await {
        Ok(f) => f,
        Err(e) => return ResolveError::from_io(e).response(),
    };
    let meta = match file.metadata().await {
        Ok(m) => m,
        Err(e) => return ResolveError::from_io(e).response(),
    };
    serve_file_open(file, meta, path, headers).await
}

/// `http.TimeFormat`.
fn http_date(t: SystemTime) -> Option<String> {
    let ts = jiff::Timestamp::try_from(t).ok()?;
    Some(ts.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string())
}

/// A single `bytes=a-b` / `bytes=a-` / `bytes=-n` range of a `size`-byte file:
/// `Ok(None)` serves everything, `Err(())` is 416.
#[allow(clippy::result_unit_err)]
pub fn parse_range(header: &str, size: u64) -> Result<Option<(u64, u64)>, ()> {
    let Some(spec) = header.strip_prefix("bytes=") else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None);
    }
    let (a, b) = spec.split_once('-').ok_or(())?;
    let (a, b) = (a.trim(), b.trim());
    let (start, end) = if a.is_empty() {
        let n: u64 = b.parse().map_err(|_| ())?;
        if n == 0 {
            return Err(());
        }
        (size.saturating_sub(n), size.checked_sub(1).ok_or(())?)
    } else {
        let start: u64 = a.parse().map_err(|_| ())?;
        if start >= size {
            return Err(());
        }
        let end = if b.is_empty() {
            size - 1
        } else {
            let e: u64 = b.parse().map_err(|_| ())?;
            if e < start {
                return Err(());
            }
            e.min(size - 1)
        };
        (start, end)
    };
    Ok(Some((start, end)))
}

/// The content type: from the extension, else sniffed from the first 512 bytes as Go's
/// `DetectContentType` does for text versus binary.
pub fn content_type(path: &Path, head: &[u8]) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html" | "htm") => return "text/html; charset=utf-8",
        Some("json") => return "application/json",
        Some("gz") => return "application/gzip",
        Some("xml") => return "text/xml; charset=utf-8",
        Some("txt") => return "text/plain; charset=utf-8",
        _ => {}
    }
    let binary = head.iter().any(|&b| {
        b <= 0x08 || b == 0x0B || (0x0E..=0x1A).contains(&b) || (0x1C..=0x1F).contains(&b)
    });
    if binary {
        "application/octet-stream"
    } else {
        "text/plain; charset=utf-8"
    }
}

async fn serve_file_open(
    mut file: tokio::fs::File,
    meta: std::fs::Metadata,
    path: &Path,
    headers: &HeaderMap,
) -> Response {
    let size = meta.len();
    let mut head = vec![0u8; 512.min(size as usize)];
    if let Err(e) = file.read_exact(&mut head).await {
        return ResolveError::from_io(e).response();
    }
    let ctype = content_type(path, &head);
    let range = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .map(|r| parse_range(r, size))
        .unwrap_or(Ok(None));
    let (status, start, len) = match range {
        Err(()) => {
            let mut resp = text(
                StatusCode::RANGE_NOT_SATISFIABLE,
                "invalid range: failed to overlap\n",
            );
            if let Ok(v) = HeaderValue::from_str(&format!("bytes */{size}")) {
                resp.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            return resp;
        }
        Ok(None) => (StatusCode::OK, 0, size),
        Ok(Some((s, e))) => (StatusCode::PARTIAL_CONTENT, s, e - s + 1),
    };
    if let Err(e) = file.seek(std::io::SeekFrom::Start(start)).await {
        return ResolveError::from_io(e).response();
    }
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(file.take(len)));
    let mut resp = (status, body).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    if status == StatusCode::PARTIAL_CONTENT
        && let Ok(v) = HeaderValue::from_str(&format!("bytes {start}-{}/{size}", start + len - 1))
    {
        h.insert(header::CONTENT_RANGE, v);
    }
    if let Some(v) = meta
        .modified()
        .ok()
        .and_then(http_date)
        .and_then(|d| HeaderValue::from_str(&d).ok())
    {
        h.insert(header::LAST_MODIFIED, v);
    }
    resp
}

/// `htmlReplacer`.
fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&#34;")
        .replace('\'', "&#39;")
}

/// `url.URL{Path: name}.String()` for a relative name (a `:` in the first segment gets `./`).
fn url_escape(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'_'
                    | b'.'
                    | b'~'
                    | b'/'
                    | b'$'
                    | b'&'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b'@'
                    | b':'
            );
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out
        .split('/')
        .next()
        .is_some_and(|first| first.contains(':'))
    {
        out.insert_str(0, "./");
    }
    out
}

/// `dirList`.
async fn dir_list(dir: &Path) -> Response {
    let mut rd = match tokio::fs::read_dir(dir).await {
        Ok(rd) => rd,
        Err(_) => {
            return text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Error reading directory\n",
            );
        }
    };
    let mut names = Vec::new();
    loop {
        match rd.next_entry().await {
            Ok(Some(e)) => {
                let mut name = e.file_name().to_string_lossy().into_owned();
                if e.file_type().await.is_ok_and(|t| t.is_dir()) {
                    name.push('/');
                }
                names.push(name);
            }
            Ok(None) => break,
            Err(_) => {
                return text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Error reading directory\n",
                );
            }
        }
    }
    names.sort();
    let mut body = String::from(
        "<!doctype html>\n<meta name=\"viewport\" content=\"width=device-width\">\n<pre>\n",
    );
    for n in &names {
        body.push_str(&format!(
            "<a href=\"{}\">{}</a>\n",
            url_escape(n),
            html_escape(n)
        ));
    }
    body.push_str("</pre>\n");
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    resp
}

#[cfg(test)]
#[path = "logs_tests.rs"]
mod tests;
