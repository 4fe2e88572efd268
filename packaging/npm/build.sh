#!/usr/bin/env bash
# Builds the npm packages of one release target from its release archive:
#
#   packaging/npm/build.sh TARGET TARBALL VERSION OUTDIR
#
# TARBALL is the agentci-TARGET.tar.gz that .github/workflows/release.yml packs (one file,
# `agentci`). Writes to OUTDIR, with `npm pack`:
#   agentci-<os>-<cpu>-VERSION.tgz  @agentci/<os>-<cpu>: the binary in bin/agentci, with the
#                                   `os`, `cpu` (and `libc`) npm installs it on, nothing else
#   agentci-VERSION.tgz             agentci: the launcher (bin/agentci.js) naming every
#                                   platform package, at VERSION, as an optional dependency
# The launcher is the same for every target. The platform packages are published first, then
# the launcher, so `npm i -g agentci` / `npx agentci` find the one that fits the machine (the
# layout of @openai/codex, esbuild and biome). Needs node, npm and tar.
set -euo pipefail

if [ $# -ne 4 ]; then
    echo "usage: $0 TARGET TARBALL VERSION OUTDIR" >&2
    exit 2
fi
target="$1"
tarball="$2"
version="$3"
outdir="$4"
here="$(cd "$(dirname "$0")" && pwd)"

# Rust target -> npm's process.platform, process.arch, and libc (empty: npm does not ask).
case "$target" in
    x86_64-unknown-linux-gnu) platform=linux cpu=x64 libc=glibc ;;
    aarch64-unknown-linux-gnu) platform=linux cpu=arm64 libc=glibc ;;
    x86_64-apple-darwin) platform=darwin cpu=x64 libc= ;;
    aarch64-apple-darwin) platform=darwin cpu=arm64 libc= ;;
    *)
        echo "$0: no npm package for the target $target (the launcher knows" \
            "x86_64/aarch64 Linux gnu and macOS); add it to build.sh and bin/agentci.js" >&2
        exit 2
        ;;
esac
if [[ ! "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
    echo "$0: $version is not a version (X.Y.Z, without the tag's v)" >&2
    exit 2
fi
[ -f "$tarball" ] || { echo "$0: no archive at $tarball" >&2; exit 2; }
mkdir -p "$outdir"
outdir="$(cd "$outdir" && pwd)"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

# The platform package: the archive's binary, and a package.json npm reads os/cpu/libc from.
mkdir -p "$stage/platform/bin"
tar -xzf "$tarball" -C "$stage/platform/bin" agentci
chmod 755 "$stage/platform/bin/agentci"
AGENTCI_PLATFORM="$platform" AGENTCI_CPU="$cpu" AGENTCI_LIBC="$libc" AGENTCI_VERSION="$version" \
    node "$here/manifest.js" platform >"$stage/platform/package.json"
cp "$here/launcher/README.md" "$stage/platform/README.md"

# The launcher: the same bin/agentci.js and manifest for every target.
mkdir -p "$stage/launcher/bin"
cp "$here/launcher/bin/agentci.js" "$stage/launcher/bin/agentci.js"
chmod 755 "$stage/launcher/bin/agentci.js"
cp "$here/launcher/README.md" "$stage/launcher/README.md"
AGENTCI_VERSION="$version" node "$here/manifest.js" launcher >"$stage/launcher/package.json"

for package in platform launcher; do
    (cd "$stage/$package" && npm pack --silent --pack-destination "$outdir" >/dev/null)
done
ls "$outdir"/agentci-"$platform-$cpu"-"$version".tgz "$outdir"/agentci-"$version".tgz
