#!/usr/bin/env python3
"""Builds the PyPI wheel of one release target from its release archive.

    python3 packaging/pypi/build_wheel.py TARGET TARBALL VERSION OUTDIR

TARBALL is the agentci-TARGET.tar.gz that .github/workflows/release.yml packs (one file,
`agentci`). The wheel holds that binary as `agentci-VERSION.data/scripts/agentci`, which pip,
pipx and uv install on PATH as `agentci` (the layout ruff's and uv's wheels have), plus
METADATA, WHEEL and RECORD. Its platform tag says where it runs: for a Linux build, the
manylinux tag of the newest glibc symbol version the binary needs (read from the binary, so
the tag follows how the release was really linked), musllinux for a musl build; for macOS the
oldest release Rust's target supports.

The wheel is written here rather than by maturin: maturin (`bindings = "bin"`) compiles the
crate itself, and the wheel must carry the very binary of the release archive, as the npm
packages and the tarballs do. A wheel is a zip file with a fixed layout (PEP 427, and the
binary distribution format spec); the standard library writes it. Python 3.8 or newer, no
packages.
"""

import base64
import hashlib
import io
import re
import sys
import tarfile
import zipfile
from pathlib import Path

NAME = "agentci"
SUMMARY = (
    "Run LLM coding agents unattended in CI: plan, execute under a permission policy, "
    "verify with checks, write a JSONL trace and JUnit XML."
)
HOMEPAGE = "https://github.com/agentci/agentci"

# Rust target -> (architecture as wheel tags spell it, how to tag it).
TARGETS = {
    "x86_64-unknown-linux-gnu": ("x86_64", "manylinux"),
    "aarch64-unknown-linux-gnu": ("aarch64", "manylinux"),
    "x86_64-unknown-linux-musl": ("x86_64", "musllinux_1_2"),
    "aarch64-unknown-linux-musl": ("aarch64", "musllinux_1_2"),
    # The oldest macOS each Rust target builds for (rustc's platform support list).
    "x86_64-apple-darwin": ("x86_64", "macosx_10_12"),
    "aarch64-apple-darwin": ("arm64", "macosx_11_0"),
}


def fail(message):
    sys.stderr.write(f"build_wheel.py: {message}\n")
    sys.exit(2)


def platform_tag(target, binary):
    arch, kind = TARGETS[target]
    if kind != "manylinux":
        return f"{kind}_{arch}"
    # The version needs of a dynamically linked ELF name the glibc versions it was linked
    # against (GLIBC_2.34, ...); the newest one is the oldest glibc it runs on.
    needed = [int(m) for m in re.findall(rb"GLIBC_2\.([0-9]+)", binary)]
    if not needed:
        fail(f"the {target} binary names no glibc version; is it linked statically (musl)?")
    return f"manylinux_2_{max(needed)}_{arch}"


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def main(argv):
    if len(argv) != 5:
        fail("usage: build_wheel.py TARGET TARBALL VERSION OUTDIR")
    target, tarball, version, outdir = argv[1], Path(argv[2]), argv[3], Path(argv[4])
    if target not in TARGETS:
        fail(f"no wheel for the target {target} (known: {', '.join(TARGETS)}); add it to TARGETS")
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", version):
        fail(f"{version} is not a version (X.Y.Z, without the tag's v)")
    with tarfile.open(tarball, "r:gz") as archive:
        member = archive.extractfile("agentci")
        if member is None:
            fail(f"{tarball} holds no file `agentci`")
        binary = member.read()

    tag = f"py3-none-{platform_tag(target, binary)}"
    dist_info = f"{NAME}-{version}.dist-info"
    readme = (
        f"# agentci\n\n{SUMMARY}\n\n"
        "```sh\npipx install agentci\nuvx agentci --version\n```\n\n"
        "This wheel carries the agentci binary of the GitHub release; it installs the "
        f"`agentci` command and no Python module. Documentation: {HOMEPAGE}\n"
    )
    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {version}\n"
        f"Summary: {SUMMARY}\n"
        f"Home-page: {HOMEPAGE}\n"
        "License: MIT OR Apache-2.0\n"
        f"Project-URL: Source, {HOMEPAGE}\n"
        "Requires-Python: >=3.7\n"
        "Description-Content-Type: text/markdown\n"
        f"\n{readme}"
    )
    wheel = (
        "Wheel-Version: 1.0\n"
        "Generator: agentci packaging/pypi/build_wheel.py\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {tag}\n"
    )
    files = [
        (f"{NAME}-{version}.data/scripts/agentci", binary, 0o755),
        (f"{dist_info}/METADATA", metadata.encode(), 0o644),
        (f"{dist_info}/WHEEL", wheel.encode(), 0o644),
    ]
    record = "".join(f"{record_line(path, data)}\n" for path, data, _ in files)
    record += f"{dist_info}/RECORD,,\n"
    files.append((f"{dist_info}/RECORD", record.encode(), 0o644))

    outdir.mkdir(parents=True, exist_ok=True)
    out = outdir / f"{NAME}-{version}-{tag}.whl"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as wheel_zip:
        for path, data, mode in files:
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel_zip.writestr(info, data)
    out.write_bytes(buffer.getvalue())
    print(out)


if __name__ == "__main__":
    main(sys.argv)
