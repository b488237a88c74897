#!/usr/bin/env python3
"""Writes retry's OCI image (an image layout, tarred) without a daemon or a registry.

One layer from scratch: the static binary as /usr/bin/retry (the entrypoint), a static
/bin/sh for crontab lines and hooks, the CA certificates and the zone database, and an
empty /tmp. Every file's owner, mode and time are fixed, so the same inputs give the
same bytes (the time is SOURCE_DATE_EPOCH, the commit's).

Usage: oci.py OUT.tar ARCH BINARY SH CA_FILE ZONEINFO_DIR VERSION
DIST_LEVEL sets the layer's gzip level (9 unless given).
"""

import datetime
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile

MEDIA = "application/vnd.oci.image"


def add_file(tar, name, data, mode, mtime):
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, mtime
    tar.addfile(info, io.BytesIO(data))


def add_dir(tar, name, mode, mtime):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, mtime
    tar.addfile(info)


def zone_files(root):
    """Every zone file under root, as (path relative to root, bytes), sorted; links followed."""
    found = []
    for dirpath, _, names in os.walk(root, followlinks=True):
        for name in names:
            path = os.path.join(dirpath, name)
            found.append((os.path.relpath(path, root), open(path, "rb").read()))
    return sorted(found)


def layer(binary, sh, ca_file, zoneinfo, mtime):
    """The root file system as an uncompressed tar, directories before what they hold."""
    files = {
        "usr/bin/retry": (open(binary, "rb").read(), 0o755),
        "bin/sh": (open(sh, "rb").read(), 0o755),
        "etc/ssl/certs/ca-certificates.crt": (open(ca_file, "rb").read(), 0o644),
    }
    for rel, data in zone_files(zoneinfo):
        files["usr/share/zoneinfo/" + rel] = (data, 0o644)
    dirs = {"tmp"}
    for name in files:
        parts = name.split("/")[:-1]
        dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(dirs | set(files)):
            if name in files:
                data, mode = files[name]
                add_file(tar, name, data, mode, mtime)
            else:
                # /tmp is the spool's and the state's fallback: sticky and open to all.
                add_dir(tar, name, 0o1777 if name == "tmp" else 0o755, mtime)
    return out.getvalue()


def blob(blobs, data):
    digest = hashlib.sha256(data).hexdigest()
    blobs["blobs/sha256/" + digest] = data
    return "sha256:" + digest


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def main():
    out, arch, binary, sh, ca_file, zoneinfo, version = sys.argv[1:8]
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    created = datetime.datetime.fromtimestamp(mtime, datetime.timezone.utc)
    created = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    raw = layer(binary, sh, ca_file, zoneinfo, mtime)
    packed = gzip.compress(raw, compresslevel=int(os.environ.get("DIST_LEVEL", "9")), mtime=0)
    blobs = {}
    layer_digest = blob(blobs, packed)
    labels = {
        "org.opencontainers.image.title": "retry",
        "org.opencontainers.image.version": version,
        "org.opencontainers.image.licenses": "MIT OR Apache-2.0",
    }
    config = {
        "created": created,
        "architecture": arch,
        "os": "linux",
        "config": {
            "Entrypoint": ["/usr/bin/retry"],
            "Env": ["PATH=/usr/local/bin:/usr/bin:/bin"],
            "WorkingDir": "/",
            "Labels": labels,
        },
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(raw).hexdigest()]},
        "history": [{"created": created, "created_by": "dist/oci.py"}],
    }
    config_bytes = canonical(config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MEDIA + ".manifest.v1+json",
        "config": {
            "mediaType": MEDIA + ".config.v1+json",
            "digest": blob(blobs, config_bytes),
            "size": len(config_bytes),
        },
        "layers": [
            {"mediaType": MEDIA + ".layer.v1.tar+gzip", "digest": layer_digest, "size": len(packed)}
        ],
        "annotations": labels,
    }
    manifest_bytes = canonical(manifest)
    index = {
        "schemaVersion": 2,
        "mediaType": MEDIA + ".index.v1+json",
        "manifests": [
            {
                "mediaType": MEDIA + ".manifest.v1+json",
                "digest": blob(blobs, manifest_bytes),
                "size": len(manifest_bytes),
                "platform": {"architecture": arch, "os": "linux"},
                "annotations": {"org.opencontainers.image.ref.name": version},
            }
        ],
    }
    entries = {
        "oci-layout": canonical({"imageLayoutVersion": "1.0.0"}),
        "index.json": canonical(index),
        **blobs,
    }
    with tarfile.open(out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in ["blobs", "blobs/sha256"]:
            add_dir(tar, name, 0o755, mtime)
        for name in sorted(entries):
            add_file(tar, name, entries[name], 0o644, mtime)


if __name__ == "__main__":
    main()
