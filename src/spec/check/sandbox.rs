//! The job's `sandbox:` key: a profile name, or a mapping with the profile,
//! whether outgoing network is allowed and whether a degraded sandbox is an
//! error. What the kernel can enforce is not known here; see
//! [`crate::sandbox`].

use serde_saphyr::Spanned;

use super::Checker;
use crate::sandbox::{SandboxProfile, SandboxSpec};
use crate::spec::load::pos_of;
use crate::spec::raw::{RawSandbox, Scalar};

impl Checker<'_> {
    pub(super) fn sandbox(&mut self, raw: &Spanned<RawSandbox>) -> SandboxSpec {
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
        spec.network = flag(self, &raw.value.network, "network");
        spec.require = flag(self, &raw.value.require, "require");
        spec
    }
}
