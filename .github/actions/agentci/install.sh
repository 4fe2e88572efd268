#!/usr/bin/env bash
# Installs agentci for the action, in two steps around actions/cache:
#
#   install.sh resolve   decide what to install and the cache key (GITHUB_OUTPUT)
#   install.sh install   download the release (SHA-256 checked) or build from source
#
# What gets installed: the release named by `version` (a tag such as v0.2.0, or `latest`);
# without one, the release of the action's own tag when the action is used at a release tag
# (agentci/agentci/.github/actions/agentci@v0.2.0); otherwise (a branch, a commit, this
# repository's own checkout) the action's own source, built with cargo. `from-source: true`
# always builds. A release without a binary for this runner is built from its tag; a binary
# whose SHA-256 does not match its published checksum is never installed.
#
# The cache key names the release tag, or, for a source build, agentci's version and the
# SHA-256 of Cargo.lock: a build is kept until the version or a dependency changes, not redone
# for every commit (a clean build takes minutes), so an action used at a branch runs the binary
# of the first commit built at that version; set `from-source` with a `version` tag, or use a
# release tag, to pin exactly what runs. The key never depends on github.action_ref, which is
# empty inside composite actions (actions/runner#2473).
set -euo pipefail

root="$RUNNER_TEMP/agentci"
source_dir="$GITHUB_ACTION_PATH/../../.."

fail() {
    echo "::error::agentci: $*"
    exit 1
}

# owner/repo and the ref the action was used at, from its path
# (.../_actions/{owner}/{repo}/{ref}/.github/actions/agentci); empty for a local action.
action_origin() {
    case "$GITHUB_ACTION_PATH" in
        */_actions/*/*/*/.github/actions/agentci)
            local rest="${GITHUB_ACTION_PATH##*/_actions/}"
            local owner="${rest%%/*}"
            rest="${rest#*/}"
            local repo="${rest%%/*}"
            rest="${rest#*/}"
            echo "$owner/$repo ${rest%%/*}"
            ;;
        *) echo " " ;;
    esac
}

# The Rust target triple of this runner, which names the release asset.
target() {
    local os arch
    case "$RUNNER_OS" in
        Linux) os=unknown-linux-gnu ;;
        macOS) os=apple-darwin ;;
        *) fail "runners on $RUNNER_OS are not supported (Linux and macOS are)" ;;
    esac
    arch="$(uname -m)"
    case "$arch" in
        arm64) arch=aarch64 ;;
        x86_64 | aarch64) ;;
        *) fail "no agentci build for $arch runners (x86_64 and aarch64 are built)" ;;
    esac
    echo "$arch-$os"
}

sha256() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$@"
    else
        shasum -a 256 "$@"
    fi
}

# The source build's cache key: agentci's version (the [package] table's `version`) and the
# SHA-256 of Cargo.lock, which together say what a build of this source compiles.
source_key() {
    local version lock
    version="$(awk -F'"' '/^\[package\]/ { in_package = 1; next }
        /^\[/ { in_package = 0 }
        in_package && /^version *=/ { print $2; exit }' "$source_dir/Cargo.toml")"
    [ -n "$version" ] || fail "cannot read agentci's version from $source_dir/Cargo.toml"
    [ -f "$source_dir/Cargo.lock" ] || fail "no Cargo.lock next to the action's source"
    lock="$(sha256 "$source_dir/Cargo.lock" | cut -c1-16)"
    echo "$version-$lock"
}

# The tag the `latest` release redirects to on GitHub.
latest_tag() {
    local url
    url="$(curl -fsSLI --retry 3 -o /dev/null -w '%{url_effective}' \
        "https://github.com/$1/releases/latest")" || fail "cannot ask GitHub for $1's latest release"
    case "$url" in
        */releases/tag/*) echo "${url##*/releases/tag/}" ;;
        *) echo "" ;;
    esac
}

resolve() {
    local origin action_repo action_ref repository tag mode key
    origin="$(action_origin)"
    action_repo="${origin% *}"
    action_ref="${origin#* }"
    repository="${REPOSITORY:-$action_repo}"
    repository="${repository:-${GITHUB_REPOSITORY:-}}"
    tag="${VERSION:-}"
    if [ -z "$tag" ] && [[ "$action_ref" =~ ^v[0-9]+\.[0-9]+\.[0-9]+ ]]; then
        tag="$action_ref"
    fi
    if [ "$tag" = latest ]; then
        [ -n "$repository" ] || fail "version: latest needs the repository input"
        tag="$(latest_tag "$repository")"
        [ -n "$tag" ] || fail "$repository has no release yet; set version to a tag or from-source: true"
    fi
    if [ "${FROM_SOURCE:-false}" = true ] || [ -z "$tag" ]; then
        mode=source
    else
        mode=release
    fi
    if [ "$mode" = source ] && [ -n "$tag" ]; then
        key="tag-$tag"
    elif [ "$mode" = source ]; then
        [ -f "$source_dir/Cargo.toml" ] \
            || fail "cannot find agentci's source next to the action; set the version input"
        key="source-$(source_key)"
    else
        key="release-$tag"
    fi
    {
        echo "mode=$mode"
        echo "tag=$tag"
        echo "repository=$repository"
        echo "target=$(target)"
        echo "key=$key"
    } >>"$GITHUB_OUTPUT"
    local what="${tag:-the source next to the action}"
    echo "agentci: will install $what ($mode, cache key $key)"
}

# Download URL -> FILE; prints the HTTP status (000 when the server was not reached).
download() {
    curl -sSL --retry 3 -o "$2" -w '%{http_code}' "$1" || true
}

install_release() {
    local base="${RELEASES_URL:-https://github.com/$REPOSITORY/releases/download}"
    local asset="agentci-$TARGET.tar.gz"
    local status
    status="$(download "$base/$TAG/$asset" "$root/$asset")"
    case "$status" in
        200) ;;
        404)
            echo "agentci: release $TAG has no binary for $TARGET; building it from source"
            build_tag
            return
            ;;
        *) fail "cannot download $base/$TAG/$asset (HTTP $status)" ;;
    esac
    status="$(download "$base/$TAG/$asset.sha256" "$root/$asset.sha256")"
    [ "$status" = 200 ] || fail "release $TAG publishes no checksum for $asset (HTTP $status); not installing an unchecked binary"
    local want got
    want="$(cut -d' ' -f1 <"$root/$asset.sha256")"
    got="$(sha256 "$root/$asset" | cut -d' ' -f1)"
    if [ "$want" != "$got" ]; then
        rm -f "$root/$asset"
        fail "the SHA-256 of $asset ($got) is not the published one ($want); not installing it"
    fi
    tar -xzf "$root/$asset" -C "$root/bin" agentci
    echo "agentci: installed release $TAG ($TARGET, SHA-256 $got)"
}

build_tag() {
    [ -n "$REPOSITORY" ] || fail "set the repository input to build $TAG from source"
    cargo install --locked --root "$root" --git "https://github.com/$REPOSITORY" --tag "$TAG" agentci
}

install() {
    mkdir -p "$root/bin"
    if [ "${CACHE_HIT:-}" = true ] && [ -x "$root/bin/agentci" ]; then
        echo "agentci: using the cached install ($KEY)"
    elif [ "$MODE" = release ]; then
        install_release
    elif [ -n "$TAG" ]; then
        echo "agentci: building $REPOSITORY at $TAG from source"
        build_tag
    else
        echo "agentci: building the action's own source"
        cargo install --locked --root "$root" --path "$source_dir"
    fi
    "$root/bin/agentci" --version
    echo "bin=$root/bin/agentci" >>"$GITHUB_OUTPUT"
}

case "${1:-}" in
    resolve) resolve ;;
    install) install ;;
    *) fail "install.sh: say resolve or install" ;;
esac
