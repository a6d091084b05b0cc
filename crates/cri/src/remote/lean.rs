//! `ListPodSandbox`, `ListContainers` and `ListContainerStats` decoded for readers that need
//! few of the items' `labels` and `annotations`: the kubelet's own bookkeeping keeps only the
//! kubelet's `io.kubernetes.*` keys ([`KubeletKeys`], [`is_kubelet_key`]), the stats
//! requests none ([`NoKeys`]: their pods are named by the sandbox's metadata); every other
//! entry is skipped while decoding, without allocating.
//!
//! Not upstream (upstream's `GetPods` decodes every map entry and then reads only its own
//! keys). The PLEG relists both lists every second, and a sandbox carries all its pod's
//! labels and annotations (kubectl's `last-applied-configuration` among them), decoded into
//! hash maps each time for nothing. On plain pods, whose entries are nearly all the kubelet's,
//! it saves little (no CPU difference measurable on a node of 30 busybox pods). The items are
//! the generated types with the same values, so callers read them as before; only callers
//! that need nothing but the kubelet's keys use these lists
//! ([`RuntimeService::list_pod_sandbox_kubelet_keys`](crate::services::RuntimeService::list_pod_sandbox_kubelet_keys)).

use std::collections::HashMap;
use std::marker::PhantomData;

use prost::bytes::{Buf, BufMut};
use prost::encoding::{self, DecodeContext, WireType};
use prost::{DecodeError, Message};

use crate::v1::{Container, ContainerAttributes, ContainerStats, PodSandbox};

/// Prefix of the labels and annotations the kubelet writes (`kubetypes` and
/// `kuberuntime/labels.go`: `io.kubernetes.pod.uid`, `io.kubernetes.container.hash`, ...).
pub const KUBELET_KEY_PREFIX: &str = "io.kubernetes.";

/// Whether a label or annotation key is one of the kubelet's own.
pub fn is_kubelet_key(key: &[u8]) -> bool {
    key.starts_with(KUBELET_KEY_PREFIX.as_bytes())
}

/// Which map entries a lean decoding keeps.
pub(crate) trait Keep:
    std::fmt::Debug + Default + Clone + PartialEq + Send + Sync + 'static
{
    /// Whether the entry of this key is kept.
    fn keep(key: &[u8]) -> bool;
}

/// The kubelet's own keys ([`is_kubelet_key`]).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct KubeletKeys;

impl Keep for KubeletKeys {
    fn keep(key: &[u8]) -> bool {
        is_kubelet_key(key)
    }
}

/// No entry: the maps stay empty.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct NoKeys;

impl Keep for NoKeys {
    fn keep(_: &[u8]) -> bool {
        false
    }
}

/// Field numbers of the two maps in `PodSandbox` (5, 6), `Container` (8, 9) and
/// `ContainerAttributes` (3, 4).
const SANDBOX_MAPS: (u32, u32) = (5, 6);
const CONTAINER_MAPS: (u32, u32) = (8, 9);
const ATTRIBUTES_MAPS: (u32, u32) = (3, 4);

/// A `map<string, string>` entry as prost decodes it: the slow path, used when an entry is not
/// in one contiguous chunk or is not shaped as [`scan_entry`] expects, so that every error is
/// prost's own.
#[derive(Clone, PartialEq, prost::Message)]
struct MapEntry {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(string, tag = "2")]
    value: String,
}

/// Decodes one `map<string, string>` entry, inserting it only when `K` keeps its key.
fn merge_kept_entry<K: Keep>(
    map: &mut HashMap<String, String>,
    wire_type: WireType,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<(), DecodeError> {
    encoding::check_wire_type(WireType::LengthDelimited, wire_type)?;
    let chunk = buf.chunk();
    let mut rest = chunk;
    if let Ok(len) = encoding::decode_varint(&mut rest)
        && let Ok(len) = usize::try_from(len)
        && len <= rest.len()
    {
        let header = chunk.len() - rest.len();
        if let Some(kept) = kept_entry::<K>(&rest[..len])? {
            map.insert(kept.key, kept.value);
        }
        buf.advance(header + len);
        return Ok(());
    }
    let mut entry = MapEntry::default();
    encoding::message::merge(wire_type, &mut entry, buf, ctx)?;
    if K::keep(entry.key.as_bytes()) {
        map.insert(entry.key, entry.value);
    }
    Ok(())
}

/// The entry (its bytes without the length prefix) when `K` keeps its key.
fn kept_entry<K: Keep>(entry: &[u8]) -> Result<Option<MapEntry>, DecodeError> {
    match scan_entry(entry) {
        Some(key) if !K::keep(key) => Ok(None),
        // A kept key, or an entry shaped otherwise: prost decodes and checks it.
        _ => {
            let decoded = MapEntry::decode(entry)?;
            Ok(K::keep(decoded.key.as_bytes()).then_some(decoded))
        }
    }
}

/// [`kept_entry`] of the kubelet's keys.
#[cfg(test)]
fn kubelet_entry(entry: &[u8]) -> Result<Option<MapEntry>, DecodeError> {
    kept_entry::<KubeletKeys>(entry)
}

/// The key of an entry made only of well-formed fields 1 and 2 (what runtimes send), without
/// decoding or allocating; `None` for anything else.
fn scan_entry(mut entry: &[u8]) -> Option<&[u8]> {
    let mut key: &[u8] = &[];
    while entry.has_remaining() {
        let (tag, wire_type) = encoding::decode_key(&mut entry).ok()?;
        if !(tag == 1 || tag == 2) || wire_type != WireType::LengthDelimited {
            return None;
        }
        let len = usize::try_from(encoding::decode_varint(&mut entry).ok()?).ok()?;
        if len > entry.len() {
            return None;
        }
        let (field, rest) = entry.split_at(len);
        if tag == 1 {
            key = field;
        }
        entry = rest;
    }
    Some(key)
}

/// Implements `Message` for a wrapper of a generated item whose two map fields are decoded
/// by [`merge_kept_entry`]; every other field goes to the generated decoder.
macro_rules! lean_item {
    ($lean:ident, $item:ty, $maps:expr) => {
        #[derive(Debug, Default, Clone, PartialEq)]
        pub(crate) struct $lean<K: Keep>(pub $item, PhantomData<K>);

        impl<K: Keep> Message for $lean<K> {
            fn encode_raw(&self, buf: &mut impl BufMut) {
                self.0.encode_raw(buf)
            }

            fn merge_field(
                &mut self,
                tag: u32,
                wire_type: WireType,
                buf: &mut impl Buf,
                ctx: DecodeContext,
            ) -> Result<(), DecodeError> {
                let (labels, annotations) = $maps;
                if tag == labels {
                    merge_kept_entry::<K>(&mut self.0.labels, wire_type, buf, ctx)
                } else if tag == annotations {
                    merge_kept_entry::<K>(&mut self.0.annotations, wire_type, buf, ctx)
                } else {
                    self.0.merge_field(tag, wire_type, buf, ctx)
                }
            }

            fn encoded_len(&self) -> usize {
                self.0.encoded_len()
            }

            fn clear(&mut self) {
                self.0.clear()
            }
        }
    };
}

lean_item!(LeanSandbox, PodSandbox, SANDBOX_MAPS);
lean_item!(LeanContainer, Container, CONTAINER_MAPS);
lean_item!(LeanAttributes, ContainerAttributes, ATTRIBUTES_MAPS);

/// A `ContainerStats` whose `attributes` (field 1) are a [`LeanAttributes`].
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct LeanContainerStats<K: Keep>(pub ContainerStats, PhantomData<K>);

impl<K: Keep> Message for LeanContainerStats<K> {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        self.0.encode_raw(buf)
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        if tag == 1 {
            let attributes = self.0.attributes.take().unwrap_or_default();
            let mut lean = LeanAttributes::<K>(attributes, PhantomData);
            encoding::message::merge(wire_type, &mut lean, buf, ctx)?;
            self.0.attributes = Some(lean.0);
            Ok(())
        } else {
            self.0.merge_field(tag, wire_type, buf, ctx)
        }
    }

    fn encoded_len(&self) -> usize {
        self.0.encoded_len()
    }

    fn clear(&mut self) {
        self.0.clear()
    }
}

/// Implements `Message` for a list response whose field 1 repeats a lean item.
macro_rules! lean_list {
    ($list:ident, $lean:ident) => {
        #[derive(Debug, Default, Clone, PartialEq)]
        pub(crate) struct $list<K: Keep>(pub Vec<$lean<K>>);

        impl<K: Keep> Message for $list<K> {
            fn encode_raw(&self, buf: &mut impl BufMut) {
                encoding::message::encode_repeated(1, &self.0, buf)
            }

            fn merge_field(
                &mut self,
                tag: u32,
                wire_type: WireType,
                buf: &mut impl Buf,
                ctx: DecodeContext,
            ) -> Result<(), DecodeError> {
                if tag == 1 {
                    encoding::message::merge_repeated(wire_type, &mut self.0, buf, ctx)
                } else {
                    encoding::skip_field(wire_type, tag, buf, ctx)
                }
            }

            fn encoded_len(&self) -> usize {
                encoding::message::encoded_len_repeated(1, &self.0)
            }

            fn clear(&mut self) {
                self.0.clear()
            }
        }
    };
}

lean_list!(LeanListPodSandboxResponse, LeanSandbox);
lean_list!(LeanListContainersResponse, LeanContainer);
lean_list!(LeanListContainerStatsResponse, LeanContainerStats);

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use crate::v1::{
        ContainerMetadata, ImageSpec, ListContainersResponse, ListPodSandboxResponse,
        PodSandboxMetadata,
    };

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    const MIXED: &[(&str, &str)] = &[
        ("io.kubernetes.pod.uid", "uid-1"),
        ("io.kubernetes.container.hash", "abc"),
        ("app", "web"),
        ("kubernetes.io/config.source", "api"),
        ("io.kubernetes", "no trailing dot: not the kubelet's"),
        ("", ""),
    ];
    const KEPT: &[(&str, &str)] = &[
        ("io.kubernetes.pod.uid", "uid-1"),
        ("io.kubernetes.container.hash", "abc"),
    ];

    #[test]
    fn containers_keep_every_field_and_only_the_kubelets_keys() {
        let c = Container {
            id: "c1".into(),
            pod_sandbox_id: "s1".into(),
            metadata: Some(ContainerMetadata {
                name: "web".into(),
                attempt: 3,
            }),
            image: Some(ImageSpec {
                image: "busybox".into(),
                ..ImageSpec::default()
            }),
            image_ref: "sha256:1".into(),
            state: 1,
            created_at: 42,
            labels: map(MIXED),
            annotations: map(MIXED),
            image_id: "sha256:2".into(),
        };
        let full = ListContainersResponse {
            containers: vec![c.clone(), Container::default()],
        };
        let lean =
            LeanListContainersResponse::<KubeletKeys>::decode(full.encode_to_vec().as_slice())
                .expect("decodes");
        let expected = Container {
            labels: map(KEPT),
            annotations: map(KEPT),
            ..c
        };
        assert_eq!(lean.0.len(), 2);
        assert_eq!(lean.0[0].0, expected);
        assert_eq!(lean.0[1].0, Container::default());
    }

    #[test]
    fn sandboxes_keep_every_field_and_only_the_kubelets_keys() {
        let s = PodSandbox {
            id: "s1".into(),
            metadata: Some(PodSandboxMetadata {
                name: "p".into(),
                uid: "u".into(),
                namespace: "ns".into(),
                attempt: 1,
            }),
            state: 0,
            created_at: 7,
            labels: map(MIXED),
            annotations: map(MIXED),
            runtime_handler: "runc".into(),
        };
        let full = ListPodSandboxResponse {
            items: vec![s.clone()],
        };
        let lean =
            LeanListPodSandboxResponse::<KubeletKeys>::decode(full.encode_to_vec().as_slice())
                .expect("decodes");
        assert_eq!(
            lean.0[0].0,
            PodSandbox {
                labels: map(KEPT),
                annotations: map(KEPT),
                ..s
            }
        );
    }

    #[test]
    fn without_labels_every_field_but_the_maps_is_kept() {
        use crate::v1::{CpuUsage, ListContainerStatsResponse, UInt64Value};
        let attributes = ContainerAttributes {
            id: "c1".into(),
            metadata: Some(ContainerMetadata {
                name: "web".into(),
                attempt: 2,
            }),
            labels: map(MIXED),
            annotations: map(MIXED),
        };
        let stats = ContainerStats {
            attributes: Some(attributes.clone()),
            cpu: Some(CpuUsage {
                timestamp: 5,
                usage_core_nano_seconds: Some(UInt64Value { value: 9 }),
                ..CpuUsage::default()
            }),
            ..ContainerStats::default()
        };
        let full = ListContainerStatsResponse {
            stats: vec![stats.clone(), ContainerStats::default()],
        };
        let lean =
            LeanListContainerStatsResponse::<NoKeys>::decode(full.encode_to_vec().as_slice())
                .expect("decodes");
        let expected = ContainerStats {
            attributes: Some(ContainerAttributes {
                labels: HashMap::new(),
                annotations: HashMap::new(),
                ..attributes
            }),
            ..stats
        };
        assert_eq!(lean.0.len(), 2);
        assert_eq!(lean.0[0].0, expected);
        assert_eq!(lean.0[1].0, ContainerStats::default());
        let c = Container {
            id: "c1".into(),
            labels: map(MIXED),
            annotations: map(MIXED),
            created_at: 3,
            ..Container::default()
        };
        let full = ListContainersResponse {
            containers: vec![c.clone()],
        };
        let lean = LeanListContainersResponse::<NoKeys>::decode(full.encode_to_vec().as_slice())
            .expect("decodes");
        assert_eq!(
            lean.0[0].0,
            Container {
                labels: HashMap::new(),
                annotations: HashMap::new(),
                ..c
            }
        );
    }

    #[test]
    fn a_split_buffer_decodes_the_same() {
        let full = ListContainersResponse {
            containers: vec![Container {
                id: "c1".into(),
                labels: map(MIXED),
                ..Container::default()
            }],
        };
        let bytes = full.encode_to_vec();
        for cut in 1..bytes.len() {
            let (a, b) = bytes.split_at(cut);
            let lean =
                LeanListContainersResponse::<KubeletKeys>::decode(a.chain(b)).expect("decodes");
            assert_eq!(lean.0[0].0.labels, map(KEPT), "cut at {cut}");
            assert_eq!(lean.0[0].0.id, "c1");
        }
    }

    #[test]
    fn malformed_entries_are_errors_not_panics() {
        // Field 8 (labels), length 5, but only 2 bytes follow.
        let bad: &[u8] = &[0x0a, 0x04, 0x42, 0x05, 0x0a, 0x01];
        assert!(LeanListContainersResponse::<KubeletKeys>::decode(bad).is_err());
        // A key that is not UTF-8 and is not the kubelet's: skipped, not an error.
        let entry: &[u8] = &[0x0a, 0x01, 0xff, 0x12, 0x00];
        assert_eq!(kubelet_entry(entry).expect("skipped"), None);
        // The kubelet's key with a value that is not UTF-8: prost's error.
        let mut entry = vec![0x0a, 15];
        entry.extend_from_slice(b"io.kubernetes.x");
        entry.extend_from_slice(&[0x12, 0x01, 0xff]);
        assert!(kubelet_entry(&entry).is_err());
        // An entry with another field: decoded by prost, kept by its key.
        let mut entry = vec![0x0a, 15];
        entry.extend_from_slice(b"io.kubernetes.x");
        entry.extend_from_slice(&[0x18, 0x01, 0x12, 0x01, b'v']);
        let kept = kubelet_entry(&entry).expect("decodes").expect("kept");
        assert_eq!(
            (kept.key.as_str(), kept.value.as_str()),
            ("io.kubernetes.x", "v")
        );
    }
}
