//! The `grep` tool: a regex search over the workspace's files, printed the
//! way ripgrep prints it (`path:line:text`, `path-line-text` for context).
//!
//! Files are searched with ripgrep's own crates (`ignore` for the walk,
//! `grep-searcher` for the search, and grep-regex's reading of the pattern,
//! compiled once a run in `matchers`), so `.gitignore` is
//! honoured and binary files are skipped: on the calling thread while the
//! tree is small (starting the parallel walker's threads costs more than
//! searching a few hundred small files), in parallel once it proves large. Every file is searched even when
//! only `max_results` matches are shown, so the summary can say how many
//! there are in total; the shown matches are the first ones in path order,
//! never whichever thread finished first, so the same call always gives the
//! same output. This module does not decide what the model may search: it
//! asks [`FileAccess`] about every file it would open, so a file the job's
//! `read` rules deny (or one with other hard links, unless the job allows
//! them) is skipped, and the summary says how many were. How the result
//! reads (lines, summary, what was left out) is in `output`.

mod lean;
mod matchers;
mod output;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::WalkState;
use serde_json::{Value, json};

use self::matchers::{GrepMatcher, MatcherKey, Matchers};
use self::output::render;
use super::find::{PathGlob, Walk, walker};
use super::support::{
    blocking, bool_arg, hard_link_refusal, io_failure, outside, str_arg, usize_arg,
};
use super::{
    BoxFuture, FileAccess, RuleArgument, Tool, ToolContext, ToolErrorCode, ToolResult, ToolSpec,
    Workspace,
};

/// Characters of one line shown before it is cut (minified files have huge lines).
const MAX_LINE_CHARS: usize = 400;
/// Most context lines around a match.
const MAX_CONTEXT: u64 = 20;

pub struct GrepTool {
    spec: ToolSpec,
    /// The patterns this tool has compiled, for the calls of the run.
    matchers: Matchers,
}

impl GrepTool {
    pub fn new() -> Self {
        GrepTool {
            spec: ToolSpec {
                name: "grep".into(),
                description: "Search file contents with a regular expression (Rust regex \
                    syntax, like ripgrep; a match never spans lines). Prints `path:line:text` \
                    for matching lines and `path-line-text` for context lines, with `--` between \
                    separate groups. Searches `path` (a directory or one file; default the whole \
                    workspace), skipping .gitignore'd and binary files. `glob` keeps only files \
                    matching it (`*.rs`, `src/**/*.ts`). `case_sensitive` defaults to true. At \
                    most `max_results` matching lines are shown (default 50); the summary gives \
                    the total."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "pattern": {"type": "string", "minLength": 1,
                                    "description": "Regular expression to search for."},
                        "path": {"type": "string",
                                 "description": "Directory or file to search, relative to the workspace root. Default: the root."},
                        "glob": {"type": "string", "minLength": 1,
                                 "description": "Only search files matching this glob, e.g. `*.rs`."},
                        "context": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT,
                                    "description": "Lines of context before and after each match. Default 0."},
                        "case_sensitive": {"type": "boolean",
                                           "description": "Match case exactly. Default true."},
                        "max_results": {"type": "integer", "minimum": 1,
                                        "description": "Most matching lines to show. Default 50."}
                    },
                    "required": ["pattern"],
                    "additionalProperties": false
                }),
                read_only: true,
                rule_argument: RuleArgument::Path { default: Some(".") },
                changes_files: false,
            },
            matchers: Matchers::default(),
        }
    }
}

impl Default for GrepTool {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for GrepTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let query = match GrepQuery::from_args(&args, ctx, &self.matchers) {
                Ok(q) => q,
                Err(failure) => return *failure,
            };
            let workspace = ctx.workspace.clone();
            let access = ctx.access.clone();
            blocking(move || search(&workspace, &access, &query)).await
        })
    }
}

/// A checked `grep` call.
struct GrepQuery {
    pattern: String,
    matcher: GrepMatcher,
    base: PathBuf,
    glob: Option<PathGlob>,
    context: usize,
    max_results: usize,
    max_chars: usize,
}

impl GrepQuery {
    fn from_args(
        args: &Value,
        ctx: &ToolContext,
        matchers: &Matchers,
    ) -> Result<Self, Box<ToolResult>> {
        let key = MatcherKey {
            pattern: str_arg(args, "pattern").unwrap_or_default().to_string(),
            case_insensitive: !bool_arg(args, "case_sensitive").unwrap_or(true),
        };
        let matcher = matchers.get(&key).map_err(|e| {
            let detail = e.to_string();
            let first = detail.lines().last().unwrap_or_default().trim().to_string();
            Box::new(
                ToolResult::failure(
                    ToolErrorCode::InvalidArgument,
                    format!("`pattern` is not a valid regex: {first}"),
                )
                .with_output(detail),
            )
        })?;
        let glob = match str_arg(args, "glob") {
            Some(g) => Some(PathGlob::new(g).map_err(|e| {
                Box::new(ToolResult::failure(
                    ToolErrorCode::InvalidArgument,
                    e.to_string(),
                ))
            })?),
            None => None,
        };
        let base = ctx
            .workspace
            .resolve_for_reading(str_arg(args, "path").unwrap_or("."))
            .map_err(|e| Box::new(outside(e)))?;
        Ok(GrepQuery {
            pattern: key.pattern,
            matcher,
            base,
            glob,
            context: usize_arg(args, "context").unwrap_or(0),
            max_results: usize_arg(args, "max_results").unwrap_or(ctx.limits.grep_max_results),
            max_chars: ctx.limits.max_output_chars,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum LineKind {
    Match,
    Before,
    After,
    /// A gap between two groups of lines in one file (`--`).
    Break,
}

#[derive(Debug)]
struct Hit {
    kind: LineKind,
    number: u64,
    text: String,
}

/// What one file contributed: its lines (up to a cap) and its match count.
#[derive(Debug, Default)]
struct FileHits {
    hits: Vec<Hit>,
    matches: usize,
    stored: usize,
}

/// Collects one file's matches; stops storing lines after `cap` matches but keeps counting.
struct FileSink {
    file: FileHits,
    cap: usize,
    binary: bool,
}

impl FileSink {
    fn push(&mut self, kind: LineKind, number: Option<u64>, bytes: &[u8]) {
        let line = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let text = String::from_utf8_lossy(line);
        let (head, cut) = super::support::cut_chars(&text, MAX_LINE_CHARS);
        let text = if cut > 0 {
            format!("{head}... [{cut} more characters]")
        } else {
            head.to_string()
        };
        self.file.hits.push(Hit {
            kind,
            number: number.unwrap_or(0),
            text,
        });
    }
}

impl Sink for FileSink {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let first = mat.line_number();
        for (i, line) in mat.lines().enumerate() {
            self.file.matches += 1;
            if self.file.stored < self.cap {
                self.file.stored += 1;
                self.push(LineKind::Match, first.map(|n| n + i as u64), line);
            }
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        // Context after the last stored match is still wanted; anything beyond is not.
        if self.file.matches <= self.cap {
            let kind = match ctx.kind() {
                SinkContextKind::After => LineKind::After,
                _ => LineKind::Before,
            };
            self.push(kind, ctx.line_number(), ctx.bytes());
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        if self.file.matches <= self.cap {
            self.file.hits.push(Hit {
                kind: LineKind::Break,
                number: 0,
                text: String::new(),
            });
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// Everything the search threads found, kept in path order. Files that can
/// no longer be among the first `cap` matches only add to the counts, so
/// memory stays bounded on a huge tree.
#[derive(Default)]
struct Collected {
    files: BTreeMap<PathBuf, FileHits>,
    stored: usize,
    cap: usize,
    total_matches: usize,
    matching_files: usize,
    binary_skipped: usize,
    unreadable: usize,
    /// Files a `read` deny rule covers, and the rules that did.
    denied_skipped: usize,
    denying_rules: BTreeSet<String>,
    /// Files with other hard links, when the job does not allow them.
    hard_links_skipped: usize,
}

impl Collected {
    fn add(&mut self, path: PathBuf, file: FileHits) {
        self.total_matches += file.matches;
        self.matching_files += 1;
        self.stored += file.stored;
        self.files.insert(path, file);
        while self.files.len() > 1 {
            let Some(last) = self.files.last_key_value().map(|(_, f)| f.stored) else {
                break;
            };
            if self.stored - last < self.cap {
                break;
            }
            self.files.pop_last();
            self.stored -= last;
        }
    }
}

fn search(workspace: &Workspace, access: &FileAccess, query: &GrepQuery) -> ToolResult {
    let shown_base = workspace.relative(&query.base);
    let base_meta = match std::fs::metadata(&query.base) {
        Ok(meta) => meta,
        Err(e) => return io_failure("search", &shown_base, &e),
    };
    // One file named outright is refused outright; in a folder it is skipped.
    if base_meta.is_file() {
        if let Some(rule) = access.read_denied(&shown_base) {
            return ToolResult::failure(
                ToolErrorCode::PermissionDenied,
                format!(
                    "reading `{shown_base}` is denied by the job's permission policy ({rule}), \
                     so `grep` does not search it"
                ),
            );
        }
        if base_meta.nlink() > 1 && !access.allow_hard_links {
            return hard_link_refusal(&shown_base, "grep", base_meta.nlink());
        }
    }
    // No more lines per file than could ever be shown.
    let per_file_cap = query.max_results.min(query.max_chars);
    let collected = Mutex::new(Collected {
        cap: query.max_results,
        ..Collected::default()
    });
    let searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(query.context)
        .after_context(query.context)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let visit = Visit {
        workspace,
        access,
        query,
        per_file_cap,
        collected: &collected,
    };

    // A small tree is searched on this thread: starting the parallel
    // walker's threads costs more than searching it. Once the walk proves
    // the tree large, the parallel walker searches what is left.
    let mut searched = Vec::new();
    let mut walk_errors = 0;
    let (mut files, mut bytes) = (0usize, 0u64);
    let mut large = false;
    let mut sequential = searcher.clone();
    for entry in walker(workspace, &query.base, Walk::Opening).build() {
        let Ok(entry) = entry else {
            walk_errors += 1;
            continue;
        };
        if files >= SEQUENTIAL_FILES || bytes >= SEQUENTIAL_BYTES {
            large = true;
            break;
        }
        if let Some(size) = visit.entry(&mut sequential, &entry) {
            files += 1;
            bytes += size;
            searched.push(entry.into_path());
        }
    }
    if large {
        // Hashed, not ordered: the parallel walk asks about every entry, and
        // ordering paths compares them component by component.
        let searched: HashSet<PathBuf> = searched.into_iter().collect();
        // The parallel walk meets the walk's errors again: they count once.
        let walk = walker(workspace, &query.base, Walk::Opening).build_parallel();
        walk.run(|| {
            let mut searcher = searcher.clone();
            let (visit, searched) = (&visit, &searched);
            Box::new(move |entry| {
                match entry {
                    Ok(entry) if !searched.contains(entry.path()) => {
                        visit.entry(&mut searcher, &entry);
                    }
                    Ok(_) => {}
                    Err(_) => lock(visit.collected).unreadable += 1,
                }
                WalkState::Continue
            })
        });
    } else {
        lock(&collected).unreadable += walk_errors;
    }

    let collected = std::mem::take(&mut *lock(&collected));
    render(workspace, query, &shown_base, collected)
}

/// Files, and bytes of them, searched on the calling thread before the
/// tree counts as large and the parallel walker takes over: a walk and
/// search of this much costs about what starting the walker's threads does.
const SEQUENTIAL_FILES: usize = 200;
const SEQUENTIAL_BYTES: u64 = 2 << 20;

/// What searching one entry of the walk needs.
struct Visit<'a> {
    workspace: &'a Workspace,
    access: &'a FileAccess,
    query: &'a GrepQuery,
    per_file_cap: usize,
    collected: &'a Mutex<Collected>,
}

impl Visit<'_> {
    /// Search the entry if it is a file the query covers; its size in bytes
    /// if it was a file the walk handed over (searched or skipped).
    fn entry(&self, searcher: &mut Searcher, entry: &ignore::DirEntry) -> Option<u64> {
        let (workspace, query, access) = (self.workspace, self.query, self.access);
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return None;
        }
        if entry.depth() > 0
            && let Some(glob) = &query.glob
            && !glob.is_match(workspace, &query.base, entry.path())
        {
            return Some(0);
        }
        if access.judges_reads()
            && let Some(rule) = access.read_denied(&workspace.relative(entry.path()))
        {
            let mut all = lock(self.collected);
            all.denied_skipped += 1;
            all.denying_rules.insert(rule);
            return Some(0);
        }
        let (file, size) = match open_to_search(workspace, entry.path(), access) {
            Ok(opened) => opened,
            Err(skip) => {
                let mut all = lock(self.collected);
                match skip {
                    Skip::HardLinks => all.hard_links_skipped += 1,
                    Skip::Unreadable => all.unreadable += 1,
                }
                return Some(0);
            }
        };
        let mut sink = FileSink {
            file: FileHits::default(),
            cap: self.per_file_cap,
            binary: false,
        };
        let outcome = searcher.search_file(&query.matcher, &file, &mut sink);
        let mut all = lock(self.collected);
        if outcome.is_err() {
            all.unreadable += 1;
        } else if sink.binary {
            all.binary_skipped += 1;
        } else if sink.file.matches > 0 {
            all.add(entry.path().to_path_buf(), sink.file);
        }
        Some(size)
    }
}

/// Why a file found by the walk is not searched.
enum Skip {
    HardLinks,
    Unreadable,
}

/// Open a file the walk found as a regular file, by descriptor beneath the
/// workspace (or skill folder): never through a symlink (one swapped in
/// since the walk saw the file, on the file or on a folder above it), and
/// not when it has other hard links, which may lie outside the workspace,
/// unless the job allows them.
fn open_to_search(
    workspace: &Workspace,
    path: &Path,
    access: &FileAccess,
) -> Result<(File, u64), Skip> {
    let (beneath, relative) = workspace.locate(path).map_err(|_| Skip::Unreadable)?;
    let file = beneath.open_file(relative).map_err(|_| Skip::Unreadable)?;
    let meta = file.metadata().map_err(|_| Skip::Unreadable)?;
    if !meta.is_file() {
        return Err(Skip::Unreadable);
    }
    if meta.nlink() > 1 && !access.allow_hard_links {
        return Err(Skip::HardLinks);
    }
    Ok((file, meta.len()))
}

fn lock(collected: &Mutex<Collected>) -> std::sync::MutexGuard<'_, Collected> {
    collected.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn collected_keeps_only_files_that_can_still_be_shown() {
        let mut c = Collected {
            cap: 3,
            ..Collected::default()
        };
        let file = |n: usize| FileHits {
            hits: Vec::new(),
            matches: n,
            stored: n,
        };
        c.add(PathBuf::from("b"), file(2));
        c.add(PathBuf::from("d"), file(2));
        c.add(PathBuf::from("a"), file(2));
        // a(2) + b(2) already reach the cap, so d can never be shown.
        assert_eq!(
            c.files.keys().collect::<Vec<_>>(),
            [Path::new("a"), Path::new("b")]
        );
        assert_eq!((c.total_matches, c.matching_files), (6, 3));
    }
}
