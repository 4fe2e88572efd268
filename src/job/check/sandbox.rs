//! The job's `sandbox:` key: a profile name, or a mapping with the profile,
//! whether outgoing network is allowed, whether a degraded sandbox is an
//! error, the resource limits of each command and the folders beyond the
//! workspace that commands may write ([`super::writable`]). What the kernel
//! can enforce is not known here; see [`crate::sandbox`].

use std::collections::BTreeMap;

use serde_saphyr::Spanned;

use super::Checker;
use super::writable::Places;
use crate::job::diagnostic::Pos;
use crate::job::load::pos_of;
use crate::job::raw::{RawLimits, RawNetwork, RawSandbox, Scalar};
use crate::job::size::parse_size;
use crate::netproxy::NetworkAllowlist;
use crate::sandbox::{HostList, ResourceLimits, SandboxProfile, SandboxSpec};

impl Checker<'_> {
    pub(super) fn sandbox(
        &mut self,
        raw: &Spanned<RawSandbox>,
        vars: &BTreeMap<String, String>,
        workspace: Option<&std::path::Path>,
        outputs: &crate::job::OutputsSpec,
    ) -> SandboxSpec {
        let pos = pos_of(&self.r, raw);
        let mut spec = SandboxSpec::default();
        if let Some(name) = &raw.value.profile {
            match SandboxProfile::parse(name) {
                Some(profile) => spec.profile = profile,
                None => self.r.error(
                    pos,
                    format!(
                        "unknown sandbox profile `{name}`; use one of {}",
                        SandboxProfile::NAMES
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ),
            }
        }
        let flag = |this: &mut Self, value: &Option<Scalar>, key: &str| match value {
            None => false,
            Some(Scalar::Bool(b)) => *b,
            Some(other) => {
                this.r.error(
                    pos,
                    format!(
                        "`sandbox.{key}` must be `true` or `false`, found {} `{}`",
                        other.kind(),
                        other.text()
                    ),
                );
                false
            }
        };
        match &raw.value.network {
            Some(RawNetwork::Hosts(entries)) => spec.hosts = self.hosts(entries, pos, &spec),
            Some(RawNetwork::Flag(value)) => {
                spec.network = flag(self, &Some(value.clone()), "network");
            }
            None => {}
        }
        if raw.value.require.is_some() {
            spec.require = flag(self, &raw.value.require, "require");
        }
        if let Some(limits) = &raw.value.limits {
            spec.limits = self.limits(limits);
        }
        if let Some(entries) = &raw.value.writable {
            let places = Places {
                workspace,
                outputs,
                profile: spec.profile,
            };
            spec.writable = self.writable(entries, vars, &places);
        }
        spec
    }

    /// `sandbox.network: [hosts]`: each entry checked where it stands.
    fn hosts(
        &mut self,
        entries: &[Spanned<String>],
        key: Pos,
        spec: &SandboxSpec,
    ) -> Option<HostList> {
        if spec.profile == SandboxProfile::Off {
            self.r.warning(
                key,
                "`sandbox.network` lists hosts but the profile is `off`: commands reach every \
                 host directly and no proxy runs"
                    .to_string(),
            );
        }
        if entries.is_empty() {
            self.r.error(
                key,
                "`sandbox.network: []` allows no host; write `false` for no network, or list \
                 the hosts (`[crates.io, preset:npm]`)"
                    .to_string(),
            );
            return None;
        }
        let mut ok = true;
        for entry in entries {
            if let Err(e) = NetworkAllowlist::parse(&[entry.value.as_str()]) {
                self.r.error(pos_of(&self.r, entry), e.to_string());
                ok = false;
            }
        }
        let written: Vec<String> = entries.iter().map(|e| e.value.clone()).collect();
        let allowlist = NetworkAllowlist::parse(&written).ok().filter(|_| ok)?;
        Some(HostList { written, allowlist })
    }

    /// `sandbox.limits`: each key left out keeps its default.
    fn limits(&mut self, raw: &RawLimits) -> ResourceLimits {
        let mut limits = ResourceLimits::default();
        let count = |this: &mut Self, v: &Option<Spanned<Scalar>>, key: &str, into: &mut u64| {
            if let Some(n) = v
                .as_ref()
                .and_then(|v| this.positive(v, &format!("sandbox.limits.{key}"), MAX_COUNT))
            {
                *into = n;
            }
        };
        count(self, &raw.processes, "processes", &mut limits.processes);
        count(self, &raw.open_files, "open_files", &mut limits.open_files);
        if let Some(n) = raw
            .memory
            .as_ref()
            .and_then(|v| self.size(v, "sandbox.limits.memory"))
        {
            limits.memory = n;
        }
        if let Some(n) = raw
            .file_size
            .as_ref()
            .and_then(|v| self.size(v, "sandbox.limits.file_size"))
        {
            limits.file_size = n;
        }
        limits
    }

    /// A positive size: `4GiB`, `512MiB`, `1GB`, or whole bytes; `key` is
    /// the key's full name, for the message.
    pub(super) fn size(&mut self, value: &Spanned<Scalar>, key: &str) -> Option<u64> {
        let parsed = match &value.value {
            Scalar::Int(n) => u64::try_from(*n).ok(),
            Scalar::Str(text) => parse_size(text),
            _ => None,
        };
        match parsed {
            Some(n) if n > 0 => Some(n),
            _ => {
                let pos = pos_of(&self.r, value);
                self.r.error(
                    pos,
                    format!(
                        "`{key}` must be a size such as `512MiB`, `4GiB` or a \
                         whole number of bytes, found {} `{}`",
                        value.value.kind(),
                        value.value.text()
                    ),
                );
                None
            }
        }
    }
}

/// The largest process or open-file count accepted; more is a typo.
const MAX_COUNT: u64 = 1 << 20;
