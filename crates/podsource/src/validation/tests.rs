#![allow(clippy::unwrap_used, clippy::panic)]

use super::*;
use crate::decode::decode_pod;
use crate::defaults::set_defaults_pod;

fn errors(yaml_spec: &str) -> Vec<String> {
    let y = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: default\nspec:\n{yaml_spec}"
    );
    let mut pod = decode_pod(y.as_bytes()).unwrap().value;
    set_defaults_pod(&mut pod);
    validate_pod_create(&pod)
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn assert_has(errs: &[String], want: &str) {
    assert!(
        errs.iter().any(|e| e == want),
        "missing {want:?} in {errs:#?}"
    );
}

const OK: &str = "  containers:\n  - name: c\n    image: i\n";

#[test]
fn valid_pod_has_no_errors() {
    assert_eq!(errors(OK), Vec::<String>::new());
}

#[test]
fn containers_required_and_names_checked() {
    assert_eq!(
        errors("  containers: []\n"),
        ["spec.containers: Required value"]
    );
    let errs = errors(
        "  initContainers:\n  - name: c\n    image: i\n  containers:\n  - name: c\n    image: i\n  - image: i\n  - name: Bad_Name\n    image: i\n",
    );
    assert_has(&errs, "spec.containers[0].name: Duplicate value: \"c\"");
    assert_has(&errs, "spec.containers[1].name: Required value");
    assert!(errs.iter().any(|e| e.starts_with(
        "spec.containers[2].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label"
    )));
}

#[test]
fn lists_every_problem_with_its_path() {
    let errs = errors(
        "  restartPolicy: Sometimes\n  dnsPolicy: Weird\n  terminationGracePeriodSeconds: -1\n  containers:\n  - name: c\n    image: ''\n    imagePullPolicy: Sometimes\n    ports:\n    - containerPort: 70000\n      protocol: ICMP\n    - containerPort: 80\n      hostPort: 0\n      name: Not_IANA\n    env:\n    - name: A=B\n    - value: x\n",
    );
    assert_has(&errs, "spec.containers[0].image: Required value");
    assert_has(
        &errs,
        "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
    );
    assert!(
        errs.iter()
            .any(|e| e.starts_with("spec.dnsPolicy: Unsupported value: \"Weird\""))
    );
    assert_has(
        &errs,
        "spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0",
    );
    assert!(
        errs.iter()
            .any(|e| e.starts_with("spec.containers[0].imagePullPolicy: Unsupported value"))
    );
    assert_has(
        &errs,
        "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
    );
    assert!(errs.iter().any(|e| {
        e.starts_with("spec.containers[0].ports[0].protocol: Unsupported value: \"ICMP\"")
    }));
    assert!(errs.iter().any(|e| e.starts_with("spec.containers[0].ports[1].name: Invalid value: \"Not_IANA\"")));
    assert!(
        errs.iter()
            .any(|e| e.starts_with("spec.containers[0].env[0].name: Invalid value: \"A=B\""))
    );
    assert_has(&errs, "spec.containers[0].env[1].name: Required value");
    assert_eq!(errs.len(), 10, "{errs:#?}");
}

#[test]
fn resources_parse_and_requests_within_limits() {
    let errs = errors(
        "  containers:\n  - name: c\n    image: i\n    resources:\n      requests:\n        cpu: '2'\n        memory: lots\n      limits:\n        cpu: '1'\n        ephemeral-storage: '-1'\n",
    );
    assert_has(
        &errs,
        "spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
    );
    assert!(errs.iter().any(|e| e.starts_with("spec.containers[0].resources.requests[memory]: Invalid value: \"lots\": quantities must match")));
    assert_has(
        &errs,
        "spec.containers[0].resources.limits[ephemeral-storage]: Invalid value: \"-1\": must be greater than or equal to 0",
    );
    // Requests default to limits, so the negative limit shows up twice, like upstream.
    assert_has(
        &errs,
        "spec.containers[0].resources.requests[ephemeral-storage]: Invalid value: \"-1\": must be greater than or equal to 0",
    );
    assert_eq!(errs.len(), 4, "{errs:#?}");
}

#[test]
fn volumes_and_mounts() {
    let errs = errors(
        "  volumes:\n  - name: data\n    hostPath:\n      path: /data\n      type: Weird\n  - name: data\n  - name: both\n    hostPath:\n      path: /x\n    emptyDir: {}\n  containers:\n  - name: c\n    image: i\n    volumeMounts:\n    - name: data\n      mountPath: /a\n    - name: missing\n      mountPath: /a\n    - name: data\n",
    );
    assert!(
        errs.iter()
            .any(|e| e.starts_with("spec.volumes[0].hostPath.type: Unsupported value: \"Weird\""))
    );
    assert_has(&errs, "spec.volumes[1].name: Duplicate value: \"data\"");
    assert_has(
        &errs,
        "spec.volumes[2]: Forbidden: may not specify more than 1 volume type",
    );
    assert_has(
        &errs,
        "spec.containers[0].volumeMounts[1].name: Not found: \"missing\"",
    );
    assert_has(
        &errs,
        "spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/a\": must be unique",
    );
    assert_has(
        &errs,
        "spec.containers[0].volumeMounts[2].mountPath: Required value",
    );
    assert_eq!(errs.len(), 6, "{errs:#?}");
}

#[test]
fn metadata_and_misc_spec_rules() {
    let y = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad_Name\n  namespace: Not.A.Label\n  labels:\n    'bad key!': v\nspec:\n  containers:\n  - name: c\n    image: i\n";
    let mut pod = decode_pod(y.as_bytes()).unwrap().value;
    set_defaults_pod(&mut pod);
    let errs: Vec<String> = validate_pod_create(&pod)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        errs.iter()
            .any(|e| e.starts_with("metadata.name: Invalid value: \"Bad_Name\""))
    );
    assert!(
        errs.iter()
            .any(|e| e.starts_with("metadata.namespace: Invalid value: \"Not.A.Label\""))
    );
    assert!(
        errs.iter()
            .any(|e| e.starts_with("metadata.labels: Invalid value: \"bad key!\""))
    );

    let errs = errors(
        "  ephemeralContainers:\n  - name: e\n    image: i\n  hostNetwork: true\n  tolerations:\n  - operator: Exists\n    value: v\n  - key: k\n    effect: NoSchedule\n    tolerationSeconds: 3\n  containers:\n  - name: c\n    image: i\n    ports:\n    - containerPort: 80\n      hostPort: 81\n    livenessProbe:\n      successThreshold: 2\n",
    );
    assert_has(
        &errs,
        "spec.ephemeralContainers: Forbidden: cannot be set on create",
    );
    assert_has(
        &errs,
        "spec.containers[0].ports[0].hostPort: Invalid value: 81: must match `containerPort` when `hostNetwork` is true",
    );
    assert_has(
        &errs,
        "spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'",
    );
    assert_has(
        &errs,
        "spec.tolerations[1].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
    );
    assert_has(
        &errs,
        "spec.containers[0].livenessProbe: Required value: must specify a handler type",
    );
    assert_has(
        &errs,
        "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
    );
}

#[test]
fn duplicate_host_ports_are_reported() {
    let errs = errors(
        "  containers:\n  - name: a\n    image: i\n    ports:\n    - containerPort: 80\n      hostPort: 8080\n  - name: b\n    image: i\n    ports:\n    - containerPort: 81\n      hostPort: 8080\n    - containerPort: 81\n      hostPort: 8080\n      protocol: UDP\n",
    );
    assert_eq!(
        errs,
        ["spec.containers[1].ports[0].hostPort: Duplicate value: \"8080/TCP\""]
    );
}

#[test]
fn container_restart_policies() {
    let errs = errors(
        "  initContainers:\n  - name: sidecar\n    image: i\n    restartPolicy: Always\n  containers:\n  - name: c\n    image: i\n    restartPolicy: Never\n  - name: d\n    image: i\n    restartPolicy: Sometimes\n",
    );
    assert_eq!(
        errs,
        [
            "spec.containers[1].restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"Never\", \"OnFailure\""
        ]
    );
}

/// Upstream `validateContainerRestartPolicy` / `validateInitContainerRestartPolicy` with
/// `ContainerRestartRules` on (its 1.35 default) and off.
#[test]
fn container_restart_policy_rules() {
    let rule = |action: &str, op: &str| {
        format!(
            "    - action: {action}\n      exitCodes:\n        operator: {op}\n        values: [42]\n"
        )
    };
    let ok = format!(
        "  restartPolicy: Never\n  initContainers:\n  - name: init\n    image: i\n    restartPolicy: OnFailure\n    restartPolicyRules:\n{}  containers:\n  - name: c\n    image: i\n    restartPolicy: Never\n    restartPolicyRules:\n{}{}",
        rule("Restart", "In"),
        rule("Restart", "In"),
        rule("Restart", "NotIn"),
    );
    assert_eq!(errors(&ok), Vec::<String>::new());

    let bad = format!(
        "  initContainers:\n  - name: side\n    image: i\n    restartPolicy: Always\n    restartPolicyRules:\n{}  - name: init\n    image: i\n    restartPolicyRules:\n{}  containers:\n  - name: c\n    image: i\n    restartPolicy: Never\n    restartPolicyRules:\n{}{}    - action: Restart\n  - name: d\n    image: i\n    restartPolicyRules:\n{}",
        rule("Restart", "In"),
        rule("Restart", "In"),
        rule("RestartAllContainers", "In"),
        rule("Restart", "Between"),
        rule("Restart", "In"),
    );
    assert_eq!(
        errors(&bad),
        [
            "spec.initContainers[0].restartPolicyRules: Forbidden: restartPolicyRules are not allowed for init containers with restart policy Always",
            "spec.initContainers[1].restartPolicy: Required value: must specify restartPolicy when restart rules are used",
            "spec.containers[0].restartPolicyRules[0].action: Unsupported value: \"RestartAllContainers\": supported values: \"Restart\"",
            "spec.containers[0].restartPolicyRules[1].exitCodes.operator: Unsupported value: \"Between\": supported values: \"In\", \"NotIn\"",
            "spec.containers[0].restartPolicyRules[2].exitCodes: Required value: must be specified",
            "spec.containers[1].restartPolicy: Required value: must specify restartPolicy when restart rules are used",
        ]
    );
    // `AllowRestartAllContainers` follows RestartAllContainersOnContainerExits (the
    // kubelet then refuses the pod at admission, naming the field).
    let restart_all = format!(
        "  restartPolicy: Never\n  containers:\n  - name: c\n    image: i\n    restartPolicy: Never\n    restartPolicyRules:\n{}",
        rule("RestartAllContainers", "In")
    );
    {
        let _gate = kubelet_container::gates::set_restart_all_containers_during_test(true);
        assert_eq!(errors(&restart_all), Vec::<String>::new());
    }
    assert_eq!(
        errors(&restart_all),
        [
            "spec.containers[0].restartPolicyRules[0].action: Unsupported value: \"RestartAllContainers\": supported values: \"Restart\""
        ]
    );
    let many = format!(
        "  containers:\n  - name: c\n    image: i\n    restartPolicy: Never\n    restartPolicyRules:\n{}",
        rule("Restart", "In").repeat(21)
    );
    assert_eq!(
        errors(&many),
        ["spec.containers[0].restartPolicyRules: Too long: may not be more than 20 bytes"]
    );

    // Gate off: only sidecars may set a container-level policy.
    let _gate = kubelet_container::gates::set_container_restart_rules_during_test(false);
    assert_eq!(
        errors(&ok),
        [
            "spec.initContainers[0].restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
            "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
        ]
    );
}

/// `validateFileKeySelector` and `validateFileKeyRefVolumes` (EnvFiles).
#[test]
fn file_key_refs_as_upstream_validates_them() {
    let env = |sel: &str| {
        format!(
            "  volumes:\n  - name: vol\n    emptyDir: {{}}\n  - name: hp\n    hostPath:\n      path: /tmp\n  initContainers:\n  - name: i\n    image: i\n  containers:\n  - name: c\n    image: i\n    env:\n    - name: A\n      value: a\n    - name: B\n      valueFrom:\n        fileKeyRef: {sel}\n"
        )
    };
    assert_eq!(
        errors(&env("{volumeName: vol, path: a/b.env, key: B}")),
        Vec::<String>::new()
    );
    // Absolute paths are allowed (joined below the volume), `..` is not.
    assert_eq!(
        errors(&env(
            "{volumeName: vol, path: /b.env, key: B, optional: true}"
        )),
        Vec::<String>::new()
    );
    let errs = errors(&env("{volumeName: vol, path: a/../../b, key: 'B=C'}"));
    assert_has(
        &errs,
        "spec.containers[0].env[1].valueFrom.fileKeyRef.path: Invalid value: \"a/../../b\": must not contain '..'",
    );
    assert!(
        errs.iter().any(|e| e.starts_with(
            "spec.containers[0].env[1].valueFrom.fileKeyRef.key: Invalid value: \"B=C\""
        )),
        "{errs:#?}"
    );
    let errs = errors(&env("{volumeName: '', path: '', key: ''}"));
    for f in ["key", "volumeName", "path"] {
        assert_has(
            &errs,
            &format!("spec.containers[0].env[1].valueFrom.fileKeyRef.{f}: Required value"),
        );
    }
    assert_has(
        &errors(&env("{volumeName: nope, path: b, key: B}")),
        "spec.containers[0].env[1].valueFrom.fileKeyRef.volumeName: Not found: \"nope\"",
    );
    assert_has(
        &errors(&env("{volumeName: hp, path: b, key: B}")),
        "spec.containers[0].env[1].valueFrom.fileKeyRef.volumeName: Invalid value: \"hp\": referenced volume must be of type emptyDir",
    );
    assert!(
        errors(&env("{volumeName: Bad_Vol, path: b, key: B}"))
            .iter()
            .any(|e| e.starts_with(
                "spec.containers[0].env[1].valueFrom.fileKeyRef.volumeName: Invalid value: \"Bad_Vol\""
            ))
    );
    // Init containers are checked too, with their own index.
    let init = "  volumes:\n  - name: hp\n    hostPath:\n      path: /tmp\n  initContainers:\n  - name: i\n    image: i\n    env:\n    - name: B\n      valueFrom:\n        fileKeyRef: {volumeName: hp, path: b, key: B}\n  containers:\n  - name: c\n    image: i\n";
    assert_has(
        &errors(init),
        "spec.initContainers[0].env[0].valueFrom.fileKeyRef.volumeName: Invalid value: \"hp\": referenced volume must be of type emptyDir",
    );
    // Together with another source.
    assert_has(
        &errors(&env(
            "{volumeName: vol, path: b, key: B}\n        fieldRef: {fieldPath: metadata.name}",
        )),
        "spec.containers[0].env[1].valueFrom: Invalid value: \"\": may not have more than one field specified at a time",
    );
}

/// `validatePodHostName` (HostnameOverride).
#[test]
fn hostname_override_as_upstream_validates_it() {
    let pod = |extra: &str| format!("{extra}{OK}");
    assert_eq!(
        errors(&pod("  hostnameOverride: my.host-name\n")),
        Vec::<String>::new()
    );
    assert_has(
        &errors(&pod("  hostnameOverride: h\n  setHostnameAsFQDN: true\n")),
        "spec.hostnameOverride: Forbidden: may not be specified when setHostnameAsFQDN is true",
    );
    assert_has(
        &errors(&pod("  hostnameOverride: h\n  hostNetwork: true\n")),
        "spec.hostnameOverride: Forbidden: may not be specified when hostNetwork is true",
    );
    let long = format!("  hostnameOverride: {}\n", "a".repeat(65));
    let errs = errors(&pod(&long));
    assert!(
        errs.iter()
            .any(|e| e.starts_with("spec.hostnameOverride: Too long: may not be more than 64")),
        "{errs:#?}"
    );
    // 64 is allowed (the kubelet cuts it to 63).
    assert_eq!(
        errors(&pod(&format!("  hostnameOverride: {}\n", "a".repeat(64)))),
        Vec::<String>::new()
    );
    assert!(
        errors(&pod("  hostnameOverride: Not_A_Name\n"))
            .iter()
            .any(|e| e.starts_with(
                "spec.hostnameOverride: Invalid value: \"Not_A_Name\": a lowercase RFC 1123 subdomain"
            ))
    );
    // An empty override is not a DNS subdomain either.
    assert!(
        errors(&pod("  hostnameOverride: ''\n"))
            .iter()
            .any(|e| e.starts_with("spec.hostnameOverride: Invalid value: \"\""))
    );
}

#[test]
fn supplemental_groups_policy_is_merge_or_strict() {
    let pod =
        |policy: &str| format!("  securityContext:\n    supplementalGroupsPolicy: {policy}\n{OK}");
    for policy in ["Merge", "Strict"] {
        assert_eq!(errors(&pod(policy)), Vec::<String>::new(), "{policy}");
    }
    assert_eq!(
        errors(&pod("Loose")),
        [
            "spec.securityContext.supplementalGroupsPolicy: Unsupported value: \"Loose\": supported values: \"Merge\", \"Strict\""
        ]
    );
}

/// `SetDefaults_Volume` (gate `ImageVolume`) and `validateImageVolumeSource`: the pull
/// policy follows the tag; the reference is required; with the gate off nothing is
/// defaulted and the missing pull policy is an error, as upstream validates ungated.
#[test]
fn image_volumes_as_upstream_defaults_and_validates_them() {
    let spec = |vols: &str| format!("  volumes:\n{vols}{OK}");
    let defaulted = |yaml: &str| {
        let y = format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n{yaml}");
        let mut pod = decode_pod(y.as_bytes()).unwrap().value;
        set_defaults_pod(&mut pod);
        pod.spec
            .unwrap()
            .volumes
            .unwrap()
            .into_iter()
            .map(|v| v.image.unwrap().pull_policy.unwrap_or_default())
            .collect::<Vec<_>>()
    };
    let three = spec(
        "  - name: a\n    image:\n      reference: busybox\n  - name: b\n    image:\n      reference: busybox:1.36\n  - name: c\n    image:\n      reference: busybox:1.36\n      pullPolicy: Never\n",
    );
    assert_eq!(defaulted(&three), ["Always", "IfNotPresent", "Never"]);
    assert_eq!(errors(&three), Vec::<String>::new());
    let errs = errors(&spec(
        "  - name: a\n    image:\n      pullPolicy: Sometimes\n",
    ));
    assert_has(&errs, "spec.volumes[0].image.reference: Required value");
    assert!(
        errs.iter()
            .any(|e| e
                .starts_with("spec.volumes[0].image.pullPolicy: Unsupported value: \"Sometimes\"")),
        "{errs:#?}"
    );
    let _gate = kubelet_container::gates::set_image_volume_during_test(false);
    assert_eq!(defaulted(&three), ["", "", "Never"]);
    assert_has(
        &errors(&three),
        "spec.volumes[0].image.pullPolicy: Required value",
    );
}
