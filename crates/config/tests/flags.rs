#![allow(clippy::unwrap_used, clippy::panic, clippy::bool_assert_comparison)]
//! pflag syntax as the kubelet uses it.

use kubelet_config::{
    CONFIG_FLAG_DEPRECATION, Command, FakeFs, FlagSet, KubeletServer, Parsed, load_unvalidated,
    new_kubelet_configuration,
};

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn run(a: &[&str]) -> KubeletServer {
    match load_unvalidated(&args(a), &FakeFs::default()).unwrap() {
        Command::Run(s) => *s,
        other => panic!("unexpected {other:?}"),
    }
}

fn err(a: &[&str]) -> String {
    load_unvalidated(&args(a), &FakeFs::default())
        .unwrap_err()
        .to_string()
}

#[test]
fn equals_and_space_forms() {
    let s = run(&[
        "--port=1234",
        "--read-only-port",
        "0",
        "--hostname-override",
        "node-a",
    ]);
    assert_eq!(s.config.port, 1234);
    assert_eq!(s.config.read_only_port, 0);
    assert_eq!(s.flags.hostname_override, "node-a");
}

#[test]
fn underscore_and_dash_are_equivalent() {
    let s = run(&["--max_pods=12", "--hostname_override=x"]);
    assert_eq!(s.config.max_pods, 12);
    assert_eq!(s.flags.hostname_override, "x");
}

#[test]
fn bools_never_take_the_next_argument() {
    let s = run(&[
        "--fail-swap-on=false",
        "--rotate-certificates",
        "--exit-on-lock-contention=true",
        "--lock-file=/l",
    ]);
    assert_eq!(s.config.fail_swap_on, Some(false));
    assert!(s.config.rotate_certificates);
    assert!(s.flags.exit_on_lock_contention);
    // `--anonymous-auth false`: `false` is a positional argument, not the value.
    assert_eq!(err(&["--anonymous-auth", "false"]), "unknown command false");
}

#[test]
fn bad_values_use_pflag_wording() {
    assert_eq!(
        err(&["--port=abc"]),
        "failed to parse kubelet flag: invalid argument \"abc\" for \"--port\" flag: strconv.ParseInt: parsing \"abc\": invalid syntax"
    );
    assert_eq!(
        err(&["--fail-swap-on=maybe"]),
        "failed to parse kubelet flag: invalid argument \"maybe\" for \"--fail-swap-on\" flag: strconv.ParseBool: parsing \"maybe\": invalid syntax"
    );
    assert_eq!(
        err(&["--sync-frequency=10"]),
        "failed to parse kubelet flag: invalid argument \"10\" for \"--sync-frequency\" flag: time: missing unit in duration \"10\""
    );
    assert_eq!(
        err(&["--address=nope"]),
        "failed to parse kubelet flag: invalid argument \"nope\" for \"--address\" flag: \"nope\" is not a valid IP address"
    );
}

#[test]
fn unknown_flag_and_missing_argument() {
    assert_eq!(
        err(&["--no-such-flag"]),
        "failed to parse kubelet flag: unknown flag: --no-such-flag"
    );
    assert_eq!(
        err(&["-x"]),
        "failed to parse kubelet flag: unknown shorthand flag: 'x' in -x"
    );
    assert_eq!(
        err(&["--port"]),
        "failed to parse kubelet flag: flag needs an argument: --port"
    );
}

/// Runonce mode was removed in 1.31 (kubernetes/kubernetes#126336), but `--runonce` is still
/// registered (`AddKubeletConfigFlags` in cmd/kubelet/app/options/options.go, and the kubelet
/// reference lists it): setting it is refused by ValidateKubeletConfiguration.
#[test]
fn runonce_parses_and_fails_validation() {
    let s = run(&["--runonce"]);
    assert!(s.config.run_once);
    let e = kubelet_config::load(
        &args(&["--runonce"]),
        &FakeFs::default(),
        kubelet_config::HostInfo::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(
            "invalid configuration: runOnce (--runOnce) true, Runonce mode has been deprecated and should not be set"
        ),
        "{e}"
    );
}

#[test]
fn positional_argument_is_unknown_command() {
    assert_eq!(err(&["--port=1", "run"]), "unknown command run");
    assert_eq!(err(&["--", "--port=1"]), "unknown command --port=1");
}

#[test]
fn verbosity_forms() {
    assert_eq!(run(&["-v=4"]).config.logging.verbosity, 4);
    assert_eq!(run(&["-v", "5"]).config.logging.verbosity, 5);
    assert_eq!(run(&["-v6"]).config.logging.verbosity, 6);
    assert_eq!(run(&["--v=7"]).config.logging.verbosity, 7);
    let s = run(&[
        "--vmodule=foo=2,bar*=3",
        "--log-flush-frequency=1s",
        "--logging-format=json",
    ]);
    assert_eq!(s.config.logging.vmodule.len(), 2);
    assert_eq!(s.config.logging.vmodule[1].file_pattern, "bar*");
    assert_eq!(s.config.logging.flush_frequency.duration.to_string(), "1s");
    assert_eq!(s.config.logging.format, "json");
}

#[test]
fn deprecation_warnings_except_logging_and_provider_id() {
    let s = run(&[
        "--max-pods=3",
        "-v=2",
        "--vmodule=a=1",
        "--provider-id=p",
        "--log-flush-frequency=2s",
        "--fail-cgroupv1=false",
    ]);
    assert_eq!(s.config.fail_cgroup_v1, Some(false));
    assert_eq!(
        s.warnings,
        vec![format!(
            "Flag --max-pods has been deprecated, {CONFIG_FLAG_DEPRECATION}"
        )]
    );
    assert!(CONFIG_FLAG_DEPRECATION.starts_with(
        "This parameter should be set via the config file specified by the Kubelet's --config flag."
    ));
    let s = run(&["--minimum-container-ttl-duration=1m"]);
    assert_eq!(
        s.warnings,
        vec![
            "Flag --minimum-container-ttl-duration has been deprecated, Use --eviction-hard or --eviction-soft instead. Will be removed in a future version."
        ]
    );
}

#[test]
fn map_flags() {
    let s = run(&[
        "--eviction-hard=memory.available<100Mi,nodefs.available<5%",
        "--kube-reserved=cpu=200m,memory=1Gi",
        "--kube-reserved=pid=100",
        "--node-labels=a=b,c",
        "--node-labels=d=e",
        "--manifest-url-header=a:1,b:2",
        "--manifest-url-header=a:3",
        "--cpu-manager-policy-options=full-pcpus-only=true",
    ]);
    let hard = s.config.eviction_hard.unwrap();
    assert_eq!(hard["memory.available"], "100Mi");
    assert_eq!(hard["nodefs.available"], "5%");
    assert_eq!(s.config.kube_reserved.len(), 3);
    assert_eq!(s.flags.node_labels["c"], "");
    assert_eq!(s.flags.node_labels["d"], "e");
    assert_eq!(s.config.static_pod_url_header["a"], vec!["1", "3"]);
    assert_eq!(
        s.config.cpu_manager_policy_options["full-pcpus-only"],
        "true"
    );
    assert!(
        err(&["--eviction-hard=memory.available=1"])
            .ends_with("malformed pair, expect string<string")
    );
    assert!(err(&["--kube-reserved=cpu"]).ends_with("malformed pair, expect string=string"));
}

#[test]
fn feature_gates_merge_across_repeats() {
    let s = run(&[
        "--feature-gates=MemoryQoS=true,QOSReserved=true",
        "--feature-gates=QOSReserved=false",
    ]);
    assert_eq!(s.config.feature_gates.len(), 2);
    assert!(s.feature_gates.enabled(kubelet_features::gates::MEMORY_QOS));
    assert!(
        !s.feature_gates
            .enabled(kubelet_features::gates::QOS_RESERVED)
    );
    assert_eq!(
        err(&["--feature-gates=Nope=true"]),
        "failed to set feature gates from initial flags-based config: unrecognized feature gate: Nope"
    );
    assert_eq!(
        err(&["--feature-gates=NodeSwap=false"]),
        "failed to set feature gates from initial flags-based config: cannot set feature gate NodeSwap to false, feature is locked to true"
    );
    assert!(err(&["--feature-gates=MemoryQoS"]).ends_with("malformed pair, expect string=bool"));
}

#[test]
fn list_flags_replace_default_then_append() {
    let s = run(&[
        "--enforce-node-allocatable=pods,system-reserved",
        "--cluster-dns=10.0.0.10",
        "--cluster-dns=10.0.0.11,10.0.0.12",
    ]);
    assert_eq!(
        s.config.enforce_node_allocatable.unwrap(),
        vec!["pods", "system-reserved"]
    );
    assert_eq!(
        s.config.cluster_dns,
        vec!["10.0.0.10", "10.0.0.11", "10.0.0.12"]
    );
    let s = run(&["--tls-cipher-suites=TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384"]);
    assert_eq!(s.config.tls_cipher_suites.len(), 2);
    let s = run(&["--enforce-node-allocatable="]);
    assert_eq!(
        s.config.enforce_node_allocatable.unwrap(),
        Vec::<String>::new()
    );
}

#[test]
fn taints_and_reserved_memory() {
    let s = run(&[
        "--register-with-taints=a=b:NoSchedule,c:NoExecute",
        "--reserved-memory=0:memory=1Gi,hugepages-2Mi=2Gi",
        "--reserved-memory=1:memory=2Gi",
    ]);
    assert_eq!(s.config.register_with_taints.len(), 2);
    assert_eq!(s.config.register_with_taints[0].value, "b");
    assert_eq!(s.config.reserved_memory.len(), 2);
    assert_eq!(
        s.config.reserved_memory[0].limits["hugepages-2Mi"].to_string(),
        "2Gi"
    );
    assert!(
        err(&["--register-with-taints=a=b:Bogus"])
            .ends_with("invalid taint effect: Bogus, unsupported taint effect")
    );
    assert!(
        err(&["--reserved-memory=0:cpu=1"])
            .ends_with("memory type conversion error, unknown type: \"cpu\"")
    );
}

/// `ReservedMemoryVar.Set` and `RegisterWithTaintsVar.Set` (`pkg/util/flag/flags.go`).
#[test]
fn reserved_memory_and_taint_flag_details() {
    let s = run(&["--reserved-memory=0:memory=1024Mi;1:hugepages-1Gi=2Gi"]);
    let got: Vec<String> = s
        .config
        .reserved_memory
        .iter()
        .flat_map(|r| {
            r.limits
                .iter()
                .map(move |(k, q)| format!("{}:{k}={q}", r.numa_node))
        })
        .collect();
    assert_eq!(got, ["0:memory=1Gi", "1:hugepages-1Gi=2Gi"]);
    assert!(
        err(&["--reserved-memory=0:memory=lots"])
            .ends_with("failed to parse the quantatity, expected quantatity, got lots")
    );
    // ParseTaints: `key-` removals are accepted and dropped, an effect is required,
    // and a key/effect pair may appear once.
    let s = run(&["--register-with-taints=a=b:NoSchedule,c:NoExecute-"]);
    assert_eq!(s.config.register_with_taints.len(), 1);
    assert!(err(&["--register-with-taints=a"]).ends_with("invalid taint spec: a"));
    assert!(
        err(&["--register-with-taints=a=b:NoSchedule,a=c:NoSchedule"])
            .ends_with("duplicated taints with the same key and effect: {a c NoSchedule <nil>}")
    );
}

#[test]
fn parse_onto_baseline_keeps_unset_fields() {
    let set = FlagSet::new();
    let mut p = Parsed {
        flags: Default::default(),
        config: new_kubelet_configuration(),
        global: Default::default(),
    };
    let out = set.parse(&args(&["--max-pods=9"]), &mut p).unwrap();
    assert_eq!(out.set_flags, vec!["max-pods"]);
    assert_eq!(p.config.port, 10250);
}
