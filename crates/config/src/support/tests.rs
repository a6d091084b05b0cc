#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::tests_enumerate::leaf_paths;
use super::warn::lookup;
use super::{FIELDS, FLAGS, Support, markdown, warnings};
use crate::flag_table::all_flags;
use crate::flagparse::FlagSet;
use crate::flags::{GlobalFlags, KubeletFlags, Parsed};
use crate::flagvalue::Target;
use crate::{Command, FakeFs, KubeletConfiguration, KubeletServer, load_unvalidated};

/// Proofs another branch provides (test name, branch). The meta-test accepts them while
/// they are missing and fails once they exist, so the table then points at the real file.
const PENDING_PROOFS: &[(&str, &str)] = &[];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn every_config_field_is_classified_and_no_entry_is_stale() {
    let fields: Vec<String> = leaf_paths::<KubeletConfiguration>();
    assert!(fields.len() > 100, "enumeration found only {fields:?}");
    assert!(fields.contains(&"crashLoopBackOff.maxContainerRestartPeriod".to_string()));
    assert!(fields.contains(&"tracing.endpoint".to_string()));
    let table: Vec<&str> = FIELDS.iter().map(|f| f.field).collect();
    let unclassified: Vec<&String> = fields
        .iter()
        .filter(|f| !table.contains(&f.as_str()))
        .collect();
    let stale: Vec<&&str> = table
        .iter()
        .filter(|t| !fields.iter().any(|f| f == *t))
        .collect();
    let mut seen = BTreeSet::new();
    let duplicates: Vec<&&str> = table.iter().filter(|t| !seen.insert(**t)).collect();
    assert!(
        unclassified.is_empty() && stale.is_empty() && duplicates.is_empty(),
        "crates/config/src/support/fields.rs is out of step with KubeletConfiguration:\n  \
         unclassified fields: {unclassified:?}\n  stale entries (no such field): {stale:?}\n  \
         duplicate entries: {duplicates:?}"
    );
}

/// A value each flag type accepts, so parsing `--name=value` shows what the flag sets.
fn samples(t: Target) -> &'static [&'static str] {
    match t {
        Target::Bool(..) | Target::OptBool(..) | Target::Help | Target::Version => {
            &["true", "false"]
        }
        Target::Str(..) | Target::OptStr(..) => &["/sample"],
        Target::Ip(..) => &["10.9.8.7"],
        Target::Int32(..) | Target::OptInt32(..) | Target::Int64(..) | Target::OptInt64(..) => {
            &["7"]
        }
        Target::Level(..) | Target::Quantity(..) => &["7"],
        Target::Dur(..) | Target::OptDur(..) | Target::FlushFreq(..) => &["7s"],
        Target::Strings(..) | Target::OptStrings(..) => &["sample"],
        Target::MapStr(..) | Target::ConfMap(..) => &["cpu=7"],
        Target::LangleMap(..) | Target::LangleMapPlain(..) => &["memory.available<7Mi"],
        Target::MapBool(..) => &["SampleGate=true"],
        Target::ColonMultimap(..) => &["k:v"],
        Target::ReservedMemory(..) => &["0:memory=7Mi"],
        Target::Taints(..) => &["k=v:NoSchedule"],
        Target::VModule(..) => &["sample=3"],
        Target::Cadvisor(_, "") => &["true"],
        Target::Cadvisor(_, "duration") => &["7s"],
        Target::Cadvisor(_, "int") => &["7"],
        Target::Cadvisor(..) => &["sample"],
    }
}

/// The config leaves a flag changes when given each sample value.
fn fields_set_by(name: &str, t: Target, leaves: &[String]) -> BTreeSet<String> {
    let set = FlagSet::new();
    let baseline = Parsed {
        flags: KubeletFlags::default(),
        config: crate::new_kubelet_configuration(),
        global: GlobalFlags::default(),
    };
    let before = serde_json::to_value(&baseline.config).unwrap();
    let mut changed = BTreeSet::new();
    for value in samples(t) {
        let mut p = baseline.clone();
        set.parse(&[format!("--{name}={value}")], &mut p)
            .unwrap_or_else(|e| panic!("--{name}={value}: {e}"));
        let after = serde_json::to_value(&p.config).unwrap();
        for leaf in leaves {
            if lookup(&before, leaf) != lookup(&after, leaf) {
                changed.insert(leaf.clone());
            }
        }
    }
    changed
}

#[test]
fn every_flag_is_classified_and_config_flags_set_their_field() {
    let leaves = leaf_paths::<KubeletConfiguration>();
    let defs = all_flags();
    let mut problems = Vec::new();
    for def in &defs {
        let own = FLAGS.iter().filter(|f| f.flag == def.name).count();
        let by_field: Vec<&str> = FIELDS
            .iter()
            .filter(|f| f.flag == Some(def.name))
            .map(|f| f.field)
            .collect();
        let changed = fields_set_by(def.name, def.target, &leaves);
        match (own, by_field.as_slice()) {
            (0, []) => problems.push(format!("--{} is not classified", def.name)),
            (1, []) if changed.is_empty() => {}
            (1, []) => problems.push(format!(
                "--{} sets {changed:?}: classify it with that field in fields.rs, not in flags.rs",
                def.name
            )),
            (0, [field]) if changed.len() == 1 && changed.contains(*field) => {}
            (0, [field]) => problems.push(format!(
                "--{} is listed for {field} but sets {changed:?}",
                def.name
            )),
            _ => problems.push(format!(
                "--{} is classified more than once ({own} flag entries, fields {by_field:?})",
                def.name
            )),
        }
    }
    let names: Vec<&str> = defs.iter().map(|d| d.name).collect();
    for stale in FLAGS
        .iter()
        .map(|f| f.flag)
        .chain(FIELDS.iter().filter_map(|f| f.flag))
        .filter(|n| !names.contains(n))
    {
        problems.push(format!("--{stale} is in the support table but not a flag"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Whether `file` has a `#[test]`/`#[tokio::test]` function named `name`.
fn has_test_fn(file: &str, name: &str) -> bool {
    let lines: Vec<&str> = file.lines().collect();
    lines.iter().enumerate().any(|(i, l)| {
        let l = l.trim_start();
        (l.starts_with(&format!("fn {name}(")) || l.starts_with(&format!("async fn {name}(")))
            && lines[i.saturating_sub(4)..i]
                .iter()
                .any(|p| p.trim_start().starts_with("#[test]") || p.contains("#[tokio::test"))
    })
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if !p.ends_with("target") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_proof_names_an_existing_test() {
    let root = workspace_root();
    let mut all = Vec::new();
    rust_files(&root.join("crates"), &mut all);
    let entries = FIELDS
        .iter()
        .map(|f| (f.field.to_string(), f.support))
        .chain(FLAGS.iter().map(|f| (format!("--{}", f.flag), f.support)));
    let mut problems = Vec::new();
    for (name, support) in entries {
        let needs_proof = matches!(
            support,
            Support::Implemented { .. } | Support::Refused { .. } | Support::Partial { .. }
        );
        if needs_proof && support.proof().is_empty() {
            problems.push(format!("{name}: no proof named"));
        }
        for proof in support.proof() {
            let Some((file, test)) = proof.split_once("::") else {
                problems.push(format!("{name}: proof {proof:?} is not path::test_fn"));
                continue;
            };
            let text = std::fs::read_to_string(root.join(file)).unwrap_or_default();
            let found = has_test_fn(&text, test);
            let pending = PENDING_PROOFS.iter().find(|(t, _)| *t == test);
            match (found, pending) {
                (true, None) => {}
                (true, Some(_)) => problems.push(format!(
                    "{name}: {proof} exists now: remove it from PENDING_PROOFS"
                )),
                (false, None) => problems.push(format!(
                    "{name}: proof {proof} does not exist (no #[test] fn {test} in {file})"
                )),
                (false, Some((_, branch))) => {
                    if let Some(elsewhere) = all
                        .iter()
                        .find(|p| std::fs::read_to_string(p).is_ok_and(|t| has_test_fn(&t, test)))
                    {
                        problems.push(format!(
                            "{name}: proof {test} (branch {branch}) is in {}: point the table at it and remove it from PENDING_PROOFS",
                            elsewhere.display()
                        ));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn support_doc_is_up_to_date() {
    let path = workspace_root().join("docs/support.md");
    let want = markdown();
    if std::env::var_os("KRS_UPDATE_SUPPORT_DOC").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/support.md differs from the table in crates/config/src/support/; regenerate it with\n  KRS_UPDATE_SUPPORT_DOC=1 cargo test -p kubelet-config support_doc"
    );
}

fn server(args: &[&str], files: &[(&str, &str)]) -> KubeletServer {
    let fs = files
        .iter()
        .fold(FakeFs::default(), |fs, (p, c)| fs.with_file(p, c));
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    match load_unvalidated(&args, &fs).unwrap() {
        Command::Run(s) => *s,
        _ => panic!("not a run"),
    }
}

const HEADER: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";

fn warned_fields(w: &[String]) -> BTreeMap<String, String> {
    w.iter()
        .map(|l| {
            (
                l.split_whitespace().next().unwrap_or("").to_string(),
                l.clone(),
            )
        })
        .collect()
}

#[test]
fn defaults_upstream_acts_on_are_warned_once_each() {
    let file = format!(
        "{HEADER}authentication:\n  webhook:\n    enabled: false\nauthorization:\n  mode: AlwaysAllow\n"
    );
    let s = server(&["--config=/k.yaml"], &[("/k.yaml", &file)]);
    let w = warnings(&s);
    let by = warned_fields(&w);
    for field in [
        "registryPullQPS",
        "makeIPTablesUtilChains",
        "enableProfilingHandler",
    ] {
        assert!(
            by.contains_key(field),
            "no warning for the default {field}: {w:#?}"
        );
    }
    // The eviction manager acts on the default evictionHard as upstream's does.
    assert!(!by.contains_key("evictionHard"), "{w:#?}");
    assert!(by["registryPullQPS"].contains("also at its default 5"));
    // Defaults that do nothing upstream either, and implemented fields, are not warned.
    for quiet in [
        "imageGCHighThresholdPercent",
        "imageGCLowThresholdPercent",
        "kubeletCgroups",
        "localStorageCapacityIsolation",
        "maxPods",
        "port",
    ] {
        assert!(!by.contains_key(quiet), "{quiet} warned: {w:#?}");
    }
    assert_eq!(w.len(), by.len(), "one warning per field: {w:#?}");
}

#[test]
fn set_fields_and_flags_without_effect_are_warned_by_name() {
    let s = server(
        &[
            "--volume-plugin-dir=/plugins",
            "--image-credential-provider-config=/etc/cp.yaml",
            "--storage-driver-db=x",
            "--max-pods=20",
            "--hairpin-mode=none",
        ],
        &[],
    );
    let w = warnings(&s);
    let by = warned_fields(&w);
    assert!(
        by["volumePluginDir"].starts_with("volumePluginDir (--volume-plugin-dir) is set to \"/plugins\" but has no effect in kubelet-rs; the upstream kubelet loads"),
        "{w:#?}"
    );
    assert!(
        by.contains_key("--image-credential-provider-config"),
        "{w:#?}"
    );
    assert!(by.contains_key("--storage-driver-db"), "{w:#?}");
    // Implemented, and without effect upstream too: no warning.
    assert!(
        !by.contains_key("maxPods") && !by.contains_key("hairpinMode"),
        "{w:#?}"
    );
}

#[test]
fn partly_supported_values_are_warned_only_beyond_the_supported_part() {
    let warned = |args: &[&str]| warned_fields(&warnings(&server(args, &[])));
    // failSwapOn is whole since the containers' swap limits exist: no warning either way.
    assert!(!warned(&["--fail-swap-on=true"]).contains_key("failSwapOn"));
    assert!(!warned(&["--fail-swap-on=false"]).contains_key("failSwapOn"));
    // Node allocatable enforcement is whole: no warning for any enforcement or reservation.
    for args in [
        &[
            "--enforce-node-allocatable=pods,kube-reserved",
            "--kube-reserved-cgroup=/k",
        ][..],
        &["--kube-reserved=pid=100,ephemeral-storage=1Gi"][..],
        &["--system-reserved-cgroup=/s"][..],
    ] {
        let w = warned(args);
        assert!(
            !w.contains_key("enforceNodeAllocatable")
                && !w.contains_key("kubeReserved")
                && !w.contains_key("systemReservedCgroup")
                && !w.contains_key("kubeReservedCgroup"),
            "{args:?}: {w:#?}"
        );
    }
    let in_file = |yaml: &str| {
        let file = format!("{HEADER}{yaml}");
        warned_fields(&warnings(&server(
            &["--config=/k.yaml"],
            &[("/k.yaml", &file)],
        )))
    };
    assert!(in_file("enableProfilingHandler: true\n").contains_key("enableProfilingHandler"));
    assert!(!in_file("enableProfilingHandler: false\n").contains_key("enableProfilingHandler"));
}

#[test]
fn every_no_effect_entry_says_what_upstream_does() {
    for (name, s) in FIELDS
        .iter()
        .map(|f| (f.field, f.support))
        .chain(FLAGS.iter().map(|f| (f.flag, f.support)))
    {
        let text = match s {
            Support::NoEffect { upstream, .. } => upstream,
            Support::Partial {
                upstream, works, ..
            } => {
                assert!(!works.is_empty(), "{name}");
                upstream
            }
            Support::Refused { reason, .. } => reason,
            Support::AsUpstream { why } => why,
            Support::Implemented { .. } => continue,
        };
        assert!(text.len() > 10, "{name}: say what upstream does");
    }
}
