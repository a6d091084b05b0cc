//! `NewKubeletCommand`'s loading sequence (`cmd/kubelet/app/server.go`): parse flags onto the
//! legacy-default baseline, set gates, validate flags, load `--config`, merge `--config-dir`,
//! re-apply explicit flags, set gates again, validate the result.

use std::collections::BTreeMap;

use kubelet_features::{FeatureGate, FeatureGateError};

use crate::configfile::load_config_file;
use crate::dropin::merge_kubelet_configurations;
use crate::flagparse::FlagSet;
use crate::flags::{GlobalFlags, KubeletFlags, Parsed, VersionRequest};
use crate::help::help_text;
use crate::types::KubeletConfiguration;
use crate::validation::{
    HostInfo, ValidationErrors, validate_kubelet_configuration, validate_kubelet_flags,
};
use crate::{ConfigFs, new_kubelet_configuration};

/// Why the kubelet refused to start, with upstream's wording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("failed to parse kubelet flag: {0}")]
    FlagParse(String),
    #[error("unknown command {0}")]
    UnknownCommand(String),
    #[error("failed to set feature gates from initial flags-based config: {0}")]
    FeatureGates(FeatureGateError),
    #[error("failed to validate kubelet flags: {0}")]
    InvalidFlags(String),
    #[error("failed to load kubelet config file, path: {path}, error: {message}")]
    ConfigFile { path: String, message: String },
    #[error("failed to merge kubelet configs: {0}")]
    DropIn(String),
    #[error("failed to precedence kubeletConfigFlag: {0}")]
    Precedence(String),
    #[error("failed to validate kubelet configuration, error: {0}")]
    Validation(ValidationErrors),
}

/// Everything the kubelet runs with (`options.KubeletServer` plus the gates and the
/// messages upstream would have logged while loading).
#[derive(Debug, Clone)]
pub struct KubeletServer {
    pub flags: KubeletFlags,
    pub config: KubeletConfiguration,
    pub feature_gates: FeatureGate,
    pub global: GlobalFlags,
    /// Deprecation and lenient-decoding warnings, in the order upstream prints them.
    pub warnings: Vec<String>,
    /// Drop-in files skipped because they do not end in `.conf`.
    pub skipped_dropins: Vec<String>,
}

/// What the command line asks for.
#[derive(Debug, Clone)]
pub enum Command {
    /// `-h/--help`: the text to print on stdout.
    Help(String),
    /// `--version` or `--version=raw`, with the `--version=v…` to report instead of the
    /// default version, if one was given.
    Version(VersionRequest, Option<String>),
    Run(Box<KubeletServer>),
}

/// Parses `args` (without the program name), loads and validates the configuration.
pub fn load(args: &[String], fs: &dyn ConfigFs, host: HostInfo) -> Result<Command, ConfigError> {
    let cmd = load_unvalidated(args, fs)?;
    if let Command::Run(s) = &cmd {
        validate_kubelet_configuration(&s.config, &s.feature_gates, host)
            .map_err(ConfigError::Validation)?;
    }
    Ok(cmd)
}

fn baseline() -> Parsed {
    Parsed {
        flags: KubeletFlags::default(),
        config: new_kubelet_configuration(),
        global: GlobalFlags::default(),
    }
}

/// [`load`] without the final `ValidateKubeletConfiguration`.
pub fn load_unvalidated(args: &[String], fs: &dyn ConfigFs) -> Result<Command, ConfigError> {
    let set = FlagSet::new();
    let mut p = baseline();
    let outcome = set.parse(args, &mut p).map_err(ConfigError::FlagParse)?;
    if let Some(first) = outcome.positional.first() {
        return Err(ConfigError::UnknownCommand(first.clone()));
    }
    if p.global.help {
        return Ok(Command::Help(help_text(&baseline(), &FeatureGate::new())));
    }
    if p.global.version != VersionRequest::NotSet {
        return Ok(Command::Version(
            p.global.version.clone(),
            p.global.dynamic_version.clone(),
        ));
    }
    let mut warnings = outcome.warnings;
    let mut gate = FeatureGate::new();
    warnings.extend(
        gate.set_from_map(&p.config.feature_gates)
            .map_err(ConfigError::FeatureGates)?,
    );
    validate_kubelet_flags(&p.flags).map_err(ConfigError::InvalidFlags)?;

    let Parsed {
        flags,
        mut config,
        global,
    } = p;
    if !flags.kubelet_config_file.is_empty() {
        let (kc, w) =
            load_config_file(fs, &flags.kubelet_config_file, &gate).map_err(|message| {
                ConfigError::ConfigFile {
                    path: flags.kubelet_config_file.clone(),
                    message,
                }
            })?;
        config = kc;
        warnings.extend(w);
    }
    let mut skipped_dropins = Vec::new();
    if !flags.kubelet_dropin_config_directory.is_empty() {
        skipped_dropins = merge_kubelet_configurations(
            fs,
            &mut config,
            &flags.kubelet_dropin_config_directory,
            &gate,
        )
        .map_err(ConfigError::DropIn)?;
    }
    if !flags.kubelet_config_file.is_empty() || !flags.kubelet_dropin_config_directory.is_empty() {
        kubelet_config_flag_precedence(&set, &mut config, args).map_err(ConfigError::Precedence)?;
        warnings.extend(
            gate.set_from_map(&config.feature_gates)
                .map_err(ConfigError::FeatureGates)?,
        );
    }
    Ok(Command::Run(Box::new(KubeletServer {
        flags,
        config,
        feature_gates: gate,
        global,
        warnings,
        skipped_dropins,
    })))
}

/// `kubeletConfigFlagPrecedence`: re-parses the original command line onto `kc`; feature
/// gates from the command line win per gate, gates set only in the config are kept.
fn kubelet_config_flag_precedence(
    set: &FlagSet,
    kc: &mut KubeletConfiguration,
    args: &[String],
) -> Result<(), String> {
    let original: BTreeMap<String, bool> = kc.feature_gates.clone();
    let mut p = Parsed {
        flags: KubeletFlags::default(),
        config: std::mem::take(kc),
        global: GlobalFlags::default(),
    };
    set.parse(args, &mut p)?;
    *kc = p.config;
    for (k, v) in original {
        kc.feature_gates.entry(k).or_insert(v);
    }
    Ok(())
}
