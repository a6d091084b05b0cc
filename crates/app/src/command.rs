//! The command line front (`NewKubeletCommand`): parse, load, and decide what to do —
//! print help, print the version, print the effective config, or run.

use std::process::ExitCode;

use kubelet_config::{Command, ConfigError, KubeletServer, RealFs};

use kubelet_cm::RealHostFs;

use crate::configz;
use crate::startable::check_startable;
use crate::startup::{self, host_info};
use crate::version;

/// The flag kubelet-rs adds beyond upstream.
pub const PRINT_CONFIG_FLAG: &str = "print-config";

/// Removes `--print-config[=bool]` (either word separator) from `args`.
pub fn extract_print_config(args: &[String]) -> Result<(bool, Vec<String>), String> {
    let mut print = false;
    let mut rest = Vec::with_capacity(args.len());
    for a in args {
        let Some(body) = a.strip_prefix("--") else {
            rest.push(a.clone());
            continue;
        };
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        if name.replace('_', "-") != PRINT_CONFIG_FLAG {
            rest.push(a.clone());
            continue;
        }
        print = match value {
            None => true,
            Some(v) => parse_go_bool(v).ok_or_else(|| {
                format!("invalid argument {v:?} for \"--{PRINT_CONFIG_FLAG}\" flag: strconv.ParseBool: parsing {v:?}: invalid syntax")
            })?,
        };
    }
    Ok((print, rest))
}

/// `strconv.ParseBool`.
fn parse_go_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

const PRINT_CONFIG_HELP: &str = "      --print-config                                             Load, merge and validate the configuration exactly as a start would, print the effective KubeletConfiguration as JSON on stdout and exit (kubelet-rs only)\n";

/// Runs the command line: returns the process exit code.
pub fn main_with_args(args: &[String]) -> ExitCode {
    let (print_config, args) = match extract_print_config(args) {
        Ok(v) => v,
        Err(e) => return fail_early(&ConfigError::FlagParse(e).to_string()),
    };
    let host = host_info();
    let cmd = match kubelet_config::load_unvalidated(&args, &RealFs) {
        Ok(c) => c,
        Err(e) => return fail_early(&e.to_string()),
    };
    let server = match cmd {
        Command::Help(text) => {
            stdout(&format!("{text}{PRINT_CONFIG_HELP}"));
            return ExitCode::SUCCESS;
        }
        Command::Version(req, dynamic) => {
            stdout(&format!("{}\n", version::render(&req, dynamic.as_deref())));
            return ExitCode::SUCCESS;
        }
        Command::Run(server) => server,
    };
    if print_config {
        return print_effective_config(&server, host);
    }
    if let Err(e) = startup::init_logging(&server) {
        return fail_early(&e.to_string());
    }
    match startup::run_blocking(*server, host) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(err = %e, "command failed");
            ExitCode::FAILURE
        }
    }
}

/// `--print-config`: run every check a start runs ([`check_startable`]), print its
/// warnings, then print the configz object with `kind`/`apiVersion`.
fn print_effective_config(server: &KubeletServer, host: kubelet_config::HostInfo) -> ExitCode {
    for w in &server.warnings {
        eprintln!("W {w}");
    }
    // The start's own warnings (ignored --node-ip or clusterDNS entries, TLS suites not
    // offered...), in the configured log format.
    if let Ok(format) = server.config.logging.format.parse() {
        let _ = kubelet_klog::init_warnings_only(format);
    }
    let checked = match check_startable(server, host, &RealHostFs) {
        Ok(c) => c,
        Err(e) => return fail_early(&e.to_string()),
    };
    for w in kubelet_config::support::warnings(server) {
        eprintln!("W {w}");
    }
    for w in &checked.warnings {
        w.log();
    }
    let json = configz::effective_config(&server.config, &server.flags).to_versioned_json();
    match serde_json::to_string_pretty(&json) {
        Ok(s) => {
            stdout(&format!("{s}\n"));
            ExitCode::SUCCESS
        }
        Err(e) => fail_early(&e.to_string()),
    }
}

/// Writes to stdout, ignoring a closed pipe (`kubelet-rs --help | head`).
fn stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// An error returned by the command, exit 1. component-base `cli.Run` initialises klog
/// before the kubelet's `RunE` (its default `PersistentPreRun`), so even a flag error is
/// logged as `E… "command failed" err="…"` (`klog.ErrorS`), never printed as `Error: …`.
/// Before `--logging-format` is applied, the log is klog text at V(0), as upstream's is.
fn fail_early(msg: &str) -> ExitCode {
    // Already initialised (the error came after `init_logging`): log through it.
    let _ = kubelet_klog::init(
        kubelet_klog::Format::Text,
        0,
        kubelet_klog::VModule::default(),
    );
    tracing::error!(err = %msg, "command failed");
    ExitCode::FAILURE
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn print_config_forms() {
        assert_eq!(
            extract_print_config(&s(&["--print-config", "--v=2"])).unwrap(),
            (true, s(&["--v=2"]))
        );
        assert_eq!(
            extract_print_config(&s(&["--print_config=false"])).unwrap(),
            (false, vec![])
        );
        assert_eq!(
            extract_print_config(&s(&["--print-config=T", "x"])).unwrap(),
            (true, s(&["x"]))
        );
        assert!(extract_print_config(&s(&["--print-config=maybe"])).is_err());
        assert_eq!(
            extract_print_config(&s(&["--print-configs"])).unwrap(),
            (false, s(&["--print-configs"]))
        );
    }
}
