//! Ports of upstream `pkg/api/v1/pod/util_test.go` (`TestIsContainerRestartable`,
//! `TestContainerHasRestartablePolicy`, `TestFindMatchingContainerRestartRule`).

#![allow(clippy::unwrap_used)]

use super::*;

fn container(policy: Option<&str>, rules: Vec<ContainerRestartRule>) -> Container {
    Container {
        name: "c".into(),
        restart_policy: policy.map(Into::into),
        restart_policy_rules: (!rules.is_empty()).then_some(rules),
        ..Container::default()
    }
}

fn spec(policy: Option<&str>) -> PodSpec {
    PodSpec {
        restart_policy: policy.map(Into::into),
        ..PodSpec::default()
    }
}

#[test]
fn is_container_restartable_table() {
    let without_codes = ContainerRestartRule {
        action: RESTART_RULE_ACTION_RESTART.into(),
        exit_codes: None,
    };
    let cases = [
        (
            "rule action Restart",
            Some("Never"),
            Some("Never"),
            vec![without_codes],
            true,
        ),
        (
            "container Always",
            Some("Never"),
            Some("Always"),
            vec![],
            true,
        ),
        (
            "container OnFailure",
            Some("Never"),
            Some("OnFailure"),
            vec![],
            true,
        ),
        (
            "container Never",
            Some("Always"),
            Some("Never"),
            vec![],
            false,
        ),
        ("pod Always", Some("Always"), None, vec![], true),
        ("pod OnFailure", Some("OnFailure"), None, vec![], true),
        ("pod Never", Some("Never"), None, vec![], false),
        ("pod default", None, None, vec![], true),
    ];
    for (name, pod, policy, rules, want) in cases {
        let got = is_container_restartable(&spec(pod), &container(policy, rules));
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn container_should_restart_table() {
    let r = RESTART_RULE_ACTION_RESTART;
    let cases = [
        (
            "rule In matches with Restart",
            Some("Never"),
            vec![restart_rule(r, "In", &[42, 50, 60])],
            None,
            42,
            true,
        ),
        (
            "rule NotIn matches with Restart",
            Some("Never"),
            vec![restart_rule(r, "NotIn", &[0, 1, 2])],
            None,
            99,
            true,
        ),
        (
            "rule In does not match: container policy",
            Some("Never"),
            vec![restart_rule(r, "In", &[10, 20])],
            None,
            30,
            false,
        ),
        (
            "rule NotIn does not match: container policy",
            Some("Never"),
            vec![restart_rule(r, "NotIn", &[10, 20])],
            None,
            10,
            false,
        ),
        // RestartAllContainersOnContainerExits off (its 1.35 default): container policy.
        (
            "RestartAllContainers with its gate off",
            Some("Never"),
            vec![restart_rule(
                RESTART_RULE_ACTION_RESTART_ALL_CONTAINERS,
                "In",
                &[42],
            )],
            None,
            42,
            false,
        ),
        (
            "container Always",
            Some("Always"),
            vec![],
            Some("Never"),
            0,
            true,
        ),
        (
            "container OnFailure exit 0",
            Some("OnFailure"),
            vec![],
            Some("Never"),
            0,
            false,
        ),
        (
            "container OnFailure exit 1",
            Some("OnFailure"),
            vec![],
            Some("Never"),
            1,
            true,
        ),
        (
            "container Never",
            Some("Never"),
            vec![],
            Some("Always"),
            1,
            false,
        ),
        ("pod Always", None, vec![], Some("Always"), 0, true),
        (
            "pod OnFailure exit 1",
            None,
            vec![],
            Some("OnFailure"),
            1,
            true,
        ),
        ("pod Never", None, vec![], Some("Never"), 1, false),
        ("no policies", None, vec![], None, 0, true),
    ];
    for (name, policy, rules, pod, code, want) in cases {
        let got = container_should_restart(&container(policy, rules), &spec(pod), code);
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn find_matching_container_restart_rule_table() {
    let r = RESTART_RULE_ACTION_RESTART;
    let rule_in = restart_rule(r, "In", &[42, 50, 60]);
    let rule_not_in = restart_rule(r, "NotIn", &[0, 1, 2]);
    let rule_in_42 = restart_rule(r, "In", &[42]);
    let cases = [
        ("In matches", vec![rule_in.clone()], 42, Some(&rule_in)),
        (
            "NotIn matches",
            vec![rule_not_in.clone()],
            99,
            Some(&rule_not_in),
        ),
        (
            "the first of two matching rules",
            vec![rule_in.clone(), rule_in_42.clone()],
            42,
            Some(&rule_in),
        ),
        ("no rule matches", vec![rule_in.clone()], 100, None),
        ("no rules", vec![], 42, None),
        (
            "no exit codes never matches",
            vec![ContainerRestartRule {
                action: r.into(),
                exit_codes: None,
            }],
            42,
            None,
        ),
        (
            "unknown operator",
            vec![restart_rule(r, "Between", &[42])],
            42,
            None,
        ),
    ];
    for (name, rules, code, want) in cases {
        let c = container(Some("Never"), rules);
        assert_eq!(
            find_matching_container_restart_rule(&c, code),
            want,
            "{name}"
        );
    }
}
