//! Every `KubeletConfiguration` v1beta1 field, in upstream's order, with the flag that sets it
//! and its [`Support`]. Proofs are `path/from/workspace/root.rs::test_fn`.

use serde_json::Value;

use super::{
    FieldSupport, Support, as_upstream, done, done_with_note, ignored, ignored_even_default,
    refused,
};

// Proofs shared by several fields.
const CPU_MANAGER_REAL: &str = "crates/kubelet-rs/tests/cpu_manager_real.rs::static_policy_pins_a_guaranteed_container_and_moves_the_others";
// Node registration, status and lease (`crates/nodestatus`, issue #7).
const EVICTION_REAL: &str = "crates/kubelet-rs/tests/cluster_eviction.rs::best_effort_memory_hog_is_evicted_guaranteed_pod_keeps_running";
const INITIAL_NODE: &str = "crates/nodestatus/src/tests.rs::initial_node_has_labels_taints_capacity_allocatable_and_node_info";
const NODE_E2E: &str =
    "e2e/tests/cluster_nodestatus.rs::node_registers_reports_status_and_keeps_its_lease";
const NODE_REGISTERED: &str = "crates/nodestatus/src/tests.rs::registration_creates_the_node";
const NODE_NOT_REGISTERED: &str =
    "crates/nodestatus/src/tests.rs::register_node_false_only_updates_the_status";
const NODE_STATUS_UPDATE_FREQUENCY: &str =
    "crates/nodestatus/src/tests.rs::status_is_computed_every_node_status_update_frequency";
const NODE_STATUS_REPORT_FREQUENCY: &str =
    "crates/nodestatus/src/tests.rs::report_frequency_follows_the_configuration";
const NODE_STATUS_PATCHED: &str = "crates/nodestatus/src/tests.rs::status_is_patched_when_changed_or_when_the_report_frequency_passed";
const NODE_LEASE: &str =
    "crates/nodestatus/src/tests.rs::lease_is_created_owned_by_the_node_and_renewed";
const NODE_STATUS_IMAGES: &str =
    "crates/nodestatus/src/tests.rs::images_largest_first_limited_with_five_names";
const NODE_CMAD: &str =
    "crates/nodestatus/src/tests.rs::controller_attach_detach_annotation_follows_the_configuration";
const RUNTIME_SETTINGS: &str =
    "crates/app/src/kubelet/support_proofs.rs::runtime_settings_follow_the_configuration";
const SECURE_SETTINGS: &str =
    "crates/app/src/kubelet/support_proofs.rs::secure_server_settings_follow_the_configuration";
const TOPOLOGY_MANAGER_REAL: &str = "crates/kubelet-rs/tests/cpu_manager_real.rs::single_numa_node_policy_admits_and_pins_a_guaranteed_pod";
const QOS_CGROUP_LIMITS: &str =
    "crates/cm/src/qos.rs::v1_creates_hierarchy_in_mounted_controllers_and_sets_limits";
// Node allocatable enforcement beyond `pods` (`crates/cm/src/node_allocatable.rs`).
const PODS_PIDS_LIMIT: &str =
    "crates/cm/src/qos.rs::v1_pods_pids_limit_goes_to_the_kubepods_pids_hierarchy";
const RESERVED_CGROUPS_V1: &str = "crates/cm/src/node_allocatable_tests.rs::v1_system_and_kube_reserved_limit_their_existing_cgroups";
const RESERVED_CGROUPS_V2: &str = "crates/cm/src/node_allocatable_tests.rs::v2_reserved_cgroup_is_validated_by_controllers_and_limited";
const RESERVED_CGROUPS_COMPRESSIBLE: &str =
    "crates/cm/src/node_allocatable_tests.rs::compressible_enforcement_sets_only_cpu";
const RESERVED_CGROUPS_MISSING: &str = "crates/cm/src/node_allocatable_tests.rs::missing_reserved_cgroup_fails_with_upstream_message_and_warning_event";
const RESERVED_CGROUPS_SYSTEMD: &str =
    "crates/cm/src/node_allocatable_tests.rs::systemd_driver_resolves_slice_names";
const RESERVED_CGROUPS_EVENTS: &str = "crates/app/tests/node_allocatable.rs::reserved_cgroup_and_kubepods_pids_are_enforced_with_events";
const RESERVED_CGROUPS_REAL: &str = "crates/kubelet-rs/tests/reserved_cgroups_real.rs::system_and_kube_reserved_are_enforced_on_existing_cgroups";
const RESERVED_CGROUPS_REAL_MISSING: &str = "crates/kubelet-rs/tests/reserved_cgroups_real.rs::missing_reserved_cgroup_stops_the_kubelet_with_upstreams_message";

// Image garbage collection (`crates/runtime/src/image_gc.rs`, issue #10 item 8).
const IMAGE_GC_ORDER: &str = "crates/runtime/src/image_gc_tests.rs::free_space_removes_oldest_unused_first_and_never_in_use_or_pinned";
const IMAGE_GC_AMOUNT: &str = "crates/runtime/src/image_gc_tests.rs::amount_to_free_is_down_to_the_low_threshold_and_only_over_the_high_one";
const IMAGE_GC_DISABLED: &str = "crates/runtime/src/image_gc_tests.rs::high_threshold_100_without_maximum_age_disables_image_gc";
const IMAGE_GC_MIN_AGE: &str =
    "crates/runtime/src/image_gc_tests.rs::images_younger_than_the_minimum_age_are_kept";
const IMAGE_GC_MAX_AGE: &str = "crates/runtime/src/image_gc_tests.rs::images_unused_longer_than_the_maximum_age_go_whatever_the_usage";
const IMAGE_GC_REAL: &str = "crates/kubelet-rs/tests/image_gc_real.rs::unused_images_are_collected_past_the_high_threshold_in_use_and_sandbox_images_kept";

const fn f(field: &'static str, flag: Option<&'static str>, support: Support) -> FieldSupport {
    FieldSupport {
        field,
        flag,
        support,
    }
}

fn never(_: &Value) -> bool {
    false
}

fn is_true(v: &Value) -> bool {
    v.as_bool() == Some(true)
}

/// `kubeReserved` and `systemReserved`.
/// Graceful node shutdown (`kubelet-nodeshutdown`).
const SHUTDOWN_NOTE: &str = "graceful node shutdown as upstream's (gate `GracefulNodeShutdown`): a systemd-logind delay inhibitor lock on the system bus (`DBUS_SYSTEM_BUS_ADDRESS`, else `/var/run/dbus/system_bus_socket`), `InhibitDelayMaxSec` raised through `/etc/systemd/logind.conf.d/99-kubelet.conf` and a logind reload when too small, pods killed by priority band on `PrepareForShutdown`, `NodeShutdown` admission rejections, Ready false, the state file and gauges; without a system bus or logind (e.g. PID 1 not systemd) the manager's start fails and the kubelet logs `Failed to start node shutdown manager` and runs on without it, as upstream's";
const SHUTDOWN_BANDS: &str = "crates/nodeshutdown/src/manager_tests.rs::manager_kills_with_band_periods_and_overrides_logind";
const SHUTDOWN_STATUS: &str =
    "crates/nodeshutdown/src/manager_tests.rs::killed_pods_get_upstreams_status";
const SHUTDOWN_MIGRATE: &str =
    "crates/nodeshutdown/src/manager_tests.rs::migrate_config_as_upstream";
const SHUTDOWN_GROUPS: &str =
    "crates/nodeshutdown/src/manager_tests.rs::group_by_priority_as_upstream";
const SHUTDOWN_ORDER: &str =
    "crates/nodeshutdown/src/manager_tests.rs::shutdown_then_cancel_releases_and_retakes_the_lock";
const SHUTDOWN_CONFIG: &str =
    "crates/app/src/kubelet/nodeshutdown.rs::shutdown_config_from_the_kubelet_configuration";
const SHUTDOWN_DBUS: &str =
    "crates/nodeshutdown/src/dbus_tests.rs::real_bus_override_inhibit_shutdown_and_cancel";
const SHUTDOWN_NO_BUS: &str = "crates/nodeshutdown/src/dbus_tests.rs::no_bus_fails_start";
const SHUTDOWN_NOT_READY: &str =
    "crates/nodestatus/src/tests.rs::node_shutting_down_makes_the_node_not_ready";
const SHUTDOWN_NO_BUS_REAL: &str = "crates/kubelet-rs/tests/nodeshutdown_real.rs::without_a_system_bus_the_kubelet_logs_and_runs_on";
const SHUTDOWN_RECONNECT: &str =
    "crates/nodeshutdown/src/dbus_tests.rs::real_bus_lost_and_back_reconnects";
const SHUTDOWN_CLUSTER: &str = "crates/kubelet-rs/tests/cluster_nodeshutdown.rs::prepare_for_shutdown_turns_the_node_not_ready_and_kills_api_pods";
const SHUTDOWN_REAL: &str = "crates/kubelet-rs/tests/nodeshutdown_real.rs::pods_are_killed_by_priority_band_on_prepare_for_shutdown";

const RESERVED: Support = done(&[
    QOS_CGROUP_LIMITS,
    RUNTIME_SETTINGS,
    "crates/app/src/kubelet/support_proofs.rs::admission_allocatable_follows_reserved_and_eviction_settings",
    "crates/app/src/kubelet/support_proofs.rs::admission_allocatable_ephemeral_storage_follows_local_storage_settings",
    PODS_PIDS_LIMIT,
    RESERVED_CGROUPS_V1,
    RESERVED_CGROUPS_EVENTS,
    RESERVED_CGROUPS_REAL,
]);

/// `systemReservedCgroup` and `kubeReservedCgroup`.
const RESERVED_CGROUP_NOTE: &str = "enforced only when enforceNodeAllocatable lists `system-reserved`/`kube-reserved` (or the `-compressible` forms); the cgroup must already exist in every hierarchy, or the start fails; with the systemd driver the limits are written to the slice's files (no D-Bus unit properties); with the MemoryQoS gate the reserved memory is also the cgroup's memory.min (on cgroup v1 the start then fails, as upstream's)";

/// Every field of `KubeletConfiguration`, by JSON path.
pub static FIELDS: &[FieldSupport] = &[
    f(
        "enableServer",
        Some("enable-server"),
        done(&[
            "crates/kubelet-rs/tests/process.rs::secure_server_serves_configz_equal_to_print_config",
            "crates/app/src/kubelet/support_proofs.rs::enable_server_false_starts_no_secure_server",
        ]),
    ),
    f(
        "staticPodPath",
        Some("pod-manifest-path"),
        done(&[
            "crates/podsource/tests/static_pods.rs::static_pod_directory_end_to_end",
            "crates/kubelet-rs/tests/static_pods_real.rs::static_pod_reaches_running_and_logs_are_written",
        ]),
    ),
    f(
        "podLogsDir",
        None,
        done(&[
            RUNTIME_SETTINGS,
            "crates/kubelet-rs/tests/static_pods_real.rs::static_pod_reaches_running_and_logs_are_written",
        ]),
    ),
    f(
        "syncFrequency",
        Some("sync-frequency"),
        done(&[
            "crates/podworkers/src/tests.rs::resync_interval_decides_when_a_synced_pod_is_due_again",
        ]),
    ),
    f(
        "fileCheckFrequency",
        Some("file-check-frequency"),
        done(&["crates/podsource/src/file/tests.rs::rescans_every_period_without_events"]),
    ),
    f(
        "httpCheckFrequency",
        Some("http-check-frequency"),
        done(&[
            "crates/podsource/src/http/tests.rs::loop_polls_every_period_and_sends_only_changes",
        ]),
    ),
    f(
        "staticPodURL",
        Some("manifest-url"),
        done(&["crates/kubelet-rs/tests/static_pods_real.rs::pods_from_static_pod_url_run"]),
    ),
    f(
        "staticPodURLHeader",
        Some("manifest-url-header"),
        done(&[
            "crates/podsource/src/http/tests.rs::fetches_a_pod_with_headers_then_reports_unchanged",
        ]),
    ),
    f(
        "address",
        Some("address"),
        done(&[
            SECURE_SETTINGS,
            "crates/server/src/listen.rs::bind_errors_name_the_address",
        ]),
    ),
    f(
        "port",
        Some("port"),
        done(&[
            SECURE_SETTINGS,
            "crates/kubelet-rs/tests/process.rs::secure_server_serves_configz_equal_to_print_config",
        ]),
    ),
    f(
        "readOnlyPort",
        Some("read-only-port"),
        done(&[
            "crates/kubelet-rs/tests/static_pods_real.rs::static_pod_reaches_running_and_logs_are_written",
        ]),
    ),
    f(
        "tlsCertFile",
        Some("tls-cert-file"),
        done(&[
            SECURE_SETTINGS,
            "crates/server/tests/secure_tls.rs::bad_cert_file_path_is_named",
        ]),
    ),
    f(
        "tlsPrivateKeyFile",
        Some("tls-private-key-file"),
        done(&[
            SECURE_SETTINGS,
            "crates/server/tests/secure_tls.rs::mismatched_key_names_both_files",
        ]),
    ),
    f(
        "tlsCipherSuites",
        Some("tls-cipher-suites"),
        done(&[
            SECURE_SETTINGS,
            "crates/server/tests/secure_tls.rs::tls12_client_accepted_by_default_with_configured_suite",
        ]),
    ),
    f(
        "tlsMinVersion",
        Some("tls-min-version"),
        done(&[
            SECURE_SETTINGS,
            "crates/server/tests/secure_tls.rs::tls12_client_refused_when_min_version_is_13",
        ]),
    ),
    f(
        "rotateCertificates",
        Some("rotate-certificates"),
        done(&[
            "crates/app/src/kubelet/api/certificates.rs::rotate_certificates_bootstraps_in_background",
            "crates/certificate/src/manager.rs::no_certificate_rotates_at_once_and_publishes_it",
            "crates/certificate/src/manager.rs::deadline_is_70_to_90_percent_of_the_lifetime",
            "crates/client/tests/rotation.rs::clients_present_the_current_certificate_and_reconnect_when_it_rotates",
            "e2e/tests/cluster_certificates.rs::tls_bootstrap_from_a_bootstrap_token_then_rotation_without_restart",
        ]),
    ),
    f(
        "serverTLSBootstrap",
        Some("rotate-server-certificates"),
        done(&[
            "crates/app/src/kubelet/support_proofs.rs::server_tls_bootstrap_takes_the_managers_certificate",
            "crates/app/src/kubelet/api/certificates.rs::server_tls_bootstrap_without_a_client_serves_a_stored_certificate_only",
            "crates/certificate/src/manager.rs::serving_manager_requests_when_the_addresses_arrive",
            "crates/server/tests/secure_tls.rs::server_tls_bootstrap_serves_the_managers_certificate_once_there_is_one",
            "e2e/tests/cluster_certificates.rs::serving_certificate_from_an_approved_kubelet_serving_csr",
        ]),
    ),
    f(
        "authentication.x509.clientCAFile",
        Some("client-ca-file"),
        done(&[
            SECURE_SETTINGS,
            "crates/server/tests/secure_tls.rs::client_cert_from_another_ca_is_unauthorized",
        ]),
    ),
    f(
        "authentication.webhook.enabled",
        Some("authentication-token-webhook"),
        done(&[
            "crates/app/src/auth.rs::standalone_with_webhooks_is_refused",
            "crates/server/src/authn.rs::bearer_token_authenticates_and_is_removed",
            "crates/server/src/authn.rs::rejected_or_failed_token_is_an_error_even_with_anonymous",
            "crates/server/src/authn.rs::x509_wins_over_token",
            "crates/auth/src/token.rs::review_spec_and_user",
            "e2e/tests/cluster_webhook_auth.rs::a_service_account_token_is_reviewed_with_the_node_identity",
            "e2e/tests/cluster_webhook_auth.rs::the_secure_port_authenticates_and_authorizes_through_the_api_server",
        ]),
    ),
    f(
        "authentication.webhook.cacheTTL",
        Some("authentication-token-webhook-cache-ttl"),
        done(&[
            "crates/app/src/auth.rs::ttls_from_the_defaulted_configuration",
            "crates/app/src/auth.rs::webhook_components_call_the_reviewers",
            "crates/auth/src/token.rs::token_is_cached_within_the_ttl",
            "crates/auth/src/token.rs::rejected_token_is_cached_for_the_same_ttl_but_errors_are_not",
        ]),
    ),
    f(
        "authentication.anonymous.enabled",
        Some("anonymous-auth"),
        done(&[
            SECURE_SETTINGS,
            "crates/server/tests/secure_auth.rs::anonymous_disabled_and_no_cert_is_401_even_for_unknown_paths",
        ]),
    ),
    f(
        "authorization.mode",
        Some("authorization-mode"),
        done(&[
            "crates/app/src/auth.rs::standalone_with_webhooks_is_refused",
            "crates/app/src/auth.rs::modes",
            "crates/app/src/auth.rs::webhook_components_call_the_reviewers",
            "crates/server/src/filter.rs::allowed_passes_and_denied_is_403_with_all_subresources",
            "crates/server/src/filter.rs::authorizer_error_is_500",
            "crates/auth/src/sar.rs::spec_carries_user_and_resource_attributes",
            "e2e/tests/cluster_webhook_auth.rs::node_proxy_is_denied_for_the_service_account_until_a_cluster_role_binding",
            "e2e/tests/cluster_webhook_auth.rs::the_secure_port_authenticates_and_authorizes_through_the_api_server",
        ]),
    ),
    f(
        "authorization.webhook.cacheAuthorizedTTL",
        Some("authorization-webhook-cache-authorized-ttl"),
        done(&[
            "crates/app/src/auth.rs::ttls_from_the_defaulted_configuration",
            "crates/auth/src/sar.rs::allowed_is_cached_for_cache_authorized_ttl",
        ]),
    ),
    f(
        "authorization.webhook.cacheUnauthorizedTTL",
        Some("authorization-webhook-cache-unauthorized-ttl"),
        done(&[
            "crates/app/src/auth.rs::ttls_from_the_defaulted_configuration",
            "crates/auth/src/sar.rs::denied_is_cached_for_cache_unauthorized_ttl",
        ]),
    ),
    f(
        "registryPullQPS",
        Some("registry-qps"),
        ignored_even_default(
            "limits image pulls to this many per second (default 5; 0 means no limit)",
        ),
    ),
    f(
        "registryBurst",
        Some("registry-burst"),
        ignored("lets image pulls burst to this many above registryPullQPS (default 10)"),
    ),
    f(
        "imagePullCredentialsVerificationPolicy",
        None,
        ignored(
            "records which credentials pulled each image and checks them again before a pod with other credentials may use it (KubeletEnsureSecretPulledImages)",
        ),
    ),
    f(
        "preloadedImagesVerificationAllowlist",
        None,
        ignored(
            "exempts these images from credential verification under NeverVerifyAllowlistedImages",
        ),
    ),
    f(
        "eventRecordQPS",
        Some("event-qps"),
        done(&[
            "crates/client/src/settings.rs::upstream_defaults",
            "crates/client/src/settings.rs::zero_means_client_go_defaults_not_unlimited",
            "e2e/tests/cluster_clients.rs::main_client_is_throttled_heartbeat_is_not",
        ]),
    ),
    f(
        "eventBurst",
        Some("event-burst"),
        done(&[
            "crates/client/src/settings.rs::upstream_defaults",
            "crates/client/src/settings.rs::zero_means_client_go_defaults_not_unlimited",
            "e2e/tests/cluster_clients.rs::main_client_is_throttled_heartbeat_is_not",
        ]),
    ),
    f(
        "enableDebuggingHandlers",
        Some("enable-debugging-handlers"),
        done(&[
            SECURE_SETTINGS,
            "crates/server/tests/secure_auth.rs::debugging_handlers_disabled",
            "crates/server/src/secure.rs::debugging_handlers_follow_the_setting",
            "crates/server/src/route_table.rs::every_case_is_routed_and_authorized_as_listed",
            "crates/kubelet-rs/tests/cluster_streaming.rs::kubectl_logs_exec_and_port_forward_through_a_kubelet_rs_node",
        ]),
    ),
    f(
        "enableContentionProfiling",
        Some("contention-profiling"),
        ignored("turns on Go block profiling, served under /debug/pprof/"),
    ),
    f(
        "healthzPort",
        Some("healthz-port"),
        done(&["crates/kubelet-rs/tests/process.rs::healthz_answers_and_sigterm_exits_cleanly"]),
    ),
    f(
        "healthzBindAddress",
        Some("healthz-bind-address"),
        done(&["crates/kubelet-rs/tests/process.rs::healthz_answers_and_sigterm_exits_cleanly"]),
    ),
    f(
        "oomScoreAdj",
        Some("oom-score-adj"),
        done(&["crates/cm/src/oom.rs::writes_self"]),
    ),
    f(
        "clusterDomain",
        Some("cluster-domain"),
        done(&[
            RUNTIME_SETTINGS,
            "crates/runtime/src/dns_tests.rs::pod_dns_by_policy",
        ]),
    ),
    f(
        "clusterDNS",
        Some("cluster-dns"),
        done(&[
            RUNTIME_SETTINGS,
            "crates/runtime/src/dns_tests.rs::pod_dns_by_policy",
        ]),
    ),
    f(
        "streamingConnectionIdleTimeout",
        Some("streaming-connection-idle-timeout"),
        as_upstream(
            "documented upstream as having no effect; nothing in the 1.35 kubelet reads it",
        ),
    ),
    f(
        "nodeStatusUpdateFrequency",
        Some("node-status-update-frequency"),
        done(&[NODE_STATUS_UPDATE_FREQUENCY]),
    ),
    f(
        "nodeStatusReportFrequency",
        None,
        done(&[NODE_STATUS_REPORT_FREQUENCY, NODE_STATUS_PATCHED]),
    ),
    f("nodeLeaseDurationSeconds", None, done(&[NODE_LEASE])),
    f(
        "imageMinimumGCAge",
        Some("minimum-image-ttl-duration"),
        done(&[IMAGE_GC_MIN_AGE, IMAGE_GC_REAL]),
    ),
    f("imageMaximumGCAge", None, done(&[IMAGE_GC_MAX_AGE])),
    f(
        "imageGCHighThresholdPercent",
        Some("image-gc-high-threshold"),
        done(&[
            IMAGE_GC_ORDER,
            IMAGE_GC_AMOUNT,
            IMAGE_GC_DISABLED,
            IMAGE_GC_REAL,
        ]),
    ),
    f(
        "imageGCLowThresholdPercent",
        Some("image-gc-low-threshold"),
        done(&[IMAGE_GC_AMOUNT, IMAGE_GC_REAL]),
    ),
    f(
        "volumeStatsAggPeriod",
        Some("volume-stats-agg-period"),
        done(&[
            "crates/stats/src/volume_stats.rs::measured_when_first_seen_then_after_a_jittered_period_cached_volumes_once",
        ]),
    ),
    f(
        "kubeletCgroups",
        Some("kubelet-cgroups"),
        done_with_note(
            "the container manager moves the kubelet into this cgroupfs cgroup (every hierarchy but `devices`) and sets its `oomScoreAdj`, at start and every minute, where init's pid namespace can be read (as upstream's `isProcessRunningInHost`); the summary's `kubelet` system container reads it; unset, the kubelet's OOM score is set every 5 minutes",
            &[
                "crates/cm/src/system_containers_tests.rs::the_kubelet_is_kept_in_its_cgroup_with_its_oom_score",
                "crates/cm/src/system_containers_tests.rs::the_periodic_task_finds_the_kubelets_cgroup",
                "crates/kubelet-rs/tests/process.rs::kubelet_cgroups_hold_the_kubelet_and_system_cgroups_may_not_be_the_root",
                "crates/stats/src/provider_tests.rs::system_containers_come_from_the_configured_cgroups",
            ],
        ),
    ),
    f(
        "systemCgroups",
        Some("system-cgroups"),
        done_with_note(
            "every non-kernel process but init directly in the root cgroup is moved into this cgroupfs cgroup, at start and every minute; `/` stops the start; the summary's `misc` system container reads it",
            &[
                "crates/cm/src/system_containers_tests.rs::non_kernel_processes_of_the_root_move_to_the_system_container",
                "crates/cm/src/system_containers_tests.rs::v2_moves_into_the_unified_cgroup",
                "crates/cm/src/system_containers_tests.rs::system_cgroups_may_not_be_the_root",
                "crates/kubelet-rs/tests/process.rs::kubelet_cgroups_hold_the_kubelet_and_system_cgroups_may_not_be_the_root",
                "crates/stats/src/provider_tests.rs::system_containers_come_from_the_configured_cgroups",
            ],
        ),
    ),
    f(
        "cgroupRoot",
        Some("cgroup-root"),
        done(&[
            RUNTIME_SETTINGS,
            "crates/cm/src/cgroups.rs::allocatable_root_forms",
        ]),
    ),
    f(
        "cgroupsPerQOS",
        Some("cgroups-per-qos"),
        done(&[
            RUNTIME_SETTINGS,
            QOS_CGROUP_LIMITS,
            "crates/runtime/src/cgroup.rs::cgroupfs_names",
            "crates/app/src/kubelet/pod_cgroups.rs::pod_cgroups_get_upstream_values_per_qos_class_on_v1",
            "crates/app/src/kubelet/pod_cgroups.rs::pod_cgroups_get_upstream_values_per_qos_class_on_v2",
            "crates/app/src/kubelet/pod_cgroups.rs::qos_cgroups_follow_the_active_pods",
            "crates/kubelet-rs/tests/pod_cgroups_real.rs::pod_and_qos_cgroups_hold_upstream_values_per_qos_class",
        ]),
    ),
    f(
        "cgroupDriver",
        Some("cgroup-driver"),
        done_with_note(
            "the driver the runtime reports over CRI overrides it, as upstream; `systemd`: every pod, QoS and reserved cgroup is a slice unit of systemd, driven over its D-Bus API as libcontainer does (`StartTransientUnit` with `Wants=` the parent slice and accounting on, `SetUnitProperties` with the resource values before the cgroupfs files, `StopUnit` before the directories go); on a host without systemd (no `/run/systemd/system`) the start fails naming `cgroupDriver`, where upstream's container manager fails",
            &[
                "crates/cri/src/preinit_tests.rs::no_linux_section_keeps_the_configured_driver",
                "crates/cm/src/systemd_cgroups_tests.rs::v1_properties_as_libcontainer",
                "crates/cm/src/systemd_cgroups_tests.rs::v2_properties_as_libcontainer",
                "crates/cm/src/systemd_cgroups_tests.rs::pod_cgroup_is_a_slice_unit_created_and_stopped",
                "crates/cm/src/systemd_cgroups_tests.rs::qos_hierarchy_of_slice_units",
                "crates/cm/src/systemd_cgroups_tests.rs::real_bus_pod_cgroup_calls_match_the_recording_fake",
                "crates/systemd/src/dbus_tests.rs::real_bus_start_set_stop_with_job_results",
                "crates/app/tests/systemd_driver.rs::qos_reserved_and_pod_cgroups_are_slice_units",
                "crates/kubelet-rs/tests/process.rs::systemd_cgroup_driver_without_systemd_is_refused_naming_cgroup_driver",
            ],
        ),
    ),
    f(
        "cpuManagerPolicy",
        Some("cpu-manager-policy"),
        done_with_note(
            "`static`: Guaranteed containers with integer CPU requests get exclusive CPUs at admission (NUMA-aligned as `topologyManagerPolicy` asks: the CPU manager is the topology manager's hint provider), set as `cpuset_cpus` at CreateContainer; the others share the rest, kept up to date by the reconcile loop; pinned containers, their sandboxes and pod cgroups get no CFS quota (`DisableCPUQuotaWithExclusiveCPUs`); CPU resizes of Guaranteed pods are `Infeasible`; the `cpu_manager_state` checkpoint is upstream's byte for byte; upstream's `kubelet_cpu_manager_*` metrics. Not yet: the `InPlacePodVerticalScalingExclusiveCPUs` gate (refused at start)",
            &[
                "crates/cpumanager/src/kubelet_tests.rs::guaranteed_integer_cpus_are_exclusive_and_others_share_the_rest",
                "crates/cpumanager/src/kubelet_tests.rs::reconcile_moves_shared_containers_off_exclusive_cpus",
                "crates/cpumanager/src/kubelet_tests.rs::admissions_and_pinnings_are_counted_in_the_kubelets_metrics",
                "crates/runtime/src/manager_tests.rs::internal_lifecycle_hooks_run_around_create_and_remove",
                "crates/runtime/src/manager_tests.rs::exclusive_cpus_leave_container_and_sandbox_without_cfs_quota",
                "crates/app/src/kubelet/pod_cgroups.rs::a_pod_with_exclusive_cpus_gets_no_cfs_quota",
                "crates/kubelet-rs/tests/process.rs::cpu_manager_configurations_upstream_refuses_stop_the_start",
                CPU_MANAGER_REAL,
            ],
        ),
    ),
    f(
        "singleProcessOOMKill",
        None,
        done(&[
            RUNTIME_SETTINGS,
            "crates/runtime/src/resources.rs::no_quota_when_cfs_quota_disabled_and_oom_group_on_v2",
        ]),
    ),
    f(
        "cpuManagerPolicyOptions",
        Some("cpu-manager-policy-options"),
        done(&[
            "crates/cpumanager/src/kubelet_tests.rs::full_pcpus_only_rejects_a_partial_core_with_smt_alignment_error",
            "crates/cpumanager/src/manager_tests.rs::test_cpu_manager_handle_policy_options",
            "crates/kubelet-rs/tests/process.rs::cpu_manager_configurations_upstream_refuses_stop_the_start",
        ]),
    ),
    f(
        "cpuManagerReconcilePeriod",
        Some("cpu-manager-reconcile-period"),
        done(&[
            "crates/cpumanager/src/kubelet_tests.rs::the_loop_reconciles_at_once_and_then_every_period",
            "crates/app/src/kubelet/cpu_manager.rs::reconcile_period_follows_the_configuration",
        ]),
    ),
    f(
        "memoryManagerPolicy",
        Some("memory-manager-policy"),
        done_with_note(
            "`Static` (upstream's `pkg/kubelet/cm/memorymanager`, `crates/memorymanager`): Guaranteed pods' `memory` and `hugepages-<size>` requests are reserved on NUMA nodes at admission (the topology manager's admit handler calls `Allocate` with the merged affinity; a pod that does not fit is rejected `UnexpectedAdmissionError`), the container gets those nodes as `cpuset_mems` at CreateContainer, init containers' memory is reused; the memory manager's NUMA hints are merged by the topology manager; the `memory_manager_state` checkpoint is upstream's byte for byte; upstream's `NewManager` errors (`reservedMemory`, unknown policy, `BestEffort` off Windows) stop the start; `kubelet_memory_manager_pinning_*` metrics",
            &[
                "crates/memorymanager/src/policy_static_tests.rs::allocate_table",
                "crates/memorymanager/src/kubelet_tests.rs::lifecycle_sets_cpuset_mems_from_the_allocation",
                "crates/memorymanager/src/manager_tests.rs::start_writes_the_checkpoint_and_refuses_another_policys",
                "crates/kubelet-rs/tests/process.rs::memory_manager_configurations_upstream_refuses_stop_the_start",
                "crates/app/src/kubelet/topology_manager_tests.rs::the_memory_manager_is_a_hint_provider_after_the_cpu_manager",
            ],
        ),
    ),
    f(
        "topologyManagerPolicy",
        Some("topology-manager-policy"),
        done_with_note(
            "upstream's topology manager (`crates/topologymanager`): `best-effort`, `restricted` and `single-numa-node` merge the hint providers' NUMA hints (the CPU manager's, then the memory manager's) into one affinity the CPU manager's `static` policy allocates within; `restricted`/`single-numa-node` reject a pod they cannot align (`TopologyAffinityError`); upstream's `NewManager` errors (more NUMA nodes than `max-allowable-numa-nodes` …) stop the start; `kubelet_topology_manager_admission_*` and `kubelet_container_aligned_compute_resources_*{boundary=\"numa_node\"}` metrics",
            &[
                "crates/topologymanager/src/policy_tests.rs::policy_best_effort_merge",
                "crates/topologymanager/src/policy_tests.rs::policy_restricted_merge",
                "crates/topologymanager/src/policy_tests.rs::policy_single_numa_node_merge",
                "crates/topologymanager/src/manager_tests.rs::admit",
                "crates/topologymanager/src/manager_tests.rs::new_manager",
                "crates/cpumanager/tests/topology_manager_on_sysfs.rs::a_pod_wider_than_a_node_spans_the_narrowest_or_closest_nodes",
                "crates/app/src/kubelet/topology_manager_tests.rs::the_cpu_manager_is_a_hint_provider_of_the_admit_handler",
                TOPOLOGY_MANAGER_REAL,
            ],
        ),
    ),
    f(
        "topologyManagerScope",
        Some("topology-manager-scope"),
        done_with_note(
            "`container` aligns each container on its own, `pod` the whole pod's resources at once (upstream's `GetPodTopologyHints`); ignored by the `none` policy, as upstream",
            &[
                "crates/cpumanager/tests/topology_manager_on_sysfs.rs::container_scope_aligns_each_container_pod_scope_the_whole_pod",
                "crates/cpumanager/tests/topology_manager_on_sysfs.rs::single_numa_node_pod_scope_rejects_what_container_scope_admits",
                "crates/topologymanager/src/manager_tests.rs::affinity_is_stored_before_allocate",
            ],
        ),
    ),
    f(
        "topologyManagerPolicyOptions",
        Some("topology-manager-policy-options"),
        done_with_note(
            "`prefer-closest-numa-nodes` (the NUMA distances from `/sys/devices/system/node/node*/distance`), `max-allowable-numa-nodes`; unknown options and bad values stop the start with upstream's messages; ignored by the `none` policy, as upstream",
            &[
                "crates/topologymanager/src/policy_options_tests.rs::new_topology_manager_options",
                "crates/topologymanager/src/policy_tests.rs::policy_best_effort_merge_closest_numa",
                "crates/cpumanager/tests/topology_manager_on_sysfs.rs::a_pod_wider_than_a_node_spans_the_narrowest_or_closest_nodes",
                "crates/app/src/kubelet/topology_manager_tests.rs::topology_manager_settings_upstream_refuses_stop_the_start",
                "crates/kubelet-rs/tests/process.rs::topology_manager_configurations_upstream_refuses_stop_the_start",
            ],
        ),
    ),
    f(
        "qosReserved",
        Some("qos-reserved"),
        done(&["crates/cm/src/qos.rs::qos_reserved_memory_limits_and_retry_at_usage"]),
    ),
    f(
        "runtimeRequestTimeout",
        Some("runtime-request-timeout"),
        done(&["crates/cri/src/remote/tests.rs::deadline_exceeded_names_method_and_endpoint"]),
    ),
    f(
        "hairpinMode",
        Some("hairpin-mode"),
        as_upstream(
            "validated only; nothing in the 1.35 kubelet reads it (CNI plugins configure hairpin)",
        ),
    ),
    f(
        "maxPods",
        Some("max-pods"),
        // Proof provided by the `admission` branch (maxPods admit handler).
        done(&[
            "crates/admission/src/predicate_tests.rs::too_many_pods_is_out_of_pods_with_upstreams_message",
        ]),
    ),
    f(
        "podCIDR",
        Some("pod-cidr"),
        ignored("in standalone mode, passes the pod CIDR to the runtime (CRI UpdateRuntimeConfig)"),
    ),
    f(
        "podPidsLimit",
        Some("pod-max-pids"),
        // Proof provided by the `cheap` branch (pod-level cgroup with pids.max).
        done(&["crates/cm/src/pod_container_manager.rs::pod_pids_limit_written_to_pod_cgroup"]),
    ),
    f(
        "resolvConf",
        Some("resolv-conf"),
        done(&[
            RUNTIME_SETTINGS,
            "crates/runtime/src/dns_tests.rs::missing_resolv_conf_is_an_error_naming_the_file",
        ]),
    ),
    f(
        "runOnce",
        Some("runonce"),
        refused(
            "`true` fails validation as upstream's does (\"Runonce mode has been deprecated and should not be set\")",
            &["crates/config/tests/flags.rs::runonce_parses_and_fails_validation"],
        ),
    ),
    f(
        "cpuCFSQuota",
        Some("cpu-cfs-quota"),
        done(&[
            RUNTIME_SETTINGS,
            "crates/runtime/src/resources.rs::no_quota_when_cfs_quota_disabled_and_oom_group_on_v2",
        ]),
    ),
    f(
        "cpuCFSQuotaPeriod",
        Some("cpu-cfs-quota-period"),
        done(&[
            RUNTIME_SETTINGS,
            "crates/runtime/src/resources.rs::shares_and_quota_math",
        ]),
    ),
    f(
        "nodeStatusMaxImages",
        Some("node-status-max-images"),
        done(&[NODE_STATUS_IMAGES]),
    ),
    f(
        "maxOpenFiles",
        Some("max-open-files"),
        // Proof provided by the `cheap` branch (rlimit behind a trait).
        done(&["crates/app/src/kubelet/node_setup.rs::max_open_files_sets_rlimit"]),
    ),
    f(
        "contentType",
        Some("kube-api-content-type"),
        Support::Partial {
            works: "`application/json` (API server mode); other types than JSON and protobuf are refused at start",
            upstream: "talks protobuf by default; kubelet-rs's client (kube-rs) sends JSON instead, and with `--kubeconfig` the start logs a warning saying so (`crates/client`); unused in standalone mode",
            proof: &["crates/client/src/settings.rs::content_types"],
            // The warning comes from the client, at start in API server mode only.
            unsupported: never,
        },
    ),
    f(
        "kubeAPIQPS",
        Some("kube-api-qps"),
        done(&[
            "crates/client/src/settings.rs::upstream_defaults",
            "crates/client/src/settings.rs::zero_means_client_go_defaults_not_unlimited",
            "e2e/tests/cluster_clients.rs::main_client_is_throttled_heartbeat_is_not",
        ]),
    ),
    f(
        "kubeAPIBurst",
        Some("kube-api-burst"),
        done(&[
            "crates/client/src/settings.rs::upstream_defaults",
            "crates/client/src/settings.rs::zero_means_client_go_defaults_not_unlimited",
            "e2e/tests/cluster_clients.rs::main_client_is_throttled_heartbeat_is_not",
        ]),
    ),
    f(
        "serializeImagePulls",
        Some("serialize-image-pulls"),
        done(&[
            RUNTIME_SETTINGS,
            "crates/runtime/src/image.rs::concurrency_from_config",
        ]),
    ),
    f(
        "maxParallelImagePulls",
        None,
        done(&[
            RUNTIME_SETTINGS,
            "crates/runtime/src/image.rs::concurrency_from_config",
        ]),
    ),
    f(
        "evictionHard",
        Some("eviction-hard"),
        done(&[
            EVICTION_REAL,
            "crates/kubelet-rs/tests/cluster_eviction.rs::memory_available_signal_evicts_the_best_effort_hog",
            "crates/eviction/src/manager_tests.rs::memory_pressure_evicts_best_effort_and_holds_condition",
            "crates/eviction/src/manager_tests.rs::disk_pressure_reclaims_node_resources_first",
            "crates/eviction/src/manager_tests.rs::pid_pressure_evicts_by_process_count",
            "crates/eviction/src/helpers_tests.rs::thresholds_met_with_and_without_min_reclaim",
            "crates/app/src/kubelet/support_proofs.rs::admission_allocatable_follows_reserved_and_eviction_settings",
        ]),
    ),
    f(
        "evictionSoft",
        Some("eviction-soft"),
        done(&["crates/eviction/src/manager_tests.rs::soft_threshold_waits_for_grace_period"]),
    ),
    f(
        "evictionSoftGracePeriod",
        Some("eviction-soft-grace-period"),
        done(&[
            "crates/eviction/src/manager_tests.rs::soft_threshold_waits_for_grace_period",
            "crates/eviction/src/helpers_tests.rs::grace_periods_and_first_observed_at",
        ]),
    ),
    f(
        "evictionPressureTransitionPeriod",
        Some("eviction-pressure-transition-period"),
        done(&[
            "crates/eviction/src/manager_tests.rs::memory_pressure_evicts_best_effort_and_holds_condition",
            "crates/eviction/src/helpers_tests.rs::node_conditions_and_transition_period",
        ]),
    ),
    f(
        "evictionMaxPodGracePeriod",
        Some("eviction-max-pod-grace-period"),
        done(&["crates/eviction/src/manager_tests.rs::soft_threshold_waits_for_grace_period"]),
    ),
    f(
        "evictionMinimumReclaim",
        Some("eviction-minimum-reclaim"),
        done(&["crates/eviction/src/manager_tests.rs::min_reclaim_keeps_evicting_until_reclaimed"]),
    ),
    f(
        "mergeDefaultEvictionSettings",
        None,
        done(&["crates/config/tests/load.rs::eviction_hard_replaced_or_merged"]),
    ),
    f(
        "podsPerCore",
        Some("pods-per-core"),
        // Proof provided by the `admission` branch (pod capacity of the predicate admit handler).
        done(&[
            "crates/admission/src/predicate_tests.rs::pod_capacity_is_max_pods_or_pods_per_core",
        ]),
    ),
    f(
        "enableControllerAttachDetach",
        Some("enable-controller-attach-detach"),
        // The node annotation that hands attaching to the controller; kubelet-rs has no
        // attachable volume plugins (pods using them are refused at admission).
        done(&[INITIAL_NODE, NODE_CMAD]),
    ),
    f(
        "protectKernelDefaults",
        Some("protect-kernel-defaults"),
        // Proof provided by the `cheap` branch (setupKernelTunables over HostFs).
        done(&["crates/app/src/kubelet/node_setup.rs::protect_kernel_defaults_checks_sysctls"]),
    ),
    f(
        "makeIPTablesUtilChains",
        Some("make-iptables-util-chains"),
        ignored_even_default(
            "creates the KUBE-IPTABLES-HINT chain (mangle) and the KUBE-FIREWALL martian-packet rule, and re-creates them when they vanish",
        ),
    ),
    f(
        "iptablesMasqueradeBit",
        None,
        as_upstream("validated only; documented upstream as having no effect"),
    ),
    f(
        "iptablesDropBit",
        None,
        as_upstream("validated only; documented upstream as having no effect"),
    ),
    f(
        "featureGates",
        Some("feature-gates"),
        done(&[
            "crates/features/src/gate_tests.rs::set_from_map_merges_across_calls",
            "crates/kubelet-rs/tests/process.rs::evented_pleg_uses_the_cri_event_stream_when_enabled",
            "crates/kubelet-rs/tests/env_files_real.rs::gates_off_ignore_the_fields_as_upstream",
        ]),
    ),
    f(
        "failSwapOn",
        Some("fail-swap-on"),
        done(&[
            "crates/cm/src/swap.rs::swap_on_refused_only_with_fail_swap_on",
            // With `false` on a node with swap: containers still get no swap (NoSwap).
            "crates/runtime/src/swap_tests.rs::generate_linux_container_resources_with_swap",
            "crates/cm/src/swap.rs::swap_controller_as_upstream_checks_it",
        ]),
    ),
    f(
        "memorySwap.swapBehavior",
        None,
        done(&[
            "crates/cm/src/swap.rs::limited_swap_needs_v2",
            "crates/runtime/src/swap_tests.rs::get_container_swap_behavior",
            "crates/runtime/src/swap_tests.rs::generate_linux_container_resources_with_swap",
            "crates/runtime/src/swap_tests.rs::calc_swap_for_burstable_pods_is_proportional",
        ]),
    ),
    f(
        "containerLogMaxSize",
        Some("container-log-max-size"),
        done(&[
            RUNTIME_SETTINGS,
            "crates/kubelet-rs/tests/static_pods_real.rs::container_logs_are_rotated_by_size",
        ]),
    ),
    f(
        "containerLogMaxFiles",
        Some("container-log-max-files"),
        done(&[
            RUNTIME_SETTINGS,
            "crates/kubelet-rs/tests/static_pods_real.rs::container_logs_are_rotated_by_size",
        ]),
    ),
    f(
        "containerLogMaxWorkers",
        None,
        ignored(
            "rotates the logs of this many containers in parallel (kubelet-rs rotates one at a time, as the default 1)",
        ),
    ),
    f(
        "containerLogMonitorInterval",
        None,
        done(&["crates/kubelet-rs/tests/static_pods_real.rs::container_logs_are_rotated_by_size"]),
    ),
    f(
        "configMapAndSecretChangeDetectionStrategy",
        None,
        done(&[
            "crates/objects/src/manager_tests.rs::register_and_unregister_count_references_per_pod",
            "crates/objects/src/manager_tests.rs::cache_strategy_reads_once_per_ttl_after_registration",
            "crates/objects/src/manager_tests.rs::get_strategy_always_gets_and_registers_nothing",
            "e2e/tests/cluster_objects.rs::env_from_config_maps_and_secrets_on_a_kubelet_rs_node",
            "crates/kubelet-rs/tests/cluster_node.rs::env_from_config_map_and_secret",
        ]),
    ),
    f("systemReserved", Some("system-reserved"), RESERVED),
    f("kubeReserved", Some("kube-reserved"), RESERVED),
    f(
        "reservedSystemCPUs",
        Some("reserved-cpus"),
        done(&["crates/cm/src/node_config.rs::reserved_cpus_replace_cpu_reservations"]),
    ),
    f(
        "showHiddenMetricsForVersion",
        None,
        done(&["crates/metrics/src/registry.rs::show_hidden_metrics_serves_the_hidden_ones"]),
    ),
    f(
        "systemReservedCgroup",
        Some("system-reserved-cgroup"),
        done_with_note(
            RESERVED_CGROUP_NOTE,
            &[
                RESERVED_CGROUPS_V1,
                RESERVED_CGROUPS_V2,
                RESERVED_CGROUPS_MISSING,
                RESERVED_CGROUPS_SYSTEMD,
                RESERVED_CGROUPS_REAL,
                RESERVED_CGROUPS_REAL_MISSING,
            ],
        ),
    ),
    f(
        "kubeReservedCgroup",
        Some("kube-reserved-cgroup"),
        done_with_note(
            RESERVED_CGROUP_NOTE,
            &[
                RESERVED_CGROUPS_V1,
                RESERVED_CGROUPS_V2,
                RESERVED_CGROUPS_MISSING,
                RESERVED_CGROUPS_REAL,
                RESERVED_CGROUPS_REAL_MISSING,
            ],
        ),
    ),
    f(
        "enforceNodeAllocatable",
        Some("enforce-node-allocatable"),
        done(&[
            QOS_CGROUP_LIMITS,
            "crates/cm/src/node_allocatable_tests.rs::kubepods_limits_are_allocatable_with_pods_and_capacity_without",
            PODS_PIDS_LIMIT,
            RESERVED_CGROUPS_V1,
            RESERVED_CGROUPS_COMPRESSIBLE,
            RESERVED_CGROUPS_EVENTS,
            RESERVED_CGROUPS_REAL,
        ]),
    ),
    f(
        "allowedUnsafeSysctls",
        Some("allowed-unsafe-sysctls"),
        // Proof provided by the `admission` branch (sysctl admit handler).
        done(&["crates/admission/src/sysctl_tests.rs::allowlist_admits_and_rejects_as_upstream"]),
    ),
    f(
        "volumePluginDir",
        Some("volume-plugin-dir"),
        ignored("loads FlexVolume drivers from this directory"),
    ),
    f(
        "providerID",
        Some("provider-id"),
        done(&[INITIAL_NODE, NODE_E2E]),
    ),
    f(
        "kernelMemcgNotification",
        Some("kernel-memcg-notification"),
        done_with_note(
            "on cgroup v1, a memcg threshold notifier (eventfd on `memory.usage_in_bytes` via `cgroup.event_control`) per memory threshold wakes the eviction manager as soon as usage crosses it; on cgroup v2 the notifier is disabled, as upstream's (`disabledThresholdNotifier`): logged at start, the manager observes memory every 10s",
            &[
                "crates/kubelet-rs/tests/cluster_eviction.rs::memcg_notification_wakes_the_manager",
                "crates/eviction/src/threshold_notifier_tests.rs::real_cgroup_v1_notification_arrives",
                "crates/eviction/src/threshold_notifier_tests.rs::update_threshold",
                "crates/eviction/src/manager_tests.rs::memcg_notifiers_are_armed_after_synchronize_and_trigger_a_round",
                "crates/eviction/src/threshold_notifier_tests.rs::cgroup_v2_notifiers_are_disabled",
            ],
        ),
    ),
    f(
        "logging.format",
        Some("logging-format"),
        done(&[
            "crates/klog/src/format.rs::json_object_has_component_base_keys",
            "crates/klog/src/format.rs::text_line_matches_klog_layout",
        ]),
    ),
    f(
        "logging.flushFrequency",
        Some("log-flush-frequency"),
        ignored("flushes buffered log output this often (kubelet-rs writes every line at once)"),
    ),
    f(
        "logging.verbosity",
        Some("v"),
        done(&["crates/klog/src/format.rs::verbosity_filters"]),
    ),
    f(
        "logging.vmodule",
        Some("vmodule"),
        // Proof provided by the `cheap` branch (per-file verbosity in kubelet-klog).
        done(&["crates/klog/src/lib.rs::vmodule_raises_verbosity_per_file"]),
    ),
    f(
        "logging.options.text.splitStream",
        Some("log-text-split-stream"),
        ignored("writes info messages to stdout and errors to stderr"),
    ),
    f(
        "logging.options.text.infoBufferSize",
        Some("log-text-info-buffer-size"),
        ignored("buffers this much info output when splitStream is on"),
    ),
    f(
        "logging.options.json.splitStream",
        Some("log-json-split-stream"),
        ignored("writes info messages to stdout and errors to stderr"),
    ),
    f(
        "logging.options.json.infoBufferSize",
        Some("log-json-info-buffer-size"),
        ignored("buffers this much info output when splitStream is on"),
    ),
    f(
        "enableSystemLogHandler",
        None,
        done(&[
            "crates/server/src/logs_tests.rs::serves_files_and_lists_directories_as_go_file_server",
            "crates/server/src/debug.rs::disabled_handlers_answer_405_as_upstream",
        ]),
    ),
    f(
        "enableSystemLogQuery",
        None,
        done(&[
            "crates/server/src/journal_tests.rs::logs_handler_in_query_mode",
            "crates/app/src/kubelet/support_proofs.rs::enable_system_log_query_reaches_the_secure_server",
        ]),
    ),
    f(
        "shutdownGracePeriod",
        None,
        done_with_note(
            SHUTDOWN_NOTE,
            &[
                SHUTDOWN_BANDS,
                SHUTDOWN_STATUS,
                SHUTDOWN_MIGRATE,
                SHUTDOWN_CONFIG,
                SHUTDOWN_DBUS,
                SHUTDOWN_NO_BUS,
                SHUTDOWN_NO_BUS_REAL,
                SHUTDOWN_RECONNECT,
                SHUTDOWN_NOT_READY,
                SHUTDOWN_CLUSTER,
            ],
        ),
    ),
    f(
        "shutdownGracePeriodCriticalPods",
        None,
        done_with_note(
            SHUTDOWN_NOTE,
            &[
                SHUTDOWN_BANDS,
                SHUTDOWN_MIGRATE,
                SHUTDOWN_CONFIG,
                SHUTDOWN_DBUS,
            ],
        ),
    ),
    f(
        "shutdownGracePeriodByPodPriority",
        None,
        done_with_note(
            SHUTDOWN_NOTE,
            &[
                SHUTDOWN_GROUPS,
                SHUTDOWN_ORDER,
                SHUTDOWN_CONFIG,
                SHUTDOWN_REAL,
            ],
        ),
    ),
    f(
        "crashLoopBackOff.maxContainerRestartPeriod",
        None,
        // Proof provided by the `cheap` branch (back-off cap from the configuration).
        done(&[
            "crates/app/src/kubelet/crash_loop.rs::crashloop_max_container_restart_period_caps_backoff",
        ]),
    ),
    f(
        "reservedMemory",
        Some("reserved-memory"),
        done_with_note(
            "with memoryManagerPolicy `Static`: checked at start as upstream's `NewManager` does (every NUMA node must exist; the sum per resource, `memory` and `hugepages-<size>`, must equal kube-reserved + system-reserved + the hard eviction threshold; upstream's errors), then each node's reservation is left out of what the memory manager allocates; with `None` it is not looked at, as upstream",
            &[
                "crates/memorymanager/src/manager_tests.rs::validate_reserved_memory_table",
                "crates/app/src/kubelet/memory_manager.rs::reserved_memory_must_match_node_allocatable",
                "crates/kubelet-rs/tests/process.rs::memory_manager_configurations_upstream_refuses_stop_the_start",
            ],
        ),
    ),
    f(
        "enableProfilingHandler",
        None,
        Support::Partial {
            works: "`false` answers 405 \"profiling endpoint is disabled.\" on /debug/pprof/; `true` serves /debug/pprof/cmdline",
            upstream: "`true` (the default) also serves Go's runtime profiles (profile, heap, goroutine, allocs, block, mutex, threadcreate, trace, symbol), which kubelet-rs answers with 501",
            proof: &[
                "crates/server/src/debug.rs::pprof_serves_index_and_cmdline_and_says_what_it_cannot",
                "crates/server/src/debug.rs::disabled_handlers_answer_405_as_upstream",
            ],
            unsupported: is_true,
        },
    ),
    f(
        "enableDebugFlagsHandler",
        None,
        done(&[
            "crates/server/src/debug.rs::debug_flags_v_sets_the_verbosity",
            "crates/server/src/debug.rs::disabled_handlers_answer_405_as_upstream",
        ]),
    ),
    f(
        "seccompDefault",
        None,
        done(&[
            RUNTIME_SETTINGS,
            "crates/runtime/src/security_tests.rs::seccomp_selection",
        ]),
    ),
    f(
        "memoryThrottlingFactor",
        None,
        // With the MemoryQoS gate on cgroup v2: containers' memory.high (and memory.min of
        // the containers, pod, QoS and reserved cgroups).
        done(&[
            "crates/runtime/src/resources.rs::memory_qos_sets_memory_min_and_high",
            "crates/app/src/kubelet/pod_cgroups.rs::memory_qos_sets_memory_min_of_pod_and_qos_cgroups",
            "crates/cm/src/node_allocatable_tests.rs::memory_qos_sets_memory_min_of_reserved_cgroups",
        ]),
    ),
    f(
        "registerWithTaints",
        Some("register-with-taints"),
        done(&[INITIAL_NODE, NODE_E2E]),
    ),
    f(
        "registerNode",
        Some("register-node"),
        done(&[NODE_REGISTERED, NODE_NOT_REGISTERED]),
    ),
    f(
        "tracing.endpoint",
        None,
        ignored(
            "with the KubeletTracing gate, exports OpenTelemetry spans (CRI calls, pod syncs) to this collector",
        ),
    ),
    f(
        "tracing.samplingRatePerMillion",
        None,
        ignored("with the KubeletTracing gate, samples this many spans per million"),
    ),
    f(
        "localStorageCapacityIsolation",
        Some("local-storage-capacity-isolation"),
        done(&[
            "crates/eviction/src/manager_tests.rs::local_storage_eviction_empty_dir_size_limit",
            "crates/eviction/src/manager_tests.rs::local_storage_eviction_pod_ephemeral_storage_limit",
            "crates/eviction/src/manager_tests.rs::local_storage_eviction_container_ephemeral_storage_limit",
            "crates/eviction/src/manager_tests.rs::local_storage_eviction_off_without_capacity_isolation",
            "crates/nodestatus/src/tests.rs::without_local_storage_capacity_isolation_no_ephemeral_storage_is_reported",
            "crates/app/src/kubelet/support_proofs.rs::admission_allocatable_ephemeral_storage_follows_local_storage_settings",
            "crates/admission/src/predicate_tests.rs::ephemeral_storage_requests_fit_against_allocatable",
            "crates/kubelet-rs/tests/cluster_local_storage.rs::empty_dir_over_size_limit_is_evicted_other_pod_keeps_running",
        ]),
    ),
    f(
        "containerRuntimeEndpoint",
        Some("container-runtime-endpoint"),
        done(&[
            "crates/cri/src/remote/endpoint.rs::unix_url_and_bare_path",
            "crates/kubelet-rs/tests/process.rs::runtime_socket_absent_is_a_clear_error",
        ]),
    ),
    f(
        "imageServiceEndpoint",
        Some("image-service-endpoint"),
        done(&[
            "crates/cri/src/remote/endpoint.rs::image_endpoint_falls_back_to_runtime_endpoint",
            "crates/cri/src/preinit_tests.rs::pre_init_validates_the_image_service_too",
        ]),
    ),
    f(
        "failCgroupV1",
        Some("fail-cgroupv1"),
        done(&["crates/config/src/validation/tests/host.rs::cgroup_v1_host"]),
    ),
    f(
        "userNamespaces.idsPerPod",
        None,
        done(&[
            "crates/app/src/kubelet/support_proofs.rs::user_namespaces_ids_per_pod_sizes_the_pods_user_namespaces",
        ]),
    ),
];
