//! Upstream `state/state_checkpoint_test.go`, plus byte-compatibility with files
//! written by the Go kubelet (`testdata/checkpoint`).
#![allow(clippy::unwrap_used)]

use super::checkpoint::CPUManagerCheckpointV1;
use super::*;

const TESTING_CHECKPOINT: &str = "cpumanager_checkpoint_test";

fn cs(cpus: &[usize]) -> CpuSet {
    cpus.iter().copied().collect()
}

fn assignments(pods: &[(&str, &[(&str, CpuSet)])]) -> ContainerCPUAssignments {
    pods.iter()
        .map(|(pod, containers)| {
            let containers = containers
                .iter()
                .map(|(c, cpus)| ((*c).to_owned(), cpus.clone()))
                .collect();
            ((*pod).to_owned(), containers)
        })
        .collect()
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/testdata/checkpoint/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn entries(pods: &[(&str, &[(&str, &str)])]) -> BTreeMap<String, BTreeMap<String, String>> {
    pods.iter()
        .map(|(pod, containers)| {
            let containers = containers
                .iter()
                .map(|(c, v)| ((*c).to_owned(), (*v).to_owned()))
                .collect();
            ((*pod).to_owned(), containers)
        })
        .collect()
}

#[test]
fn marshal_matches_go_bytes() {
    // Vectors printed by the Go program in testdata/checkpoint/README.md.
    let mut cp = CPUManagerCheckpoint::new("none", "", BTreeMap::new());
    assert_eq!(
        String::from_utf8(cp.marshal()).unwrap(),
        r#"{"policyName":"none","defaultCpuSet":"","checksum":1353318690}"#
    );
    let mut cp = CPUManagerCheckpoint::new("static", "0-1,4", BTreeMap::new());
    assert_eq!(
        String::from_utf8(cp.marshal()).unwrap(),
        r#"{"policyName":"static","defaultCpuSet":"0-1,4","checksum":3037107182}"#
    );
    let mut cp = CPUManagerCheckpoint::new(
        "static",
        "1-3",
        entries(&[
            ("pod-uid-2", &[("sidecar", "7"), ("app", "4-6")]),
            ("pod-uid-1", &[("container1", "0")]),
        ]),
    );
    assert_eq!(cp.marshal(), fixture("cpu_manager_state.go-v1.35"));
    let mut cp = CPUManagerCheckpoint::new("static", "", entries(&[("p", &[])]));
    assert_eq!(
        String::from_utf8(cp.marshal()).unwrap(),
        r#"{"policyName":"static","defaultCpuSet":"","entries":{"p":{}},"checksum":910851842}"#
    );
    let mut v1 = CPUManagerCheckpointV1 {
        policy_name: "static".into(),
        default_cpu_set: "1-3".into(),
        entries: [("containerid1", "4-6"), ("containerid0", "0")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        checksum: 0,
    };
    assert_eq!(v1.marshal(), fixture("cpu_manager_state.v1-layout"));
}

#[test]
fn go_escapes_html_characters() {
    let mut cp = CPUManagerCheckpoint::new("a<b>&c", "", BTreeMap::new());
    let text = String::from_utf8(cp.marshal()).unwrap();
    assert!(text.contains(r#""a\u003cb\u003e\u0026c""#), "{text}");
    assert_eq!(
        CPUManagerCheckpoint::unmarshal(text.as_bytes())
            .unwrap()
            .policy_name,
        "a<b>&c"
    );
}

#[test]
fn reads_a_file_written_by_go() {
    let store = FakeCheckpointStore::with_blob(
        CPU_MANAGER_STATE_FILE_NAME,
        &fixture("cpu_manager_state.go-v1.35"),
    );
    let state = StateCheckpoint::new(
        store,
        "/var/lib/kubelet/cpu_manager_state",
        CPU_MANAGER_STATE_FILE_NAME,
        "static",
        &ContainerMap::new(),
    )
    .unwrap();
    assert_eq!(state.get_default_cpu_set(), cs(&[1, 2, 3]));
    assert_eq!(
        state.get_cpu_assignments(),
        assignments(&[
            ("pod-uid-1", &[("container1", cs(&[0]))]),
            (
                "pod-uid-2",
                &[("app", cs(&[4, 5, 6])), ("sidecar", cs(&[7]))]
            ),
        ])
    );
    // Nothing was rewritten on restore.
    assert!(state.store().writes().is_empty());
    // The V1 layout migrates through the running containers.
    let store = FakeCheckpointStore::with_blob("cp", &fixture("cpu_manager_state.v1-layout"));
    let containers: ContainerMap = [
        ("containerid0", ("pod-a", "c0")),
        ("containerid1", ("pod-b", "c1")),
    ]
    .into_iter()
    .map(|(id, (p, c))| (id.to_owned(), (p.to_owned(), c.to_owned())))
    .collect();
    let state = StateCheckpoint::new(store, "cp", "cp", "static", &containers).unwrap();
    assert_eq!(
        state.get_cpu_assignments(),
        assignments(&[
            ("pod-a", &[("c0", cs(&[0]))]),
            ("pod-b", &[("c1", cs(&[4, 5, 6]))])
        ])
    );
}

#[test]
fn writes_what_go_writes() {
    let store = FakeCheckpointStore::new();
    let mut state = StateCheckpoint::new(
        store,
        "cp",
        CPU_MANAGER_STATE_FILE_NAME,
        "static",
        &ContainerMap::new(),
    )
    .unwrap();
    state.set_default_cpu_set(cs(&[1, 2, 3]));
    state.set_cpu_set("pod-uid-2", "app", cs(&[4, 5, 6]));
    state.set_cpu_set("pod-uid-2", "sidecar", cs(&[7]));
    state.set_cpu_set("pod-uid-1", "container1", cs(&[0]));
    assert_eq!(
        state.store().blob(CPU_MANAGER_STATE_FILE_NAME).unwrap(),
        fixture("cpu_manager_state.go-v1.35")
    );
    // One write at start (no checkpoint yet) and one per change.
    assert_eq!(state.store().writes().len(), 5);
}

fn restore(content: &str, policy: &str, containers: &ContainerMap) -> Result<StateMemory, String> {
    let dir = tempfile::tempdir().unwrap();
    let store = FileCheckpointStore::new(dir.path());
    if !content.trim().is_empty() {
        store.write(TESTING_CHECKPOINT, content.as_bytes()).unwrap();
    }
    let path = dir.path().join(TESTING_CHECKPOINT).display().to_string();
    let state = StateCheckpoint::new(store, &path, TESTING_CHECKPOINT, policy, containers)
        .map_err(|e| e.to_string())?;
    let mut mem = StateMemory::new();
    mem.set_default_cpu_set(state.get_default_cpu_set());
    mem.set_cpu_assignments(state.get_cpu_assignments());
    Ok(mem)
}

fn mem(default: CpuSet, a: ContainerCPUAssignments) -> StateMemory {
    let mut m = StateMemory::new();
    m.set_default_cpu_set(default);
    m.set_cpu_assignments(a);
    m
}

#[test]
fn test_checkpoint_state_restore() {
    let migration: ContainerMap = [
        ("containerID1", ("pod", "container1")),
        ("containerID2", ("pod", "container2")),
    ]
    .into_iter()
    .map(|(id, (p, c))| (id.to_owned(), (p.to_owned(), c.to_owned())))
    .collect();
    let none = ContainerMap::new();
    let cases: Vec<(&str, &str, &ContainerMap, &str, StateMemory)> = vec![
        (
            "Restore non-existing checkpoint",
            "",
            &none,
            "",
            StateMemory::new(),
        ),
        (
            "Restore default cpu set",
            r#"{
				"policyName": "none",
				"defaultCPUSet": "4-6",
				"entries": {},
				"checksum": 354655845
			}"#,
            &none,
            "",
            mem(cs(&[4, 5, 6]), ContainerCPUAssignments::new()),
        ),
        (
            "Restore valid checkpoint",
            r#"{
				"policyName": "none",
				"defaultCPUSet": "1-3",
				"entries": {
					"pod": {
						"container1": "4-6",
						"container2": "1-3"
					}
				},
				"checksum": 3610638499
			}"#,
            &none,
            "",
            mem(
                cs(&[1, 2, 3]),
                assignments(&[(
                    "pod",
                    &[
                        ("container1", cs(&[4, 5, 6])),
                        ("container2", cs(&[1, 2, 3])),
                    ],
                )]),
            ),
        ),
        (
            "Restore checkpoint with invalid checksum",
            r#"{
				"policyName": "none",
				"defaultCPUSet": "4-6",
				"entries": {},
				"checksum": 1337
			}"#,
            &none,
            "checkpoint is corrupted",
            StateMemory::new(),
        ),
        (
            "Restore checkpoint with invalid JSON",
            "{",
            &none,
            "unexpected end of JSON input",
            StateMemory::new(),
        ),
        (
            "Restore checkpoint with invalid policy name",
            r#"{
				"policyName": "other",
				"defaultCPUSet": "1-3",
				"entries": {},
				"checksum": 1394507217
			}"#,
            &none,
            r#"configured policy "none" differs from state checkpoint policy "other""#,
            StateMemory::new(),
        ),
        (
            "Restore checkpoint with unparsable default cpu set",
            r#"{
				"policyName": "none",
				"defaultCPUSet": "1.3",
				"entries": {},
				"checksum": 3021697696
			}"#,
            &none,
            r#"could not parse default cpu set "1.3": strconv.Atoi: parsing "1.3": invalid syntax"#,
            StateMemory::new(),
        ),
        (
            "Restore checkpoint with unparsable assignment entry",
            r#"{
				"policyName": "none",
				"defaultCPUSet": "1-3",
				"entries": {
					"pod": {
						"container1": "4-6",
						"container2": "asd"
					}
				},
				"checksum": 962272150
			}"#,
            &none,
            r#"could not parse cpuset "asd" for container "container2" in pod "pod": strconv.Atoi: parsing "asd": invalid syntax"#,
            StateMemory::new(),
        ),
        (
            "Restore checkpoint from checkpoint with v1 checksum",
            r#"{
				"policyName": "none",
				"defaultCPUSet": "1-3",
				"checksum": 1694838852
			}"#,
            &none,
            "",
            mem(cs(&[1, 2, 3]), ContainerCPUAssignments::new()),
        ),
        (
            "Restore checkpoint with migration",
            r#"{
				"policyName": "none",
				"defaultCPUSet": "1-3",
				"entries": {
					"containerID1": "4-6",
					"containerID2": "1-3"
				},
				"checksum": 3680390589
			}"#,
            &migration,
            "",
            mem(
                cs(&[1, 2, 3]),
                assignments(&[(
                    "pod",
                    &[
                        ("container1", cs(&[4, 5, 6])),
                        ("container2", cs(&[1, 2, 3])),
                    ],
                )]),
            ),
        ),
    ];
    for (description, content, containers, expected_error, expected) in cases {
        match restore(content, "none", containers) {
            Ok(got) => {
                assert!(expected_error.is_empty(), "{description}: no error");
                assert_eq!(got, expected, "{description}");
            }
            Err(err) => {
                assert!(!expected_error.is_empty(), "{description}: {err}");
                assert!(
                    err.contains("could not restore state from checkpoint"),
                    "{err}"
                );
                assert!(err.contains(expected_error), "{description}: {err}");
                assert!(err.contains("please drain this node"), "{err}");
            }
        }
    }
    // A V1 entry for a container that is not running.
    let err = restore(
        r#"{"policyName":"none","defaultCPUSet":"1-3","entries":{"gone":"4"},"checksum":0}"#,
        "none",
        &none,
    )
    .unwrap_err();
    assert!(
        err.contains("containerID 'gone' not found in initial containers list"),
        "{err}"
    );
}

#[test]
fn test_checkpoint_state_store() {
    let cases = [
        (
            "Store default cpu set",
            mem(cs(&[1, 2, 3]), ContainerCPUAssignments::new()),
        ),
        (
            "Store assignments",
            mem(
                CpuSet::new(),
                assignments(&[("pod", &[("container1", cs(&[1, 5, 8]))])]),
            ),
        ),
    ];
    for (description, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let new = || {
            StateCheckpoint::new(
                FileCheckpointStore::new(dir.path()),
                "p",
                TESTING_CHECKPOINT,
                "none",
                &ContainerMap::new(),
            )
            .unwrap()
        };
        let mut cs1 = new();
        cs1.set_default_cpu_set(expected.get_default_cpu_set());
        cs1.set_cpu_assignments(expected.get_cpu_assignments());
        let cs2 = new();
        assert_eq!(
            cs2.get_default_cpu_set(),
            expected.get_default_cpu_set(),
            "{description}"
        );
        assert_eq!(
            cs2.get_cpu_assignments(),
            expected.get_cpu_assignments(),
            "{description}"
        );
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [TESTING_CHECKPOINT], "{description}");
    }
}

#[test]
fn test_checkpoint_state_helpers() {
    let cases = [
        ("One container", vec![("c1", cs(&[0, 1]))]),
        (
            "Two containers",
            vec![("c1", cs(&[0, 1])), ("c2", cs(&[2, 3, 4, 5]))],
        ),
        (
            "Container without assigned cpus",
            vec![("c1", CpuSet::new())],
        ),
    ];
    for (description, containers) in cases {
        let mut state = StateCheckpoint::new(
            FakeCheckpointStore::new(),
            "p",
            TESTING_CHECKPOINT,
            "none",
            &ContainerMap::new(),
        )
        .unwrap();
        state.set_default_cpu_set(cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8]));
        for (container, set) in containers {
            state.set_cpu_set("pod", container, set.clone());
            assert_eq!(
                state.get_cpu_set("pod", container),
                Some(set),
                "{description}"
            );
            state.delete("pod", container);
            assert_eq!(state.get_cpu_set("pod", container), None, "{description}");
        }
        assert_eq!(
            state.get_cpu_set_or_default("pod", "c1"),
            cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8])
        );
    }
}

#[test]
fn test_checkpoint_state_clear() {
    let mut state = StateCheckpoint::new(
        FakeCheckpointStore::new(),
        "p",
        TESTING_CHECKPOINT,
        "none",
        &ContainerMap::new(),
    )
    .unwrap();
    state.set_default_cpu_set(cs(&[1, 5, 10]));
    state.set_cpu_assignments(assignments(&[("pod", &[("container1", cs(&[1, 4]))])]));
    state.clear_state();
    assert_eq!(state.get_default_cpu_set(), CpuSet::new());
    assert_eq!(state.get_cpu_set("pod", "container1"), None);
    let last = state.store().blob(TESTING_CHECKPOINT).unwrap();
    assert_eq!(
        String::from_utf8(last).unwrap(),
        r#"{"policyName":"none","defaultCpuSet":"","checksum":1353318690}"#
    );
}

#[test]
fn failed_writes_are_logged_not_fatal_after_start() {
    let mut state = StateCheckpoint::new(
        FakeCheckpointStore::new(),
        "p",
        TESTING_CHECKPOINT,
        "none",
        &ContainerMap::new(),
    )
    .unwrap();
    state.set_cpu_set("pod", "c", cs(&[1]));
    // A store whose writes fail refuses to start without a checkpoint.
    let failing = FakeCheckpointStore::failing("disk full");
    let err = StateCheckpoint::new(failing, "/x/cp", "cp", "none", &ContainerMap::new())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("disk full") && err.contains("\"/x/cp\""),
        "{err}"
    );
}

#[test]
fn state_memory_delete_drops_empty_pods() {
    let mut state = StateMemory::new();
    state.set_cpu_set("pod", "a", cs(&[1]));
    state.set_cpu_set("pod", "b", cs(&[2]));
    state.delete("pod", "a");
    assert_eq!(state.get_cpu_assignments().len(), 1);
    state.delete("pod", "b");
    assert!(state.get_cpu_assignments().is_empty());
    state.delete("other", "x");
}
