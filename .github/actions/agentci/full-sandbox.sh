#!/usr/bin/env bash
# Sets up agentci's full sandbox on a Linux runner, before agentci runs:
#
#   full-sandbox.sh /path/to/agentci
#
# Ubuntu 23.10 and later, and so GitHub's ubuntu-24.04 (ubuntu-latest) runners, restrict
# unprivileged user namespaces through AppArmor (kernel.apparmor_restrict_unprivileged_userns=1):
# a program that is not root may make one only under an AppArmor profile that grants `userns`.
# Without them agentci's sandbox is degraded and a job that requires it (the default) refuses
# to start. This script writes such a profile for the installed binary, as Ubuntu documents
# for programs that need user namespaces (ubuntu.com/blog/ubuntu-23-10-restricted-unprivileged-
# user-namespaces: an unconfined profile with `userns,` attached to the program's path), to
# /etc/apparmor.d/agentci, and loads it with `apparmor_parser -r`. The profile names the exact
# path installed (a different path, a different cache folder, rewrites it). Where a profile
# cannot do it (no apparmor_parser, a path AppArmor cannot name, a profile that loads and does
# not help) it lifts the restriction for the whole runner with the sysctl instead. Both go
# through the runner's passwordless sudo; every step is said in the log. Nothing is changed
# where nothing is restricted, or where agentci runs as root (root is not restricted).
#
# Where the setting is read and the profile written can be moved (tests do):
# AGENTCI_USERNS_SETTING (default /proc/sys/kernel/apparmor_restrict_unprivileged_userns) and
# AGENTCI_APPARMOR_DIR (default /etc/apparmor.d).
set -euo pipefail

setting="${AGENTCI_USERNS_SETTING:-/proc/sys/kernel/apparmor_restrict_unprivileged_userns}"
profiles="${AGENTCI_APPARMOR_DIR:-/etc/apparmor.d}"
sysctl_name=kernel.apparmor_restrict_unprivileged_userns

say() {
    echo "agentci: sandbox set-up: $*"
}

# The run cannot be contained; agentci itself refuses it unless the job accepts that.
cannot() {
    echo "::warning title=agentci: sandbox set-up::$* agentci refuses to start a job that requires its sandbox (the default); see \`agentci doctor\`."
    exit 0
}

# The profile for the binary at $1, as Ubuntu documents it.
profile_text() {
    cat <<EOF
# Written by the agentci GitHub action (full-sandbox.sh): lets agentci make the user
# namespaces of its sandbox where unprivileged user namespaces are restricted.
abi <abi/4.0>,
include <tunables/global>

profile agentci $1 flags=(unconfined) {
  userns,

  # Site-specific additions and overrides.
  include if exists <local/agentci>
}
EOF
}

# Whether the binary at $1 can make the sandbox's user namespace now.
sandbox_works() {
    "$1" doctor --json 2>/dev/null | grep -q '"user_namespaces":true'
}

# Write and load the profile for the binary at $1; false when it cannot or does not help.
load_profile() {
    local bin="$1"
    # AppArmor reads globbing and quoting characters in a path; such a path is not named.
    if [[ ! "$bin" =~ ^/[A-Za-z0-9._/+-]+$ ]]; then
        say "the binary's path $bin has characters an AppArmor profile cannot name exactly"
        return 1
    fi
    if ! command -v apparmor_parser >/dev/null 2>&1; then
        say "apparmor_parser is not installed"
        return 1
    fi
    local file="$profiles/agentci"
    profile_text "$bin" | sudo -n tee "$file" >/dev/null || return 1
    if ! sudo -n apparmor_parser -r "$file"; then
        say "apparmor_parser could not load $file"
        return 1
    fi
    say "wrote and loaded the AppArmor profile $file, which lets $bin (and nothing else) make user namespaces"
    if ! sandbox_works "$bin"; then
        say "the profile is loaded but agentci still cannot make a user namespace"
        return 1
    fi
}

main() {
    local bin="${1:-}"
    [ -n "$bin" ] || { echo "::error::agentci: full-sandbox.sh: say the agentci binary's path"; exit 1; }
    if [ "$(uname -s)" != Linux ]; then
        say "not Linux: agentci has no kernel sandbox to set up here"
        return
    fi
    local restricted
    restricted="$(cat "$setting" 2>/dev/null || echo 0)"
    if [ "$restricted" != 1 ]; then
        say "unprivileged user namespaces are not restricted ($setting: ${restricted}); nothing to do"
        return
    fi
    if [ "$(id -u)" = 0 ]; then
        say "agentci runs as root, whom $sysctl_name does not restrict; nothing to do"
        return
    fi
    bin="$(readlink -f "$bin")"
    if ! sudo -n true 2>/dev/null; then
        cannot "unprivileged user namespaces are restricted ($sysctl_name=1) and there is no passwordless sudo to set up the full sandbox."
    fi
    if load_profile "$bin"; then
        return
    fi
    if sudo -n sysctl -w "$sysctl_name=0" >/dev/null; then
        say "set $sysctl_name=0 instead: every program on this runner may now make user namespaces"
    else
        cannot "neither an AppArmor profile nor \`sysctl -w $sysctl_name=0\` could lift the restriction."
    fi
}

main "$@"
