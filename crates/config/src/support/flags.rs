//! Every command-line flag that is not a `KubeletConfiguration` field (`KubeletFlags.AddFlags`,
//! `AddGlobalFlags`), with its [`Support`]. Config flags are classified with their field in
//! [`super::FIELDS`].

use super::{FlagSupport, Support, as_upstream, done, done_with_note, ignored};

const CADVISOR_IDS: &str = "passes it to the embedded cAdvisor (deprecated flag, mistakenly registered with the kubelet), which reads the node's machine/boot ID from the first listed file for nodeInfo and `/metrics/cadvisor`'s labels; kubelet-rs reads cAdvisor's default files";
const CADVISOR_LOAD: &str = "passes it to the embedded cAdvisor (deprecated flag, mistakenly registered with the kubelet), which then fills `container_cpu_load_average_10s`; kubelet-rs reports 0 there, as upstream without the flag";
const CADVISOR: &str = "passes it to the embedded cAdvisor (deprecated flag, mistakenly registered with the kubelet); the kubelet's container stats come from CRI";

const fn fl(flag: &'static str, support: Support) -> FlagSupport {
    FlagSupport { flag, support }
}

const GC_PROOF: &[&str] = &[
    "crates/app/src/kubelet/support_proofs.rs::gc_policy_follows_the_deprecated_flags",
    "crates/runtime/src/manager_tests.rs::garbage_collection_keeps_one_dead_container_per_name",
];

/// Every flag that is not a config field, in registration order.
pub static FLAGS: &[FlagSupport] = &[
    fl(
        "image-credential-provider-config",
        ignored(
            "runs the credential provider plugins this file configures to get image pull credentials",
        ),
    ),
    fl(
        "image-credential-provider-bin-dir",
        ignored("looks up the credential provider plugin binaries in this directory"),
    ),
    fl(
        "config",
        done(&[
            "crates/config/tests/load.rs::json_file_is_accepted",
            "crates/kubelet-rs/tests/print_config.rs::config_file_regime_uses_v1beta1_defaults",
        ]),
    ),
    fl(
        "config-dir",
        done(&[
            "crates/config/tests/load.rs::drop_ins_merge_in_lexical_order_with_list_replacement",
        ]),
    ),
    fl(
        "kubeconfig",
        done(&[
            "crates/kubelet-rs/tests/process.rs::a_missing_kubeconfig_stops_the_start_naming_it",
            "e2e/tests/cluster_clients.rs::client_certificate_files_relative_to_the_kubeconfig",
        ]),
    ),
    fl(
        "bootstrap-kubeconfig",
        done(&[
            "crates/certificate/src/bootstrap.rs::bootstrap_requests_a_node_client_certificate_and_writes_the_kubeconfig",
            "crates/certificate/src/bootstrap.rs::an_expired_kubeconfig_certificate_bootstraps_again_with_the_same_key",
            "crates/certificate/src/bootstrap.rs::load_client_config_chooses_like_upstream",
            "e2e/tests/cluster_certificates.rs::tls_bootstrap_from_a_bootstrap_token_then_rotation_without_restart",
        ]),
    ),
    fl(
        "hostname-override",
        done(&[
            "crates/app/src/kubelet/support_proofs.rs::node_name_follows_hostname_override",
            "crates/kubelet-rs/tests/process.rs::secure_server_serves_configz_equal_to_print_config",
        ]),
    ),
    fl(
        "node-ip",
        done(&[
            "crates/app/src/kubelet/support_proofs.rs::runtime_settings_follow_the_configuration",
            "crates/app/src/kubelet/support_proofs.rs::secure_server_settings_follow_the_configuration",
        ]),
    ),
    fl(
        "cert-dir",
        done(&[
            "crates/app/src/kubelet/support_proofs.rs::secure_server_settings_follow_the_configuration",
            "crates/server/tests/secure_tls.rs::self_signed_cert_is_generated_then_reused",
            "crates/certificate/src/store.rs::layout_is_client_gos",
        ]),
    ),
    fl(
        "cloud-provider",
        as_upstream(
            "`external` only shapes node registration and node addresses, which need an API server",
        ),
    ),
    fl(
        "root-dir",
        done(&[
            "crates/app/src/kubelet/support_proofs.rs::runtime_settings_follow_the_configuration",
        ]),
    ),
    fl(
        "seccomp-default",
        done(&[
            "crates/app/src/kubelet/support_proofs.rs::runtime_settings_follow_the_configuration",
            "crates/runtime/src/security_tests.rs::seccomp_selection",
        ]),
    ),
    fl(
        "node-labels",
        // Proof provided by the `admission` branch (nodeSelector/affinity against the standalone node).
        done(&[
            "crates/admission/src/predicate_tests.rs::node_labels_override_the_defaults",
            "crates/admission/src/predicate_tests.rs::node_selector_and_affinity_match_the_standalone_node_labels",
        ]),
    ),
    fl(
        "lock-file",
        done(&[
            "crates/app/src/lockfile.rs::second_acquire_waits_until_first_released",
            "crates/kubelet-rs/tests/process.rs::lock_contention_makes_the_first_instance_exit",
        ]),
    ),
    fl(
        "runtime-cgroups",
        done_with_note(
            "as upstream 1.35, only the summary's `runtime` system container and `/metrics/cadvisor` read this cgroup (nothing is moved into it)",
            &[
                "crates/stats/src/provider_tests.rs::system_containers_come_from_the_configured_cgroups",
                "crates/stats/src/provider_tests.rs::cadvisor_system_cgroup_subtrees_and_the_kubelets_own_cgroup_on_v2",
            ],
        ),
    ),
    fl(
        "exit-on-lock-contention",
        done(&[
            "crates/kubelet-rs/tests/process.rs::lock_contention_makes_the_first_instance_exit",
            "crates/kubelet-rs/tests/process.rs::exit_on_lock_contention_without_lock_file_is_an_error",
        ]),
    ),
    fl("minimum-container-ttl-duration", done(GC_PROOF)),
    fl("maximum-dead-containers-per-container", done(GC_PROOF)),
    fl("maximum-dead-containers", done(GC_PROOF)),
    fl(
        "experimental-mounter-path",
        ignored("mounts volumes with this mounter binary"),
    ),
    fl(
        "experimental-allocatable-ignore-eviction",
        done(&[
            "crates/app/src/kubelet/support_proofs.rs::admission_allocatable_follows_reserved_and_eviction_settings",
        ]),
    ),
    fl("housekeeping-interval", ignored(CADVISOR)),
    fl(
        "version",
        done(&["crates/kubelet-rs/tests/process.rs::version_help_and_positional_args"]),
    ),
    fl(
        "help",
        done(&["crates/kubelet-rs/tests/process.rs::version_help_and_positional_args"]),
    ),
    fl("application-metrics-count-limit", ignored(CADVISOR)),
    fl("boot-id-file", ignored(CADVISOR_IDS)),
    fl("container-hints", ignored(CADVISOR)),
    fl("containerd", ignored(CADVISOR)),
    fl("containerd-namespace", ignored(CADVISOR)),
    fl("enable-load-reader", ignored(CADVISOR_LOAD)),
    fl("event-storage-age-limit", ignored(CADVISOR)),
    fl("event-storage-event-limit", ignored(CADVISOR)),
    fl("global-housekeeping-interval", ignored(CADVISOR)),
    fl("log-cadvisor-usage", ignored(CADVISOR)),
    fl("machine-id-file", ignored(CADVISOR_IDS)),
    fl("storage-driver-buffer-duration", ignored(CADVISOR)),
    fl("storage-driver-db", ignored(CADVISOR)),
    fl("storage-driver-host", ignored(CADVISOR)),
    fl("storage-driver-password", ignored(CADVISOR)),
    fl("storage-driver-secure", ignored(CADVISOR)),
    fl("storage-driver-table", ignored(CADVISOR)),
    fl("storage-driver-user", ignored(CADVISOR)),
];
