#![allow(clippy::unwrap_used, clippy::panic, clippy::type_complexity)]
//! Upstream `state_checkpoint_test.go`, and checkpoints written by Go
//! (`testdata/checkpoint-vectors.json`, see `testdata/README.md`).

use super::*;
use kubelet_cpumanager::state::{CheckpointStore, FakeCheckpointStore};

fn vectors() -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/checkpoint-vectors.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Every Go-written checkpoint reads back, verifies, hashes to Go's input and writes
/// back to Go's exact bytes.
#[test]
fn go_written_checkpoints_round_trip_byte_for_byte() {
    for v in vectors() {
        let json = v["json"].as_str().unwrap();
        let hash_input = v["hash_input"].as_str().unwrap();
        let mut read = json.to_owned();
        if hash_input.contains("Entries:(state.ContainerMemoryAssignments)<nil>") {
            // Go hashed a nil `Entries` and left it out of the file; reading fills in an
            // empty map (`NewMemoryManagerCheckpoint`), so Go itself refuses such a file
            // (the kubelet never writes one). With an explicit null it verifies.
            assert!(matches!(
                MemoryManagerCheckpoint::unmarshal(json.as_bytes()),
                Err(CheckpointError::Corrupt { .. })
            ));
            read = json.replace(",\"checksum\"", ",\"entries\":null,\"checksum\"");
        }
        let cp = MemoryManagerCheckpoint::unmarshal(read.as_bytes()).unwrap();
        assert_eq!(cp.checksum, v["checksum"].as_u64().unwrap(), "{json}");
        assert_eq!(cp.hash_input(), v["hash_input"].as_str().unwrap());
        let mut again = cp.clone();
        assert_eq!(String::from_utf8(again.marshal()).unwrap(), json);
    }
}

fn big_state() -> (NUMANodeMap, ContainerMemoryAssignments) {
    let cp = MemoryManagerCheckpoint::unmarshal(vectors()[2]["json"].as_str().unwrap().as_bytes())
        .unwrap();
    (cp.machine_state().unwrap(), cp.entries().unwrap())
}

/// A checkpoint made from state is what Go writes for the same state (node 10 sorted
/// after 1 in the file, before it in the hash; `<`, `&`, `>` escaped).
#[test]
fn checkpoint_of_state_matches_go() {
    let v = &vectors()[2];
    let (ms, mut entries) = big_state();
    // Go's `nil` block list and nil affinity read as empty; drop the cases that differ.
    let pod = entries.get_mut("pod<&>").unwrap();
    pod.remove("nil");
    pod.remove("nilaff");
    let mut cp = MemoryManagerCheckpoint::new("Static", &ms, &entries);
    let out = String::from_utf8(cp.marshal()).unwrap();
    assert!(out.starts_with("{\"policyName\":\"Static\",\"machineState\":{\"0\":"));
    assert!(out.contains("\"1\":{"));
    assert!(out.find("\"10\":").unwrap() < out.find("\"2\":").unwrap());
    assert!(out.contains("\"pod\\u003c\\u0026\\u003e\""));
    let go = v["json"].as_str().unwrap();
    assert_eq!(
        out.split(",\"entries\"").next(),
        go.split(",\"entries\"").next()
    );
    // The empty checkpoint of the `None` policy.
    let mut none = MemoryManagerCheckpoint::new(
        "None",
        &NUMANodeMap::new(),
        &ContainerMemoryAssignments::new(),
    );
    assert_eq!(
        String::from_utf8(none.marshal()).unwrap(),
        vectors()[0]["json"].as_str().unwrap()
    );
}

/// `TestCheckpointStateRestore`.
#[test]
fn checkpoint_state_restore_table() {
    let (ms, entries) = big_state();
    let mut valid = MemoryManagerCheckpoint::new("Static", &ms, &entries);
    let valid = valid.marshal();
    let cases: Vec<(
        &str,
        Option<Vec<u8>>,
        &str,
        Result<(NUMANodeMap, ContainerMemoryAssignments), &str>,
    )> = vec![
        (
            "Restore non-existing checkpoint",
            None,
            "Static",
            Ok((NUMANodeMap::new(), ContainerMemoryAssignments::new())),
        ),
        (
            "Restore valid checkpoint",
            Some(valid.clone()),
            "Static",
            Ok((ms.clone(), entries.clone())),
        ),
        (
            "Restore checkpoint with invalid checksum",
            Some(
                String::from_utf8(valid.clone())
                    .unwrap()
                    .replace("\"checksum\":", "\"checksum\":1")
                    .into_bytes(),
            ),
            "Static",
            Err("checkpoint is corrupted"),
        ),
        (
            "Restore checkpoint with invalid JSON",
            Some(b"{".to_vec()),
            "Static",
            Err("unexpected end of JSON input"),
        ),
        (
            "Restore checkpoint with different policy",
            Some(valid),
            "None",
            Err(
                "[memorymanager] configured policy \"None\" differs from state checkpoint policy \"Static\"",
            ),
        ),
    ];
    for (name, blob, policy, want) in cases {
        let store = match &blob {
            Some(b) => FakeCheckpointStore::with_blob(MEMORY_MANAGER_STATE_FILE_NAME, b),
            None => FakeCheckpointStore::new(),
        };
        let got = StateCheckpoint::new(
            store,
            "/tmp/mm/memory_manager_state",
            MEMORY_MANAGER_STATE_FILE_NAME,
            policy,
        );
        match want {
            Ok((ms, entries)) => {
                let sc = got.unwrap();
                assert_eq!(sc.get_machine_state(), ms, "{name}");
                assert_eq!(sc.get_memory_assignments(), entries, "{name}");
                if blob.is_none() {
                    // A fresh checkpoint is written.
                    assert!(
                        sc.store().blob(MEMORY_MANAGER_STATE_FILE_NAME).is_some(),
                        "{name}"
                    );
                }
            }
            Err(msg) => {
                let err = got.err().unwrap().to_string();
                assert_eq!(
                    err,
                    format!(
                        "could not restore state from checkpoint: {msg}, please drain this node and delete the memory manager checkpoint file \"/tmp/mm/memory_manager_state\" before restarting Kubelet"
                    ),
                    "{name}"
                );
            }
        }
    }
}

/// `TestCheckpointStateStore` and `TestCheckpointStateHelpers`: every change is written;
/// a restored state equals what was stored.
#[test]
fn checkpoint_state_store_and_helpers() {
    let (ms, entries) = big_state();
    let store = FakeCheckpointStore::new();
    let mut sc =
        StateCheckpoint::new(store, "p", MEMORY_MANAGER_STATE_FILE_NAME, "Static").unwrap();
    sc.set_machine_state(ms.clone());
    sc.set_memory_assignments(entries.clone());
    let blob = sc.store().blob(MEMORY_MANAGER_STATE_FILE_NAME).unwrap();
    let restored = StateCheckpoint::new(
        FakeCheckpointStore::with_blob(MEMORY_MANAGER_STATE_FILE_NAME, &blob),
        "p",
        MEMORY_MANAGER_STATE_FILE_NAME,
        "Static",
    )
    .unwrap();
    assert_eq!(restored.get_machine_state(), ms);
    assert_eq!(restored.get_memory_assignments(), entries);
    let blocks = vec![Block {
        numa_affinity: vec![0],
        type_: "memory".into(),
        size: 7,
    }];
    sc.set_memory_blocks("pod", "container", blocks.clone());
    assert_eq!(sc.get_memory_blocks("pod", "container"), Some(blocks));
    assert_eq!(sc.get_memory_blocks("pod", "other"), None);
    sc.delete("pod", "container");
    assert!(!sc.get_memory_assignments().contains_key("pod"));
    // `TestCheckpointStateClear`.
    sc.clear_state();
    assert!(sc.get_machine_state().is_empty());
    assert!(sc.get_memory_assignments().is_empty());
    let cleared = MemoryManagerCheckpoint::unmarshal(
        &sc.store().blob(MEMORY_MANAGER_STATE_FILE_NAME).unwrap(),
    )
    .unwrap();
    assert!(cleared.machine_state().unwrap().is_empty());
    // A failing write is logged, the state still changes.
    let mut failing = StateCheckpoint::new(
        FakeCheckpointStore::new(),
        "p",
        MEMORY_MANAGER_STATE_FILE_NAME,
        "Static",
    )
    .unwrap();
    let _ = failing.store().write("x", b"");
    failing.set_machine_state(ms.clone());
    assert_eq!(failing.get_machine_state(), ms);
}

/// Go's `json.Unmarshal` leniency: field names in any case, unknown fields ignored,
/// type errors reported.
#[test]
fn unmarshal_follows_go() {
    let go = vectors()[2]["json"].as_str().unwrap().to_owned();
    let renamed = go
        .replace("policyName", "POLICYNAME")
        .replace("{\"policy", "{\"extra\":1,\"policy");
    let cp = MemoryManagerCheckpoint::unmarshal(renamed.as_bytes()).unwrap();
    assert_eq!(cp.policy_name, "Static");
    let err = MemoryManagerCheckpoint::unmarshal(b"{\"policyName\":1}")
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "json: cannot unmarshal number into Go struct field MemoryManagerCheckpoint.policyName of type string"
    );
    assert_eq!(
        MemoryManagerCheckpoint::unmarshal(b"[]")
            .err()
            .unwrap()
            .to_string(),
        "json: cannot unmarshal array into Go value of type state.MemoryManagerCheckpoint"
    );
}
