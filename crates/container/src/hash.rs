//! Container spec hash (upstream `HashContainer` in `pkg/kubelet/container/helpers.go`).
//!
//! The kubelet stores the hash in the container's labels when it creates it
//! and compares on every sync: a different hash means the spec changed and
//! the container is restarted. Since Kubernetes 1.31 upstream hashes only the
//! fields that may change without a restart being implied by something else —
//! `name` and `image` (`pickFieldsToHash`) — so resizes and kubelet upgrades do
//! not restart containers. We do the same, bit for bit: Go's `json.Marshal` of
//! `{"image":<image>,"name":<name>}` (keys sorted, `<`, `>`, `&` escaped), printed the
//! way `hashutil.DeepHashObject`'s spew printer prints a `[]byte` with `%#v`
//! (`([]uint8)[123 34 ...]`), hashed with FNV-1a (32 bit) and widened to `u64`.
//! So containers started by the upstream kubelet keep their hash and are adopted, not
//! restarted, when kubelet-rs takes over a node (checked against upstream's
//! `TestHashContainer` vector, `0x8e45cbd0`).

use k8s_openapi::api::core::v1::Container as ApiContainer;

const FNV_OFFSET_BASIS: u32 = 0x811c_9dc5;
const FNV_PRIME: u32 = 0x0100_0193;

fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(FNV_OFFSET_BASIS, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(FNV_PRIME)
    })
}

/// Stable hash of the restart-relevant part of a container spec.
pub fn hash_container(container: &ApiContainer) -> u64 {
    let image = container.image.as_deref().unwrap_or_default();
    // serde_json::json! with string values cannot fail to serialize.
    let picked = serde_json::json!({ "image": image, "name": container.name });
    u64::from(fnv1a32(
        spew_bytes(&go_json(&picked.to_string())).as_bytes(),
    ))
}

/// Go's `json.Marshal` escapes HTML-sensitive characters that serde_json leaves alone.
fn go_json(json: &str) -> String {
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// spew's `%#v` of a `[]byte`: `([]uint8)[1 2 3]`.
fn spew_bytes(s: &str) -> String {
    let bytes: Vec<String> = s.bytes().map(|b| b.to_string()).collect();
    format!("([]uint8)[{}]", bytes.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(name: &str, image: &str) -> ApiContainer {
        ApiContainer {
            name: name.into(),
            image: Some(image.into()),
            ..ApiContainer::default()
        }
    }

    #[test]
    fn fnv_matches_reference_vectors() {
        assert_eq!(fnv1a32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a32(b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn matches_upstream_test_hash_container() {
        // pkg/kubelet/container/helpers_test.go TestHashContainer
        assert_eq!(
            hash_container(&container("test_container", "foo/image:v1")),
            0x8e45_cbd0
        );
        assert_eq!(go_json("a<b>&"), "a\\u003cb\\u003e\\u0026");
    }

    #[test]
    fn hash_depends_only_on_name_and_image() {
        let a = container("app", "busybox:1.36");
        let mut resized = a.clone();
        resized.args = Some(vec!["sleep".into()]);
        assert_eq!(hash_container(&a), hash_container(&resized));
        assert_ne!(
            hash_container(&a),
            hash_container(&container("app", "busybox:1.37"))
        );
        assert_ne!(
            hash_container(&a),
            hash_container(&container("app2", "busybox:1.36"))
        );
        assert_eq!(hash_container(&a), hash_container(&a.clone()), "stable");
    }
}
