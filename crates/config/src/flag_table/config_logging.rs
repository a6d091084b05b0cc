//! `logsapi.AddFlags` for the `logging` section of the configuration.

use super::{FlagDef, flag};
use crate::flags::Parsed;
use crate::flagvalue::Target;

/// `logsapi.AddFlags`.
pub(super) fn logging_flags() -> Vec<FlagDef> {
    vec![
        flag(
            "logging-format",
            t!(Str, config.logging.format),
            "Sets the log format. Permitted formats: \"json\" (gated by LoggingBetaOptions), \"text\".",
        ),
        flag(
            "log-flush-frequency",
            t!(FlushFreq, config.logging.flush_frequency),
            "Maximum number of seconds between log flushes",
        ),
        FlagDef {
            shorthand: Some('v'),
            ..flag(
                "v",
                t!(Level, config.logging.verbosity),
                "number for the log level verbosity",
            )
        },
        flag(
            "vmodule",
            t!(VModule, config.logging.vmodule),
            "comma-separated list of pattern=N settings for file-filtered logging (only works for text log format)",
        ),
        flag(
            "log-json-split-stream",
            t!(Bool, config.logging.options.json.split_stream),
            "[Alpha] In JSON format, write error messages to stderr and info messages to stdout. The default is to write a single stream to stdout. Enable the LoggingAlphaOptions feature gate to use this.",
        ),
        flag(
            "log-json-info-buffer-size",
            t!(Quantity, config.logging.options.json.info_buffer_size),
            "[Alpha] In JSON format with split output streams, the info messages can be buffered for a while to increase performance. The default value of zero bytes disables buffering. The size can be specified as number of bytes (512), multiples of 1000 (1K), multiples of 1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi). Enable the LoggingAlphaOptions feature gate to use this.",
        ),
        flag(
            "log-text-split-stream",
            t!(Bool, config.logging.options.text.split_stream),
            "[Alpha] In text format, write error messages to stderr and info messages to stdout. The default is to write a single stream to stdout. Enable the LoggingAlphaOptions feature gate to use this.",
        ),
        flag(
            "log-text-info-buffer-size",
            t!(Quantity, config.logging.options.text.info_buffer_size),
            "[Alpha] In text format with split output streams, the info messages can be buffered for a while to increase performance. The default value of zero bytes disables buffering. The size can be specified as number of bytes (512), multiples of 1000 (1K), multiples of 1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi). Enable the LoggingAlphaOptions feature gate to use this.",
        ),
    ]
}
