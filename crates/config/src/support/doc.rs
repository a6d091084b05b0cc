//! `docs/support.md`, generated from the table (a test keeps the checked-in file equal).

use std::fmt::Write;

use super::{FIELDS, FLAGS, Support};

const HEADER: &str = "# What kubelet-rs supports, field by field and flag by flag

<!-- Generated from crates/config/src/support/ by
     KRS_UPDATE_SUPPORT_DOC=1 cargo test -p kubelet-config support_doc
     Do not edit by hand. -->

Every `KubeletConfiguration` v1beta1 field and every command-line flag of kubelet-rs,
measured against the upstream kubelet (v1.35) in standalone mode:

- **implemented**: behaves as upstream; the tests named as proof show the effect (the table in
  `crates/config/src/support/` names their files);
- **refused at start**: the values named are refused with an error naming the field;
- **partly**: the values described work; the others are accepted, and a warning at start says
  what upstream would do with them;
- **no effect**: accepted, validated and shown in `/configz`, but ignored; a warning at start
  names the field and says what upstream would do — when it is set, or, where upstream acts on
  the default value too, always;
- **no effect, as upstream standalone**: upstream's standalone kubelet ignores it too (mostly
  API server settings used only with `--kubeconfig`).

";

fn escape(s: &str) -> String {
    s.replace('|', "\\|")
}

fn notes(s: &Support) -> String {
    let text = text(s);
    let proof: Vec<String> = s
        .proof()
        .iter()
        .map(|p| format!("`{}`", p.rsplit("::").next().unwrap_or(p)))
        .collect();
    match (text.is_empty(), proof.is_empty()) {
        (_, true) => text,
        (true, false) => format!("proof: {}", proof.join(", ")),
        (false, false) => format!("{text} (proof: {})", proof.join(", ")),
    }
}

fn text(s: &Support) -> String {
    match s {
        Support::Implemented { note, .. } => escape(note),
        Support::Refused { reason, .. } => escape(reason),
        Support::NoEffect { upstream, .. } => format!("upstream {}", escape(upstream)),
        Support::Partial {
            works, upstream, ..
        } => format!("works: {}; upstream {}", escape(works), escape(upstream)),
        Support::AsUpstream { why } => escape(why),
    }
}

/// The Markdown of `docs/support.md`.
pub fn markdown() -> String {
    let mut out = String::from(HEADER);
    out.push_str("## Configuration fields\n\n| Field | Flag | Support | Notes |\n| --- | --- | --- | --- |\n");
    for f in FIELDS {
        let flag = f.flag.map(|n| format!("`--{n}`")).unwrap_or_default();
        let _ = writeln!(
            out,
            "| `{}` | {flag} | {} | {} |",
            f.field,
            f.support.label(),
            notes(&f.support)
        );
    }
    out.push_str(
        "\n## Command-line-only flags\n\n| Flag | Support | Notes |\n| --- | --- | --- |\n",
    );
    for f in FLAGS {
        let _ = writeln!(
            out,
            "| `--{}` | {} | {} |",
            f.flag,
            f.support.label(),
            notes(&f.support)
        );
    }
    out
}
