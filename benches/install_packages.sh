#!/usr/bin/env bash
# How long the one-line installs take and how big they are, against @openai/codex and
# @anthropic-ai/claude-code in the same run:
#
#   benches/install_packages.sh [AGENTCI_BINARY]
#
# agentci's packages are built from an archive of AGENTCI_BINARY (default: the release build in
# $CARGO_TARGET_DIR or target/; debug info is stripped, as a release build has none) with
# packaging/npm/build.sh and packaging/pypi/build_wheel.py, as release.yml builds them; npm
# installs from a local verdaccio (tests/npm-registry, no uplink) with a cold cache, pip from the
# wheel file. codex and claude come from the public npm registry, also with a cold cache; when
# it cannot be reached, that half is skipped and says so. Linux x86_64/aarch64 only.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

target_dir="${CARGO_TARGET_DIR:-target}"
binary="${1:-$target_dir/release/agentci}"
if [ ! -x "$binary" ]; then
    echo "no agentci binary at $binary: run cargo build --release --locked, or pass its path" >&2
    exit 2
fi
target="$(uname -m)-unknown-linux-gnu"
version="$("$binary" --version | cut -d' ' -f2)"

work="$(mktemp -d)"
registry_pid=""
cleanup() {
    if [ -n "$registry_pid" ]; then kill "$registry_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }
seconds() { echo "$1 $2" | awk '{ printf "%.1f", $2 - $1 }'; }
mib() { echo "$1" | awk '{ printf "%.1f MiB", $1 / 1048576 }'; }
# The sum of the file sizes in a .tgz (what npm unpacks).
unpacked() { tar -tvzf "$1" | awk '{ total += $3 } END { print total }'; }

echo "agentci $version, $target"
strip -o "$work/agentci" "$binary" 2>/dev/null || cp "$binary" "$work/agentci"
tar -czf "$work/agentci-$target.tar.gz" -C "$work" agentci
bash packaging/npm/build.sh "$target" "$work/agentci-$target.tar.gz" "$version" "$work/npm" >/dev/null
wheel="$(python3 packaging/pypi/build_wheel.py "$target" "$work/agentci-$target.tar.gz" "$version" "$work/wheel")"
platform_tgz="$(ls "$work"/npm/agentci-linux-*-"$version".tgz)"

echo
echo "sizes (download / unpacked)"
echo "  agentci release archive    $(mib "$(stat -c %s "$work/agentci-$target.tar.gz")") / $(mib "$(stat -c %s "$work/agentci")")"
echo "  agentci npm launcher       $(stat -c %s "$work/npm/agentci-$version.tgz") B / $(unpacked "$work/npm/agentci-$version.tgz") B"
echo "  agentci npm platform pkg   $(mib "$(stat -c %s "$platform_tgz")") / $(mib "$(unpacked "$platform_tgz")")"
echo "  agentci wheel              $(mib "$(stat -c %s "$wheel")") / $(mib "$(stat -c %s "$work/agentci")")"

# agentci from a local registry, cold cache.
(cd tests/npm-registry && { [ -d node_modules/verdaccio ] || npm ci --no-audit --no-fund --silent; })
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cat >"$work/verdaccio.yaml" <<EOF
storage: $work/storage
auth: {htpasswd: {file: $work/htpasswd, max_users: -1}}
uplinks: {}
packages:
  '**': {access: \$all, publish: \$all}
max_body_size: 500mb
log: {type: stdout, format: pretty, level: error}
listen: 127.0.0.1:$port
EOF
node tests/npm-registry/node_modules/verdaccio/bin/verdaccio --config "$work/verdaccio.yaml" \
    >"$work/verdaccio.log" 2>&1 &
registry_pid=$!
until curl -fs "http://127.0.0.1:$port/-/ping" >/dev/null; do sleep 0.2; done
printf 'registry=http://127.0.0.1:%s/\n//127.0.0.1:%s/:_authToken=anonymous\naudit=false\nfund=false\nupdate-notifier=false\n' \
    "$port" "$port" >"$work/npmrc"
: >"$work/npmrc.global"
local_npm() { npm_config_userconfig="$work/npmrc" npm_config_globalconfig="$work/npmrc.global" "$@"; }
for package in "$platform_tgz" "$work/npm/agentci-$version.tgz"; do
    local_npm npm publish --silent --cache "$work/publish-cache" "$package" >/dev/null
done

echo
echo "times (cold caches)"
mkdir -p "$work/npx"
start="$(now)"
(cd "$work/npx" && local_npm npx --yes --cache "$work/npx-cache" agentci --version >/dev/null)
echo "  npx agentci --version (local registry)            $(seconds "$start" "$(now)") s"

python3 -m venv "$work/venv"
start="$(now)"
"$work/venv/bin/pip" install --quiet --no-index --no-cache-dir "$wheel"
"$work/venv/bin/agentci" --version >/dev/null
echo "  pip install agentci wheel + agentci --version      $(seconds "$start" "$(now)") s"

# The public registry, for codex and claude.
if ! timeout 20 npm view --registry https://registry.npmjs.org/ @openai/codex version >/dev/null 2>&1; then
    echo
    echo "skipped: registry.npmjs.org cannot be reached, so codex and claude were not measured"
    exit 0
fi
public_npm() { npm --registry https://registry.npmjs.org/ "$@"; }
mkdir -p "$work/codex"
start="$(now)"
public_npm install --silent --no-audit --no-fund --cache "$work/codex-cache" --prefix "$work/codex" @openai/codex >/dev/null
"$work/codex/node_modules/.bin/codex" --version >/dev/null
echo "  npm i @openai/codex + codex --version (npmjs.org)   $(seconds "$start" "$(now)") s"

echo
echo "sizes of the others (download / unpacked, the package this machine installs)"
for package in @openai/codex @anthropic-ai/claude-code; do
    version_of="$(public_npm view "$package" version)"
    # The optional dependency for this machine: its name, or `npm:@scope/name@version`.
    arch="$(uname -m | sed 's/x86_64/x64/; s/aarch64/arm64/')"
    spec="$(public_npm view "$package@$version_of" optionalDependencies --json \
        | python3 -c "import json, sys; d = json.load(sys.stdin); k = next(k for k in d if k.endswith('linux-$arch')); v = d[k]; print(v[4:] if v.startswith('npm:') else k + '@' + v)")"
    mkdir -p "$work/pack"
    for name in "$package@$version_of" "$spec"; do
        file="$(cd "$work/pack" && public_npm pack --silent --cache "$work/pack-cache" "$name")"
        echo "  $(printf '%-45s' "$name") $(mib "$(stat -c %s "$work/pack/$file")") / $(mib "$(unpacked "$work/pack/$file")")"
    done
done
