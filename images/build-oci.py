#!/usr/bin/env python3
"""Pack a root filesystem directory into a single-layer OCI image layout tar.

The output is deterministic: the same rootfs and arguments give the same bytes,
hence the same manifest digest (entries sorted, owner root, fixed mtime, no
compression). The tar is what `ctr images import` reads: an OCI layout whose
index.json lists one manifest descriptor per image name, each annotated with
`io.containerd.image.name` (the full name ctr creates) and
`org.opencontainers.image.ref.name` (the tag).

Prints the manifest digest (sha256:...) on stdout.
Standard library only (python3 >= 3.9).
"""

import argparse
import hashlib
import io
import json
import os
import stat
import sys
import tarfile

EPOCH = 0
CREATED = "1970-01-01T00:00:00Z"
MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = "application/vnd.oci.image.layer.v1.tar"


def _normalized(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = EPOCH
    info.pax_headers = {}
    return info


def build_layer(rootfs: str) -> bytes:
    """A tar of rootfs with sorted entries and normalized metadata."""
    paths = []
    for dirpath, dirnames, filenames in os.walk(rootfs):
        dirnames.sort()
        for name in dirnames + sorted(filenames):
            paths.append(os.path.join(dirpath, name))
    paths.sort(key=lambda p: os.path.relpath(p, rootfs))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path in paths:
            arcname = os.path.relpath(path, rootfs)
            info = _normalized(tar.gettarinfo(path, arcname))
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            elif stat.S_ISDIR(mode) or stat.S_ISLNK(mode):
                tar.addfile(info)
            else:
                raise SystemExit(f"build-oci: unsupported file type: {path}")
    return buf.getvalue()


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def image_config(args, layer_digest: str) -> dict:
    cfg = {"Env": args.env, "WorkingDir": args.workdir}
    if args.entrypoint:
        cfg["Entrypoint"] = json.loads(args.entrypoint)
    if args.cmd:
        cfg["Cmd"] = json.loads(args.cmd)
    if args.user:
        cfg["User"] = args.user
    return {
        "created": CREATED,
        "architecture": args.arch,
        "os": "linux",
        "config": cfg,
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        "history": [{"created": CREATED, "created_by": "kubelet-rs images/build-oci.py"}],
    }


def add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = _normalized(tarfile.TarInfo(name))
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def write_layout(out: str, blobs: dict, index: bytes) -> None:
    tmp = out + ".tmp"
    with tarfile.open(tmp, mode="w", format=tarfile.GNU_FORMAT) as tar:
        add_bytes(tar, "oci-layout", canonical({"imageLayoutVersion": "1.0.0"}))
        for d in sorted(blobs):
            add_bytes(tar, "blobs/sha256/" + d.split(":", 1)[1], blobs[d])
        add_bytes(tar, "index.json", index)
    os.replace(tmp, out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rootfs", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--name", action="append", required=True, help="full image name; repeatable")
    p.add_argument("--arch", default="amd64")
    p.add_argument("--entrypoint", default="", help="JSON array")
    p.add_argument("--cmd", default="", help="JSON array")
    p.add_argument("--user", default="")
    p.add_argument("--workdir", default="/")
    p.add_argument("--env", action="append", default=[])
    args = p.parse_args()
    if not os.path.isdir(args.rootfs):
        print(f"build-oci: --rootfs {args.rootfs}: not a directory", file=sys.stderr)
        return 2

    layer = build_layer(args.rootfs)
    layer_digest = digest(layer)
    config = canonical(image_config(args, layer_digest))
    manifest = canonical({
        "schemaVersion": 2,
        "mediaType": MT_MANIFEST,
        "config": {"mediaType": MT_CONFIG, "digest": digest(config), "size": len(config)},
        "layers": [{"mediaType": MT_LAYER, "digest": layer_digest, "size": len(layer)}],
    })
    manifest_digest = digest(manifest)
    descriptors = [
        {
            "mediaType": MT_MANIFEST,
            "digest": manifest_digest,
            "size": len(manifest),
            "platform": {"architecture": args.arch, "os": "linux"},
            "annotations": {
                "io.containerd.image.name": name,
                "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1],
            },
        }
        for name in args.name
    ]
    index = canonical({"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": descriptors})
    blobs = {layer_digest: layer, digest(config): config, manifest_digest: manifest}
    write_layout(args.out, blobs, index)
    print(manifest_digest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
