#![allow(clippy::unwrap_used)]
use super::*;
use k8s_openapi::api::core::v1::{Capabilities, PodSpec};

fn pod(sc: Option<PodSecurityContext>, host_network: bool) -> Pod {
    Pod {
        spec: Some(PodSpec {
            security_context: sc,
            host_network: Some(host_network),
            share_process_namespace: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn effective_context_merges_pod_defaults() {
    let p = pod(
        Some(PodSecurityContext {
            run_as_user: Some(1000),
            fs_group: Some(2000),
            supplemental_groups: Some(vec![3000]),
            ..Default::default()
        }),
        true,
    );
    let c = Container {
        name: "c".into(),
        security_context: Some(SecurityContext {
            run_as_group: Some(10),
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                add: Some(vec!["NET_ADMIN".into()]),
                drop: Some(vec!["ALL".into()]),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let sc =
        container_security_context(&p, &c, &[42], Path::new("/var/lib/kubelet/seccomp"), false)
            .unwrap();
    assert_eq!(sc.run_as_user, Some(Int64Value { value: 1000 }));
    assert_eq!(sc.run_as_group, Some(Int64Value { value: 10 }));
    assert_eq!(sc.supplemental_groups, vec![2000, 3000, 42]);
    assert!(sc.no_new_privs);
    assert_eq!(sc.capabilities.unwrap().drop_capabilities, vec!["ALL"]);
    let ns = sc.namespace_options.unwrap();
    assert_eq!(
        (ns.network, ns.ipc, ns.pid),
        (
            NamespaceMode::Node as i32,
            NamespaceMode::Pod as i32,
            NamespaceMode::Pod as i32
        )
    );
    assert_eq!(sc.masked_paths.len(), DEFAULT_MASKED_PATHS.len());
    assert_eq!(
        sc.seccomp.unwrap().profile_type,
        ProfileType::Unconfined as i32
    );
}

#[test]
fn seccomp_selection() {
    let root = Path::new("/seccomp");
    let local = SeccompProfile {
        type_: "Localhost".into(),
        localhost_profile: Some("p.json".into()),
    };
    let pod_sc = PodSecurityContext {
        seccomp_profile: Some(local),
        ..Default::default()
    };
    let got = seccomp_profile(Some(&pod_sc), None, root, false).unwrap();
    assert_eq!(
        (got.profile_type, got.localhost_ref.as_str()),
        (ProfileType::Localhost as i32, "/seccomp/p.json")
    );
    let got = seccomp_profile(None, None, root, true).unwrap();
    assert_eq!(got.profile_type, ProfileType::RuntimeDefault as i32);
    let bad = PodSecurityContext {
        seccomp_profile: Some(SeccompProfile {
            type_: "Localhost".into(),
            localhost_profile: None,
        }),
        ..Default::default()
    };
    assert!(seccomp_profile(Some(&bad), None, root, false).is_err());
}

#[test]
fn run_as_non_root() {
    let p = pod(
        Some(PodSecurityContext {
            run_as_non_root: Some(true),
            ..Default::default()
        }),
        false,
    );
    let c = Container {
        name: "c".into(),
        ..Default::default()
    };
    let root = ImageUser {
        uid: Some(0),
        username: String::new(),
    };
    assert!(
        verify_run_as_non_root(&p, &c, &root)
            .unwrap_err()
            .to_string()
            .contains("image will run as root")
    );
    let named = ImageUser {
        uid: None,
        username: "nobody".into(),
    };
    assert!(
        verify_run_as_non_root(&p, &c, &named)
            .unwrap_err()
            .to_string()
            .contains("non-numeric")
    );
    assert!(
        verify_run_as_non_root(
            &p,
            &c,
            &ImageUser {
                uid: Some(65534),
                username: String::new()
            }
        )
        .is_ok()
    );
    let mut sc = LinuxContainerSecurityContext::default();
    apply_image_user(&mut sc, &named);
    assert_eq!(
        (sc.run_as_user, sc.run_as_username.as_str()),
        (None, "nobody")
    );
}
