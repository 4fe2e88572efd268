//! [`RunEnv`], agentci's environment as it was when the command started,
//! read once by the CLI and handed to everything that looks a variable up.
//!
//! Reading the process environment wherever a value is needed made every
//! reader a place where a run could see something else than the rest of it:
//! the secrets masked in the trace, the variables children inherit, the API
//! key a provider sends and the push token were each looked up on their own.
//! One snapshot, taken in `cli::main` right after the environment block is
//! emptied (`process::environ_block`), gives them all the same values and
//! lets tests hand any module exactly the environment they mean. The
//! library never calls `std::env::var` for a run's values; the test
//! switches of debug builds (`sandbox::test_switch`) are the exception.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::sync::Arc;

/// The process environment, snapshotted; cheap to clone. Its `Debug` shows
/// the names only: values hold API keys and tokens.
#[derive(Clone, Default)]
pub struct RunEnv {
    vars: Arc<BTreeMap<OsString, OsString>>,
}

impl RunEnv {
    /// The snapshot of `vars` (`std::env::vars_os()` in the CLI). A name
    /// given twice keeps its first value, as libc's `getenv` reads it.
    pub fn new(vars: impl IntoIterator<Item = (OsString, OsString)>) -> RunEnv {
        let mut map = BTreeMap::new();
        for (name, value) in vars {
            map.entry(name).or_insert(value);
        }
        RunEnv {
            vars: Arc::new(map),
        }
    }

    /// The value of `name` as text, as `std::env::var(name).ok()` gives it:
    /// `None` when it is not set or not valid UTF-8.
    pub fn var(&self, name: &str) -> Option<String> {
        self.var_os(name)?.to_str().map(str::to_string)
    }

    /// The value of `name`, as `std::env::var_os` gives it.
    pub fn var_os(&self, name: &str) -> Option<&OsStr> {
        self.vars.get(OsStr::new(name)).map(OsString::as_os_str)
    }

    /// Every variable, sorted by name.
    pub fn vars_os(&self) -> impl Iterator<Item = (&OsStr, &OsStr)> {
        self.vars
            .iter()
            .map(|(k, v)| (k.as_os_str(), v.as_os_str()))
    }
}

impl std::fmt::Debug for RunEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunEnv")
            .field("names", &self.vars.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> RunEnv {
        RunEnv::new(pairs.iter().map(|(k, v)| (k.into(), v.into())))
    }

    #[test]
    fn a_variable_reads_back_and_a_missing_one_is_none() {
        let env = env(&[("KEY", "value"), ("EMPTY", "")]);
        assert_eq!(env.var("KEY").as_deref(), Some("value"));
        assert_eq!(env.var("EMPTY").as_deref(), Some(""));
        assert_eq!(env.var("MISSING"), None);
        assert_eq!(env.var_os("KEY"), Some(OsStr::new("value")));
    }

    #[test]
    fn the_first_of_two_entries_of_a_name_wins() {
        let env = env(&[("KEY", "first"), ("KEY", "second")]);
        assert_eq!(env.var("KEY").as_deref(), Some("first"));
    }

    #[test]
    fn a_value_that_is_not_utf8_is_no_text_but_is_kept() {
        use std::os::unix::ffi::OsStringExt;
        let value = OsString::from_vec(vec![0xff, b'x']);
        let env = RunEnv::new([(OsString::from("RAW"), value.clone())]);
        assert_eq!(env.var("RAW"), None);
        assert_eq!(env.var_os("RAW"), Some(value.as_os_str()));
    }

    #[test]
    fn debug_output_names_variables_and_hides_values() {
        let shown = format!("{:?}", env(&[("API_KEY", "sk-secret-value")]));
        assert!(shown.contains("API_KEY"), "{shown}");
        assert!(!shown.contains("sk-secret-value"), "{shown}");
    }
}
