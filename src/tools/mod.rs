//! The builtin tools the agent calls, and what every tool has in common: a
//! [`ToolSpec`] (name, JSON schema for its arguments, whether it is
//! read-only, which argument permission rules match) and a [`ToolResult`]
//! envelope. Which builtins exist is [`catalog`]'s table; tools from MCP
//! servers implement the same [`Tool`] trait.
//!
//! Tools do not decide permissions (that is [`crate::policy`]) and do not
//! emit events (the agent does, around each call). They do keep every path
//! inside the [`Workspace`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

/// Opening by descriptor beneath a folder, shared with agentci's own outputs.
pub use crate::safe_file::beneath;
pub mod catalog;
pub mod edit;
pub mod exec;
pub mod find;
pub mod grep;
pub mod ls;
pub mod process;
pub mod read;
pub mod schema;
pub mod task;
pub mod todo;
pub mod web_fetch;
pub mod workspace;
pub mod write;

pub use catalog::builtin;
pub use workspace::{PathError, Workspace};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How a tool presents itself to the model.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    /// True when the tool never changes the workspace: it may run in
    /// parallel with other read-only calls and is offered during planning.
    pub read_only: bool,
    /// Which argument the permission rules' `tool(argument)` form matches.
    pub rule_argument: RuleArgument,
    /// True when a successful result's `data.path` names a file the tool
    /// changed (the GitHub summary lists those files).
    pub changes_files: bool,
}

/// Which argument of a call the `tool(argument)` form of a permission rule
/// is matched against, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleArgument {
    /// A workspace path, `.` and `..` folded; a path glob (`*` stays in one
    /// folder). `default` is what a call without the argument means (`ls`
    /// lists `.`); without one, such a call matches no argument rule.
    Path { default: Option<&'static str> },
    /// The `exec` command line, judged command by command.
    Command,
    /// A URL, parsed and printed back; `*` crosses `/`.
    Url,
    /// Nothing: rules can name the tool only.
    None,
}

/// Machine-readable kinds of tool failure. The model sees the code and the
/// message and can try again; none of these stops the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum ToolErrorCode {
    InvalidArgument,
    NotFound,
    PermissionDenied,
    OutsideWorkspace,
    NoMatch,
    AmbiguousMatch,
    Timeout,
    #[strum(serialize = "IO_ERROR")]
    Io,
    UnknownTool,
    LoopDetected,
    /// A tool from an MCP server answered with an error (`isError`, or a
    /// JSON-RPC error such as an unknown tool).
    ToolError,
    /// The MCP server behind the tool is down.
    ServerDown,
    /// A sub-agent (`task`) ended without an answer.
    SubagentFailed,
    /// A command passed one of the sandbox's resource limits (`sandbox.limits`).
    ResourceLimit,
}

impl ToolErrorCode {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The envelope every tool call ends in.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    pub ok: bool,
    pub error: Option<ToolErrorCode>,
    /// One line for the model and the logs: what happened.
    pub summary: String,
    /// The body the model reads (file contents, matches, command output). May be empty.
    pub output: String,
    /// Structured details for the trace.
    pub data: Value,
}

impl ToolResult {
    pub fn success(summary: impl Into<String>, output: impl Into<String>, data: Value) -> Self {
        ToolResult {
            ok: true,
            error: None,
            summary: summary.into(),
            output: output.into(),
            data,
        }
    }

    pub fn failure(code: ToolErrorCode, message: impl Into<String>) -> Self {
        ToolResult {
            ok: false,
            error: Some(code),
            summary: message.into(),
            output: String::new(),
            data: Value::Null,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = data;
        self
    }

    pub fn with_output(mut self, output: impl Into<String>) -> Self {
        self.output = output.into();
        self
    }

    /// The text the model gets back as the tool's result.
    pub fn model_text(&self) -> String {
        let head = match self.error {
            Some(code) => format!("ERROR {}: {}", code.as_str(), self.summary),
            None => self.summary.clone(),
        };
        if self.output.is_empty() {
            head
        } else {
            format!("{head}\n{}", self.output)
        }
    }
}

/// Limits the tools work within; frozen before the run starts.
#[derive(Clone, Debug)]
pub struct ToolLimits {
    /// Default and maximum time for one `exec` call.
    pub exec_timeout: Duration,
    pub exec_max_timeout: Duration,
    /// Characters of output returned to the model before it is cut with a note.
    pub max_output_chars: usize,
    /// Matches `grep` returns before it stops with a truncation note.
    pub grep_max_results: usize,
    /// Entries `find` returns before it stops with a truncation note.
    pub find_max_results: usize,
    /// Lines `read` returns when no limit is given.
    pub read_default_limit: usize,
    /// Where an output cut at `max_output_chars` is kept whole (the run
    /// folder's `outputs/`, readable by `read` and `grep`); `None`: not kept.
    pub kept_outputs: Option<std::path::PathBuf>,
    /// The largest file `write` and `edit` may leave: the job's
    /// `sandbox.limits.file_size`, which caps what `exec`'s children write.
    pub max_file_bytes: u64,
}

impl Default for ToolLimits {
    fn default() -> Self {
        ToolLimits {
            exec_timeout: Duration::from_secs(120),
            exec_max_timeout: Duration::from_secs(600),
            max_output_chars: 30_000,
            grep_max_results: 50,
            find_max_results: 200,
            read_default_limit: 2000,
            kept_outputs: None,
            max_file_bytes: crate::sandbox::ResourceLimits::default().file_size,
        }
    }
}

/// What a tool call may touch.
#[derive(Clone, Debug)]
pub struct ToolContext {
    pub workspace: Workspace,
    pub limits: ToolLimits,
    /// Starts `exec`'s processes: sandbox, environment, masking.
    pub processes: crate::process::ProcessRunner,
    /// The run's secrets, masked in `exec` output before it is cut.
    pub secrets: crate::redact::Redactor,
    /// What the tools that show file contents may show, file by file.
    pub access: FileAccess,
    /// The rules every redirect hop of `web_fetch` is judged by (the batch
    /// judges the first URL). `None`: redirects are not followed.
    pub fetch_policy: Option<Arc<dyn FetchPolicy>>,
}

/// What judges a `web_fetch` redirect hop: the job's permission policy,
/// which implements this. A trait so that tools do not depend on the
/// policy (the policy depends on the tool catalog).
pub trait FetchPolicy: Send + Sync + std::fmt::Debug {
    /// The rule (as written in the job) that denies fetching `url`, or
    /// `None` when it may be fetched.
    fn denies_fetch(&self, url: &str) -> Option<String>;

    /// True when an allow rule names `host` (as the URL parser prints it)
    /// literally, so a fetch may reach it at a loopback or private address.
    fn names_host(&self, host: &str) -> bool;
}

/// What a tool that shows file contents may show, beyond the workspace
/// boundary. The policy judges a call by its arguments, but `grep` opens
/// files nobody named; it asks here, per file, so it obeys the job's `read`
/// rules without knowing their syntax. The default allows everything.
#[derive(Clone, Default)]
pub struct FileAccess {
    read_denied: Option<Arc<ReadRule>>,
    /// Show files with more than one hard link (their other links may lie
    /// outside the workspace): the job's `permissions.allow_hard_links`.
    pub allow_hard_links: bool,
}

/// The rule (as written in the job) that denies reading a workspace-relative path.
type ReadRule = dyn Fn(&str) -> Option<String> + Send + Sync;

impl FileAccess {
    /// Access judged by `read_denied`: given a path relative to the
    /// workspace root, the rule that denies reading it, if any.
    pub fn new(
        read_denied: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
        allow_hard_links: bool,
    ) -> Self {
        FileAccess {
            read_denied: Some(Arc::new(read_denied)),
            allow_hard_links,
        }
    }

    /// Whether any `read` rule is there to ask: when none is, a caller
    /// walking many files need not work out each one's relative path.
    pub fn judges_reads(&self) -> bool {
        self.read_denied.is_some()
    }

    /// The rule that denies reading `relative`, or `None` when it may be read.
    pub fn read_denied(&self, relative: &str) -> Option<String> {
        self.read_denied.as_ref().and_then(|rule| rule(relative))
    }
}

impl std::fmt::Debug for FileAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileAccess")
            .field("read_rules", &self.read_denied.is_some())
            .field("allow_hard_links", &self.allow_hard_links)
            .finish()
    }
}

/// A tool the agent can call. Arguments arrive already checked against
/// [`Tool::spec`]'s schema.
pub trait Tool: Send + Sync {
    fn spec(&self) -> &ToolSpec;
    /// Whether this call never changes anything, so it may run with other
    /// reads; by default the tool's [`ToolSpec::read_only`]. A tool whose
    /// actions differ (`process`: `read` but not `kill`) decides per call.
    fn read_only_call(&self, _args: &Value) -> bool {
        self.spec().read_only
    }
    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult>;
}

/// Check `args` against `spec`'s schema and run the tool; a schema violation
/// becomes an `INVALID_ARGUMENT` result without running anything.
pub async fn call_checked(tool: &dyn Tool, args: Value, ctx: &ToolContext) -> ToolResult {
    if let Err(message) = schema::check_arguments(&tool.spec().parameters, &args) {
        return ToolResult::failure(
            ToolErrorCode::InvalidArgument,
            format!("invalid arguments for `{}`: {message}", tool.spec().name),
        );
    }
    tool.call(args, ctx).await
}

/// Helpers the builtin tools share: reading checked arguments and turning
/// path and I/O errors into results the model can act on.
pub(crate) mod support {
    use std::ffi::OsString;
    use std::io;
    use std::path::Path;

    use serde_json::Value;

    use super::beneath::Folder;
    use super::{PathError, ToolErrorCode, ToolResult, Workspace};

    /// A string argument; the schema has already checked its type.
    pub fn str_arg<'a>(args: &'a Value, name: &str) -> Option<&'a str> {
        args.get(name).and_then(Value::as_str)
    }

    /// A non-negative integer argument; the schema has already checked its type.
    /// JSON Schema counts `2.0` as an integer too, so accept whole floats.
    pub fn usize_arg(args: &Value, name: &str) -> Option<usize> {
        let value = args.get(name)?;
        let n = value.as_u64().or_else(|| {
            value
                .as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                .map(|f| f as u64)
        })?;
        Some(usize::try_from(n).unwrap_or(usize::MAX))
    }

    pub fn bool_arg(args: &Value, name: &str) -> Option<bool> {
        args.get(name).and_then(Value::as_bool)
    }

    /// Bytes looked at to decide that a file is binary (as git and ripgrep do: a NUL byte).
    pub const BINARY_SNIFF_BYTES: usize = 8192;

    /// Does the start of a file look binary (a NUL byte in the first bytes)?
    pub fn looks_binary(head: &[u8]) -> bool {
        head[..head.len().min(BINARY_SNIFF_BYTES)].contains(&0)
    }

    /// What a file tool found at a path it checked: the folder holding it,
    /// opened beneath the workspace (or skill folder) by descriptor, and the
    /// entry's name in it. Everything after the check goes through these.
    pub struct Entry {
        pub folder: Folder,
        pub name: OsString,
        pub kind: EntryKind,
        /// Permission bits (`rwx` for user, group, others) of a regular file.
        pub mode: Option<u32>,
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum EntryKind {
        Missing,
        Folder,
        File,
        Symlink,
        /// A FIFO, socket or device.
        Special,
    }

    /// The entry at `path` (as the workspace resolved it), looked up by
    /// descriptor; with `create_folders`, the folders leading to it are
    /// made when missing. The workspace root itself is a folder named `.`.
    pub fn entry(workspace: &Workspace, path: &Path, create_folders: bool) -> io::Result<Entry> {
        let (beneath, relative) = workspace.locate(path)?;
        let Some(name) = relative.file_name() else {
            return Ok(Entry {
                folder: beneath.open_dir(Path::new(""))?,
                name: OsString::from("."),
                kind: EntryKind::Folder,
                mode: None,
            });
        };
        let parent = relative.parent().unwrap_or(Path::new(""));
        let folder = if create_folders {
            beneath.create_dirs(parent)?
        } else {
            beneath.open_dir(parent)?
        };
        let stat = folder.stat(name)?;
        let (kind, mode) = match stat.map(|s| (s.st_mode & libc::S_IFMT, s.st_mode)) {
            None => (EntryKind::Missing, None),
            Some((libc::S_IFDIR, _)) => (EntryKind::Folder, None),
            Some((libc::S_IFREG, mode)) => (EntryKind::File, Some(mode & 0o777)),
            Some((libc::S_IFLNK, _)) => (EntryKind::Symlink, None),
            Some(_) => (EntryKind::Special, None),
        };
        Ok(Entry {
            name: name.to_os_string(),
            folder,
            kind,
            mode,
        })
    }

    /// The refusal for a FIFO, socket or device: opening a FIFO blocks
    /// until a writer comes, so such an entry is refused before anything
    /// opens it.
    pub fn special_file(shown: &str, tool: &str) -> ToolResult {
        ToolResult::failure(
            ToolErrorCode::InvalidArgument,
            format!(
                "`{shown}` is not a regular file (a FIFO, socket or device); \
                 `{tool}` works on regular files only"
            ),
        )
    }

    /// Open an existing entry to show or change its content, by descriptor:
    /// never through a symlink, and not when the file has other hard links,
    /// which may lie outside the workspace, unless the job allows them.
    pub fn open_content(
        entry: &Entry,
        shown: &str,
        tool: &str,
        access: &super::FileAccess,
    ) -> Result<std::fs::File, Box<ToolResult>> {
        let file = match entry.kind {
            // The operating system's own words, as a read by path gave them.
            EntryKind::Missing => Err(io::Error::from_raw_os_error(libc::ENOENT)),
            _ => entry.folder.open_file(&entry.name),
        }
        .map_err(|e| Box::new(io_failure(tool, shown, &e)))?;
        check_content(&file, shown, tool, access)?;
        Ok(file)
    }

    /// Refuses an opened file that is not a regular file, or that has other
    /// hard links when the job does not allow them.
    pub fn check_content(
        file: &std::fs::File,
        shown: &str,
        tool: &str,
        access: &super::FileAccess,
    ) -> Result<(), Box<ToolResult>> {
        use std::os::unix::fs::MetadataExt;
        let meta = file
            .metadata()
            .map_err(|e| Box::new(io_failure(tool, shown, &e)))?;
        if !meta.is_file() {
            return Err(Box::new(ToolResult::failure(
                ToolErrorCode::InvalidArgument,
                format!("`{shown}` is not a regular file; `{tool}` works on regular files only"),
            )));
        }
        if meta.nlink() > 1 && !access.allow_hard_links {
            return Err(Box::new(hard_link_refusal(shown, tool, meta.nlink())));
        }
        Ok(())
    }

    pub fn hard_link_refusal(shown: &str, tool: &str, links: u64) -> ToolResult {
        ToolResult::failure(
            ToolErrorCode::PermissionDenied,
            format!(
                "`{shown}` has {links} hard links, and the others may be files outside the \
                 workspace, so `{tool}` refuses it; a job that trusts its workspace can allow \
                 this with `permissions.allow_hard_links: true`"
            ),
        )
    }

    pub fn outside(error: PathError) -> ToolResult {
        ToolResult::failure(ToolErrorCode::OutsideWorkspace, error.0)
    }

    /// An I/O error on `path` (as the model wrote it) while doing `what`.
    pub fn io_failure(what: &str, path: &str, error: &io::Error) -> ToolResult {
        // The kernel refused a step that left the folder or went through a
        // symlink: one was put on the way after the path was checked.
        if matches!(error.raw_os_error(), Some(libc::ELOOP | libc::EXDEV)) {
            return ToolResult::failure(
                ToolErrorCode::OutsideWorkspace,
                format!(
                    "cannot {what} `{path}`: a symlink now stands on its way ({error}); the \
                     tools never follow one put there after the path was checked, so use a \
                     path inside the workspace"
                ),
            );
        }
        let code = match error.kind() {
            io::ErrorKind::NotFound => ToolErrorCode::NotFound,
            _ => ToolErrorCode::Io,
        };
        let hint = match error.kind() {
            io::ErrorKind::NotFound => "; check the path with `ls` or `find`",
            _ => "",
        };
        ToolResult::failure(code, format!("cannot {what} `{path}`: {error}{hint}"))
    }

    /// The refusal of a file of `bytes` bytes at `path` (as the model wrote
    /// it), over `limit`, the job's `sandbox.limits.file_size`.
    pub fn file_too_large(path: &str, bytes: u64, limit: u64) -> ToolResult {
        ToolResult::failure(
            ToolErrorCode::ResourceLimit,
            format!(
                "`{path}` would be {bytes} bytes, more than this job's file size limit of \
                 {limit} bytes (`sandbox.limits.file_size`); nothing was written: write a \
                 smaller file, or the job must raise sandbox.limits.file_size"
            ),
        )
    }

    /// Run blocking file-system work off the async threads.
    pub async fn blocking<F>(work: F) -> ToolResult
    where
        F: FnOnce() -> ToolResult + Send + 'static,
    {
        match tokio::task::spawn_blocking(work).await {
            Ok(result) => result,
            Err(e) => ToolResult::failure(
                ToolErrorCode::Io,
                format!("the tool stopped unexpectedly: {e}"),
            ),
        }
    }

    /// The first `max_chars` characters of `text`, and how many were cut.
    pub fn cut_chars(text: &str, max_chars: usize) -> (&str, usize) {
        match text.char_indices().nth(max_chars) {
            Some((at, _)) => (&text[..at], text[at..].chars().count()),
            None => (text, 0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ToolErrorCode::*;

    /// The codes are part of what the model reads and of the trace: the
    /// derived names must stay the ones documented.
    #[test]
    fn error_codes_read_as_documented() {
        let codes = [
            (InvalidArgument, "INVALID_ARGUMENT"),
            (NotFound, "NOT_FOUND"),
            (PermissionDenied, "PERMISSION_DENIED"),
            (OutsideWorkspace, "OUTSIDE_WORKSPACE"),
            (NoMatch, "NO_MATCH"),
            (AmbiguousMatch, "AMBIGUOUS_MATCH"),
            (Timeout, "TIMEOUT"),
            (Io, "IO_ERROR"),
            (UnknownTool, "UNKNOWN_TOOL"),
            (LoopDetected, "LOOP_DETECTED"),
            (ToolError, "TOOL_ERROR"),
            (ServerDown, "SERVER_DOWN"),
            (SubagentFailed, "SUBAGENT_FAILED"),
            (ResourceLimit, "RESOURCE_LIMIT"),
        ];
        for (code, name) in codes {
            assert_eq!(code.as_str(), name);
        }
    }
}
