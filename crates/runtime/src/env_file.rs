//! The env files of `env[*].valueFrom.fileKeyRef` (upstream `ParseEnv` in
//! `pkg/kubelet/util/env/env_util.go`, feature gate `EnvFiles`).
//!
//! The format is a subset of POSIX shell assignments, parsed as upstream does:
//! * blank lines and lines starting with `#` (after leading blanks) are skipped;
//! * every other line is `NAME='value'`: no blank before `=`; the value is single-quoted and
//!   may span lines (the newlines are kept); after the closing quote only blanks or a `#`
//!   comment may follow;
//! * `NAME= 'value'` (a blank after `=`) sets `NAME` to empty, as a shell does;
//! * the first assignment of the key wins; a line of 64 KiB or more is an error (Go's
//!   `bufio.Scanner` token limit), so is a malformed line met before the key.
//!
//! The file is read line by line, never as a whole. A value that is not UTF-8 is refused
//! here, so the container fails with `CreateContainerConfigError` (`couldn't parse env
//! file`); upstream fails one step later, when its CRI client refuses to marshal the string
//! (`CreateContainerError`).

use std::io::{self, BufRead};

/// `bufio.MaxScanTokenSize`: the longest line `ParseEnv` reads.
pub const MAX_LINE_LEN: usize = 64 * 1024;

/// Why an env file could not be parsed (upstream's `ParseEnv` errors; the kubelet logs them
/// and fails the container with `couldn't parse env file`).
#[derive(Debug, thiserror::Error)]
pub enum ParseEnvError {
    /// A malformed line.
    #[error("invalid environment variable format at line {line}: {reason}")]
    Format {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A quoted value never closed.
    #[error("invalid environment variable format starting at line {0}: unclosed single quote")]
    Unclosed(usize),
    /// The file could not be opened.
    #[error("failed to open environment variable file {path:?}: {source}")]
    Open {
        /// The file.
        path: String,
        /// The open error.
        source: io::Error,
    },
    /// Reading failed, or a line was too long.
    #[error("error reading environment variable file {path:?}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The read error.
        source: io::Error,
    },
    /// The value of the key is not UTF-8.
    #[error("invalid environment variable value at line {0}: not valid UTF-8")]
    NotUtf8(usize),
}

/// Lines of a reader as `bufio.ScanLines` cuts them (`\n` removed, then one trailing `\r`),
/// failing on a line of [`MAX_LINE_LEN`] bytes or more as `bufio.Scanner` does.
struct Lines<R> {
    reader: R,
    number: usize,
}

impl<R: BufRead> Lines<R> {
    fn next_line(&mut self) -> io::Result<Option<Vec<u8>>> {
        let mut buf = Vec::new();
        let limit = u64::try_from(MAX_LINE_LEN + 1).unwrap_or(u64::MAX);
        let n = io::Read::take(&mut self.reader, limit).read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(None);
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        }
        if buf.len() >= MAX_LINE_LEN {
            return Err(io::Error::other("bufio.Scanner: token too long"));
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        self.number += 1;
        Ok(Some(buf))
    }
}

fn trim_left(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|b| *b != b' ' && *b != b'\t');
    start.map_or(&[], |i| &s[i..])
}

fn trim_right(s: &[u8]) -> &[u8] {
    let end = s.iter().rposition(|b| *b != b' ' && *b != b'\t');
    end.map_or(&[], |i| &s[..=i])
}

/// `ParseEnv`: the value of `key` in the env file read from `reader` (`path` only names it
/// in errors); `""` when the key is not there (upstream does not tell an absent key from an
/// empty value).
pub fn parse_env(reader: impl BufRead, path: &str, key: &str) -> Result<String, ParseEnvError> {
    let mut lines = Lines { reader, number: 0 };
    let read_err = |source| ParseEnvError::Read {
        path: path.to_string(),
        source,
    };
    let key = key.as_bytes();
    while let Some(raw) = lines.next_line().map_err(read_err)? {
        let n = lines.number;
        let format = |reason| ParseEnvError::Format { line: n, reason };
        let line = trim_left(&raw);
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        let Some(eq) = line.iter().position(|b| *b == b'=') else {
            return Err(format("missing '='"));
        };
        let name_part = &line[..eq];
        let name = trim_right(name_part);
        if name.is_empty() {
            return Err(format("empty variable name"));
        }
        if name_part.len() != name.len() {
            return Err(format("whitespace before '=' is not allowed"));
        }
        let value_part = &line[eq + 1..];
        let value = trim_left(value_part);
        if value.len() != value_part.len() {
            // `KEY= 'v'` sets KEY to empty in a shell.
            if name == key {
                return Ok(String::new());
            }
            continue;
        }
        let Some(mut rest) = value.strip_prefix(b"'").map(<[u8]>::to_vec) else {
            return Err(format("value must be enclosed in single quotes"));
        };
        let start = n;
        let mut collected = Vec::new();
        loop {
            if let Some(close) = rest.iter().position(|b| *b == b'\'') {
                collected.extend_from_slice(&rest[..close]);
                let after = trim_left(&rest[close + 1..]);
                if !after.is_empty() && !after.starts_with(b"#") {
                    return Err(ParseEnvError::Format {
                        line: lines.number,
                        reason: "unexpected content after closing quote",
                    });
                }
                if name == key {
                    return String::from_utf8(collected).map_err(|_| ParseEnvError::NotUtf8(start));
                }
                break;
            }
            collected.extend_from_slice(&rest);
            collected.push(b'\n');
            // As upstream, a read error here (a line too long) reads as the quote never
            // closing.
            rest = match lines.next_line() {
                Ok(Some(next)) => next,
                _ => return Err(ParseEnvError::Unclosed(start)),
            };
        }
    }
    Ok(String::new())
}

#[cfg(test)]
#[path = "env_file_tests.rs"]
mod tests;
