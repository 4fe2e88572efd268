//! The test switches: variables the test suite sets to stand in for a
//! machine it does not have (a kernel without Landlock, a host name that
//! resolves to the fake registry). They weaken the sandbox or redirect
//! traffic, so only builds with `debug_assertions` (the suite's
//! `target/debug/agentci`) read them; a release binary ignores them,
//! whatever its environment says. They are read here, from the process
//! environment, rather than from the run's `RunEnv`: the sandbox probe
//! runs once per process, before and outside any run.

/// Whether this build reads test switches: only with `debug_assertions`.
pub const fn honoured() -> bool {
    cfg!(debug_assertions)
}

/// The value of the test switch `name`; always `None` in a release build.
pub fn read(name: &str) -> Option<String> {
    read_with(name, |name| std::env::var(name).ok())
}

/// [`read`] with `lookup` standing in for the environment.
fn read_with(name: &str, lookup: impl Fn(&str) -> Option<String>) -> Option<String> {
    match honoured() {
        true => lookup(name),
        false => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_is_read_by_debug_builds_only() {
        let got = read_with("AGENTCI_TEST_ANY", |_| Some("landlock".to_string()));
        match cfg!(debug_assertions) {
            true => assert_eq!(got.as_deref(), Some("landlock")),
            false => assert_eq!(got, None),
        }
    }

    #[cfg(not(debug_assertions))]
    #[test]
    fn a_release_build_reads_no_switch() {
        assert!(!honoured());
        assert_eq!(read_with("AGENTCI_TEST_ANY", |_| Some("x".into())), None);
    }
}
