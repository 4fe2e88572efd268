//! The builtin tools against real files in temporary workspaces and real
//! child processes, called the way the agent calls them: `builtin(name)`
//! then `call_checked`, so the schema check is part of every test.

use std::path::Path;
use std::time::{Duration, Instant};

use agentci::tools::{
    ToolContext, ToolErrorCode, ToolLimits, ToolResult, Workspace, builtin, call_checked,
};
use proptest::prelude::*;
use serde_json::{Value, json};

fn context(dir: &Path) -> ToolContext {
    ToolContext {
        workspace: Workspace::new(dir).unwrap(),
        limits: ToolLimits::default(),
        processes: Default::default(),
        secrets: Default::default(),
        access: Default::default(),
        fetch_policy: None,
    }
}

async fn call(ctx: &ToolContext, name: &str, args: Value) -> ToolResult {
    let tool = builtin(name).unwrap_or_else(|| panic!("no builtin tool {name}"));
    call_checked(tool.as_ref(), args, ctx).await
}

/// Run one call on a fresh runtime, for proptest bodies.
fn call_blocking(ctx: &ToolContext, name: &str, args: Value) -> ToolResult {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(call(ctx, name, args))
}

fn write(dir: &Path, rel: &str, content: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

// ---------------------------------------------------------------- specs

#[test]
fn every_builtin_has_a_strict_schema_and_a_description() {
    for name in agentci::tools::catalog::names() {
        let tool = builtin(name).unwrap();
        let spec = tool.spec();
        assert_eq!(spec.name, *name);
        assert!(
            spec.description.len() > 80,
            "{name} needs a real description"
        );
        assert_eq!(spec.parameters["type"], "object", "{name}");
        assert_eq!(spec.parameters["additionalProperties"], false, "{name}");
        assert!(spec.parameters["required"].is_array(), "{name}");
        for (arg, schema) in spec.parameters["properties"].as_object().unwrap() {
            assert!(
                arg.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{name}.{arg} is not snake_case"
            );
            assert!(schema["description"].is_string(), "{name}.{arg}");
        }
        let read_only = ["read", "find", "grep", "ls", "web_fetch"];
        assert_eq!(spec.read_only, read_only.contains(&name), "{name}");
    }
}

#[tokio::test]
async fn bad_arguments_are_refused_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let r = call(&ctx, "read", json!({"file": "x"})).await;
    assert_eq!(r.error, Some(ToolErrorCode::InvalidArgument));
    assert!(r.summary.contains("`path` is required"), "{}", r.summary);
    assert!(
        r.summary.contains("unknown argument `file`"),
        "{}",
        r.summary
    );
    let r = call(&ctx, "read", json!({"path": "a", "limit": 0})).await;
    assert!(
        r.summary.contains("`limit` must be an integer >= 1, got 0"),
        "{}",
        r.summary
    );
    // Nothing ran: a write with a bad argument creates no file.
    let r = call(&ctx, "write", json!({"path": "made.txt", "content": 5})).await;
    assert_eq!(r.error, Some(ToolErrorCode::InvalidArgument));
    assert!(!dir.path().join("made.txt").exists());
}

// ---------------------------------------------------------------- read / write / edit

#[tokio::test]
async fn read_numbers_lines_and_pages() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    write(dir.path(), "f.txt", &text);
    let ctx = context(dir.path());
    let r = call(
        &ctx,
        "read",
        json!({"path": "f.txt", "offset": 3, "limit": 2}),
    )
    .await;
    assert!(r.ok);
    assert_eq!(r.output, "     3\tline 3\n     4\tline 4");
    assert_eq!(
        r.summary,
        "`f.txt`: lines 3-4 of 10 (continue with offset=5)"
    );
    assert_eq!(r.data["lines"], json!([3, 4]));
    assert_eq!(r.data["total_lines"], 10);

    // JSON Schema counts 2.0 as an integer, so the tool must honour it too.
    let r = call(
        &ctx,
        "read",
        json!({"path": "f.txt", "offset": 9.0, "limit": 1.0}),
    )
    .await;
    assert_eq!(r.output, "     9\tline 9");

    let r = call(&ctx, "read", json!({"path": "f.txt", "offset": 11})).await;
    assert_eq!(r.error, Some(ToolErrorCode::InvalidArgument));
    assert!(r.summary.contains("past the end"), "{}", r.summary);
}

#[tokio::test]
async fn read_refuses_directories_binaries_and_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("bin"), b"ab\0cd").unwrap();
    let ctx = context(dir.path());
    let r = call(&ctx, "read", json!({"path": "sub"})).await;
    assert!(
        r.summary.contains("is a directory; use `ls`"),
        "{}",
        r.summary
    );
    let r = call(&ctx, "read", json!({"path": "bin"})).await;
    assert!(r.summary.contains("binary"), "{}", r.summary);
    let r = call(&ctx, "read", json!({"path": "nope.txt"})).await;
    assert_eq!(r.error, Some(ToolErrorCode::NotFound));
}

// Regression: `read` on a named pipe in the workspace blocked in open(2)
// forever, hanging the run (and its shutdown, which waits for the blocking
// thread); `edit` and `write` did the same.
#[test]
fn read_edit_and_write_refuse_fifos_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(dir.path().join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let ctx = context(dir.path());
    let calls = [
        ("read", json!({"path": "pipe"})),
        (
            "edit",
            json!({"path": "pipe", "old_text": "a", "new_text": "b"}),
        ),
        ("write", json!({"path": "pipe", "content": "x"})),
    ];
    for (tool, args) in calls {
        // On its own thread: a tool stuck in open(2) cannot be cancelled, only abandoned.
        let (tx, rx) = std::sync::mpsc::channel();
        let ctx = ctx.clone();
        std::thread::spawn(move || tx.send(call_blocking(&ctx, tool, args)));
        let r = rx
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_else(|_| panic!("`{tool}` blocked on a FIFO"));
        assert_eq!(
            r.error,
            Some(ToolErrorCode::InvalidArgument),
            "{tool}: {}",
            r.summary
        );
        assert!(
            r.summary.contains("not a regular file"),
            "{tool}: {}",
            r.summary
        );
    }
}

/// Regression: `write` could overwrite the run's own trace under `.agentci/`.
#[tokio::test]
async fn run_folders_are_not_the_agents_to_touch() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".agentci/runs/r1/trace.jsonl", "{}\n");
    let ctx = context(dir.path());
    for (tool, args) in [
        (
            "write",
            json!({"path": ".agentci/runs/r1/trace.jsonl", "content": "forged"}),
        ),
        ("read", json!({"path": ".agentci/runs/r1/trace.jsonl"})),
        (
            "edit",
            json!({"path": "./.agentci/runs/r1/trace.jsonl", "old_text": "{}", "new_text": "x"}),
        ),
        ("ls", json!({"path": ".agentci"})),
    ] {
        let r = call(&ctx, tool, args).await;
        assert_eq!(
            r.error,
            Some(ToolErrorCode::OutsideWorkspace),
            "{tool}: {}",
            r.summary
        );
        assert!(r.summary.contains(".agentci/"), "{tool}: {}", r.summary);
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".agentci/runs/r1/trace.jsonl")).unwrap(),
        "{}\n"
    );
}

#[tokio::test]
async fn write_creates_parent_directories() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let r = call(
        &ctx,
        "write",
        json!({"path": "a/b/c.txt", "content": "hi\n"}),
    )
    .await;
    assert!(r.ok, "{}", r.summary);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
        "hi\n"
    );
    assert_eq!(r.data["created"], true);
    let r = call(&ctx, "write", json!({"path": "a", "content": "x"})).await;
    assert_eq!(r.error, Some(ToolErrorCode::InvalidArgument));
    let r = call(&ctx, "write", json!({"path": "newdir/", "content": "x"})).await;
    assert_eq!(
        r.error,
        Some(ToolErrorCode::InvalidArgument),
        "{}",
        r.summary
    );
    assert!(!dir.path().join("newdir").exists());
}

#[tokio::test]
async fn edit_reports_no_match_and_ambiguity_without_changing_the_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "f.rs", "let a = 1;\nlet b = 2;\nlet a = 1;\n");
    let ctx = context(dir.path());
    let r = call(
        &ctx,
        "edit",
        json!({"path": "f.rs", "old_text": "let a = 1;", "new_text": "let a = 3;"}),
    )
    .await;
    assert_eq!(r.error, Some(ToolErrorCode::AmbiguousMatch));
    assert!(r.summary.contains("occurs 2 times"), "{}", r.summary);
    assert!(r.summary.contains("lines 1, 3"), "{}", r.summary);
    let r = call(
        &ctx,
        "edit",
        json!({"path": "f.rs", "old_text": "let c", "new_text": "let d"}),
    )
    .await;
    assert_eq!(r.error, Some(ToolErrorCode::NoMatch));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.rs")).unwrap(),
        "let a = 1;\nlet b = 2;\nlet a = 1;\n"
    );

    let r = call(
        &ctx,
        "edit",
        json!({"path": "f.rs", "old_text": "let b = 2;", "new_text": "let b = 5;"}),
    )
    .await;
    assert!(r.ok, "{}", r.summary);
    assert!(r.output.contains("     2\tlet b = 5;"), "{}", r.output);
    let r = call(
        &ctx,
        "edit",
        json!({"path": "f.rs", "old_text": "= 1;", "new_text": "= 0;", "replace_all": true}),
    )
    .await;
    assert_eq!(r.data["replacements"], 2);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.rs")).unwrap(),
        "let a = 0;\nlet b = 5;\nlet a = 0;\n"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    // read with a line range returns exactly those lines, numbered.
    #[test]
    fn read_returns_exactly_the_requested_lines(
        lines in proptest::collection::vec("[a-z ]{0,12}", 0..40),
        offset in 1usize..45,
        limit in 1usize..45,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        write(dir.path(), "f.txt", &text);
        let ctx = context(dir.path());
        let r = call_blocking(&ctx, "read", json!({"path": "f.txt", "offset": offset, "limit": limit}));
        if lines.is_empty() {
            prop_assert!(r.ok);
            prop_assert_eq!(r.output, "");
        } else if offset > lines.len() {
            prop_assert_eq!(r.error, Some(ToolErrorCode::InvalidArgument));
        } else {
            let expected: Vec<String> = lines
                .iter()
                .enumerate()
                .skip(offset - 1)
                .take(limit)
                .map(|(i, l)| format!("{:>6}\t{l}", i + 1))
                .collect();
            prop_assert_eq!(r.output, expected.join("\n"));
            prop_assert_eq!(r.data["total_lines"].as_u64(), Some(lines.len() as u64));
        }
    }

    // edit through the tool leaves prefix + new + suffix on disk.
    #[test]
    fn edit_tool_replaces_exactly_the_one_occurrence(
        prefix in "[a-c\n ]{0,30}",
        suffix in "[a-c\n ]{0,30}",
        new in "[a-z\n]{0,10}",
    ) {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "f.txt", &format!("{prefix}OLD{suffix}"));
        let ctx = context(dir.path());
        let r = call_blocking(&ctx, "edit", json!({"path": "f.txt", "old_text": "OLD", "new_text": new}));
        prop_assert!(r.ok, "{}", r.summary);
        prop_assert_eq!(
            std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
            format!("{prefix}{new}{suffix}")
        );
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    // No input string resolves to a path outside the root, whatever links exist.
    #[test]
    fn resolve_never_leaves_the_workspace(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("..".to_string()), Just(".".to_string()), Just("".to_string()),
                Just("sub".to_string()), Just("out".to_string()), Just("dangling".to_string()),
                Just("loop".to_string()), Just("inner".to_string()), Just("new".to_string()),
                "[a-z.]{1,4}",
            ],
            0..7,
        ),
        absolute in any::<bool>(),
        noise in ".{0,6}",
    ) {
        let (dir, outside) = (escape_fixture(), tempfile::tempdir().unwrap());
        symlink(outside.path(), &dir.path().join("out"));
        symlink(&outside.path().join("missing"), &dir.path().join("dangling"));
        let ws = Workspace::new(dir.path()).unwrap();
        let mut input = parts.join("/");
        if absolute {
            input.insert(0, '/');
        }
        for candidate in [input.clone(), format!("{input}{noise}")] {
            if let Ok(path) = ws.resolve(&candidate) {
                prop_assert!(path.starts_with(ws.root()), "{candidate} -> {}", path.display());
                // Whatever part exists really is inside, links resolved.
                let mut existing = path.as_path();
                while !existing.exists() {
                    existing = existing.parent().unwrap();
                }
                prop_assert!(existing.canonicalize().unwrap().starts_with(ws.root()));
                prop_assert!(
                    !path.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink()),
                    "{candidate} resolved to a link"
                );
            }
        }
    }
}

/// A workspace with a subdirectory, a link inside it and a symlink loop.
fn escape_fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "sub/file.txt", "x");
    symlink(Path::new("sub"), &dir.path().join("inner"));
    symlink(Path::new("loop"), &dir.path().join("loop"));
    dir
}

#[tokio::test]
async fn symlinks_out_of_the_workspace_are_refused_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.txt", "needle\n");
    symlink(outside.path(), &dir.path().join("out"));
    symlink(
        &outside.path().join("secret.txt"),
        &dir.path().join("link.txt"),
    );
    write(dir.path(), "mine.txt", "needle here\n");
    let ctx = context(dir.path());

    for (tool, args) in [
        ("read", json!({"path": "out/secret.txt"})),
        ("read", json!({"path": "link.txt"})),
        ("read", json!({"path": "../x"})),
        ("read", json!({"path": "/etc/passwd"})),
        ("write", json!({"path": "out/new.txt", "content": "x"})),
        (
            "edit",
            json!({"path": "link.txt", "old_text": "needle", "new_text": "x"}),
        ),
        ("ls", json!({"path": "out"})),
        ("grep", json!({"pattern": "needle", "path": "out"})),
        ("find", json!({"pattern": "*", "path": "out"})),
        ("exec", json!({"command": "true", "cwd": "out"})),
    ] {
        let r = call(&ctx, tool, args.clone()).await;
        assert_eq!(
            r.error,
            Some(ToolErrorCode::OutsideWorkspace),
            "{tool} {args}: {}",
            r.summary
        );
    }
    assert!(!outside.path().join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "needle\n"
    );

    // Walks list the links but never follow them out.
    let r = call(&ctx, "grep", json!({"pattern": "needle"})).await;
    assert_eq!(r.output, "mine.txt:1:needle here");
    let r = call(&ctx, "find", json!({"pattern": "*.txt"})).await;
    assert!(!r.output.contains("secret"), "{}", r.output);
}

// ---------------------------------------------------------------- find / ls

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".gitignore", "target/\n*.log\n");
    write(dir.path(), "src/lib.rs", "pub fn new() {}\n");
    write(dir.path(), "src/tools/mod.rs", "fn helper() {}\n");
    write(dir.path(), "src/tools/read.rs", "fn new(x: u8) {}\n");
    write(dir.path(), "target/debug/gen.rs", "fn new() {}\n");
    write(dir.path(), "build.log", "fn new()\n");
    write(dir.path(), "README.md", "call new() here\n");
    write(dir.path(), ".github/ci.yml", "on: push\n");
    write(dir.path(), ".git/HEAD", "ref: refs/heads/main\n");
    dir
}

#[tokio::test]
async fn find_matches_globs_and_honours_gitignore() {
    let dir = tree();
    let ctx = context(dir.path());
    let r = call(&ctx, "find", json!({"pattern": "*.rs"})).await;
    assert!(r.ok);
    assert_eq!(r.output, "src/lib.rs\nsrc/tools/mod.rs\nsrc/tools/read.rs");
    let r = call(&ctx, "find", json!({"pattern": "src/*.rs"})).await;
    assert_eq!(r.output, "src/lib.rs");
    let r = call(
        &ctx,
        "find",
        json!({"pattern": "**/*.rs", "path": "src/tools"}),
    )
    .await;
    assert_eq!(r.output, "src/tools/mod.rs\nsrc/tools/read.rs");
    let r = call(&ctx, "find", json!({"pattern": "tools"})).await;
    assert_eq!(r.output, "src/tools/");
    let r = call(&ctx, "find", json!({"pattern": "*.log"})).await;
    assert!(
        r.output.is_empty() && r.summary.starts_with("no paths match"),
        "{}",
        r.summary
    );
    // Hidden files are found; .git never is.
    let r = call(&ctx, "find", json!({"pattern": "*"})).await;
    assert!(r.output.contains(".github/ci.yml"), "{}", r.output);
    assert!(!r.output.contains(".git/"), "{}", r.output);

    let r = call(&ctx, "find", json!({"pattern": "*.rs", "max_results": 2})).await;
    assert_eq!(r.data["truncated"], true);
    assert!(r.output.ends_with("[results cut at 2]"), "{}", r.output);
    assert!(r.summary.contains("there are more"), "{}", r.summary);
    let r = call(&ctx, "find", json!({"pattern": "a["})).await;
    assert_eq!(r.error, Some(ToolErrorCode::InvalidArgument));
}

#[tokio::test]
async fn ls_lists_a_tree_to_the_given_depth() {
    let dir = tree();
    let ctx = context(dir.path());
    let r = call(&ctx, "ls", json!({})).await;
    assert_eq!(r.output, ".github/\n.gitignore\nREADME.md\nsrc/");
    let r = call(&ctx, "ls", json!({"path": "src", "depth": 2})).await;
    assert_eq!(r.output, "lib.rs\ntools/\n  mod.rs\n  read.rs");
    assert_eq!(r.summary, "`src`: 1 directories, 3 files (depth 2)");
    let r = call(&ctx, "ls", json!({"path": "missing"})).await;
    assert_eq!(r.error, Some(ToolErrorCode::NotFound));
}

// ---------------------------------------------------------------- grep

#[tokio::test]
async fn grep_prints_matches_like_rg_and_honours_gitignore() {
    let dir = tree();
    let ctx = context(dir.path());
    let r = call(&ctx, "grep", json!({"pattern": r"fn\s+new"})).await;
    assert!(r.ok);
    assert_eq!(
        r.output,
        "src/lib.rs:1:pub fn new() {}\nsrc/tools/read.rs:1:fn new(x: u8) {}"
    );
    assert_eq!(r.data["matches"], 2);
    let r = call(&ctx, "grep", json!({"pattern": "NEW", "glob": "*.md"})).await;
    assert!(
        r.output.is_empty() && r.summary.starts_with("no matches"),
        "{}",
        r.summary
    );
    let r = call(
        &ctx,
        "grep",
        json!({"pattern": "NEW", "glob": "*.md", "case_sensitive": false}),
    )
    .await;
    assert_eq!(r.output, "README.md:1:call new() here");
    let r = call(
        &ctx,
        "grep",
        json!({"pattern": "fn", "path": "src/tools/mod.rs"}),
    )
    .await;
    assert_eq!(r.output, "src/tools/mod.rs:1:fn helper() {}");
    let r = call(&ctx, "grep", json!({"pattern": "fn (", "path": "src"})).await;
    assert_eq!(r.error, Some(ToolErrorCode::InvalidArgument));
    assert!(r.summary.contains("not a valid regex"), "{}", r.summary);
}

#[tokio::test]
async fn grep_shows_context_and_caps_results() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (1..=12).map(|i| format!("row {i}\n")).collect();
    write(dir.path(), "a.txt", &body);
    write(dir.path(), "b.txt", "row x\nrow 5\n");
    std::fs::write(dir.path().join("blob.bin"), b"row 5\0\x01").unwrap();
    let ctx = context(dir.path());

    let r = call(
        &ctx,
        "grep",
        json!({"pattern": "^row (2|9)$", "context": 1}),
    )
    .await;
    assert_eq!(
        r.output,
        "a.txt-1-row 1\na.txt:2:row 2\na.txt-3-row 3\n--\na.txt-8-row 8\na.txt:9:row 9\na.txt-10-row 10"
    );

    let r = call(&ctx, "grep", json!({"pattern": "row 5", "context": 1})).await;
    assert_eq!(
        r.output,
        "a.txt-4-row 4\na.txt:5:row 5\na.txt-6-row 6\n--\nb.txt-1-row x\nb.txt:2:row 5"
    );
    assert_eq!(r.data["binary_files_skipped"], 1);

    // The cap shows the first matches in path order and says how many were left out.
    let r = call(&ctx, "grep", json!({"pattern": "row", "max_results": 3})).await;
    assert_eq!(
        r.output,
        "a.txt:1:row 1\na.txt:2:row 2\na.txt:3:row 3\n[11 more matching lines not shown]"
    );
    assert_eq!(r.data["matches"], 14);
    assert_eq!(r.data["truncated"], true);
    assert!(r.summary.contains("first 3 of 14"), "{}", r.summary);
}

#[tokio::test]
async fn grep_output_is_the_same_on_every_call() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..60 {
        write(
            dir.path(),
            &format!("d{}/f{i}.txt", i % 7),
            "hit\nmiss\nhit\n",
        );
    }
    let ctx = context(dir.path());
    let first = call(&ctx, "grep", json!({"pattern": "hit", "max_results": 25})).await;
    for _ in 0..5 {
        let again = call(&ctx, "grep", json!({"pattern": "hit", "max_results": 25})).await;
        assert_eq!(again.output, first.output);
    }
    assert_eq!(first.data["matches"], 120);
    assert!(
        first
            .output
            .starts_with("d0/f0.txt:1:hit\nd0/f0.txt:3:hit\nd0/f14.txt:1:hit")
    );
}

/// The patterns `grep_answers_as_a_fresh_tool_whatever_came_before`
/// picks from: the same text as a regex and escaped, in two cases.
const GREP_PATTERNS: [&str; 5] = [r"fn\s+new", "NEW", "new", r"new\(\)", "new()"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    // One tool keeps the patterns it compiled for the run's later calls:
    // whatever calls came before, each answers as a fresh tool would.
    #[test]
    fn grep_answers_as_a_fresh_tool_whatever_came_before(
        calls in proptest::collection::vec(
            (0..GREP_PATTERNS.len(), any::<bool>(), any::<bool>()),
            1..10,
        ),
    ) {
        let dir = tree();
        let ctx = context(dir.path());
        let tool = builtin("grep").unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        for (pattern, case_sensitive, context_lines) in calls {
            let args = json!({
                "pattern": GREP_PATTERNS[pattern],
                "case_sensitive": case_sensitive,
                "context": u8::from(context_lines),
            });
            let kept = runtime.block_on(call_checked(tool.as_ref(), args.clone(), &ctx));
            let fresh = call_blocking(&ctx, "grep", args.clone());
            prop_assert_eq!(
                (&kept.output, &kept.summary, &kept.data),
                (&fresh.output, &fresh.summary, &fresh.data),
                "{}", args
            );
        }
    }
}

/// A tree past what is searched on one thread (200 files) is finished by
/// the parallel walk: each file counted once, the same first lines shown,
/// the files a deny rule covers skipped on either side of the switch.
#[tokio::test]
async fn grep_on_a_large_tree_counts_every_file_once() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..450 {
        write(
            dir.path(),
            &format!("d{}/f{i:03}.txt", i % 9),
            "hit\nmiss\nhit\n",
        );
    }
    let mut ctx = context(dir.path());
    ctx.access = agentci::tools::FileAccess::new(
        |path| {
            path.ends_with("7.txt")
                .then(|| "read(**/*7.txt)".to_string())
        },
        false,
    );
    let first = call(&ctx, "grep", json!({"pattern": "hit", "max_results": 5})).await;
    assert!(first.ok, "{}", first.summary);
    assert_eq!(first.data["matches"], 2 * 405);
    assert_eq!(first.data["files"], 405);
    assert_eq!(first.data["denied_skipped"], 45);
    assert!(
        first.output.starts_with(
            "d0/f000.txt:1:hit\nd0/f000.txt:3:hit\nd0/f009.txt:1:hit\nd0/f009.txt:3:hit\n\
             d0/f018.txt:1:hit\n"
        ),
        "{}",
        first.output
    );
    for _ in 0..3 {
        let again = call(&ctx, "grep", json!({"pattern": "hit", "max_results": 5})).await;
        assert_eq!(
            (again.output, again.data),
            (first.output.clone(), first.data.clone())
        );
    }
}

// ---------------------------------------------------------------- exec

#[tokio::test]
async fn exec_reports_exit_code_and_both_streams() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let mut ctx = context(dir.path());
    ctx.processes = agentci::process::ProcessRunner::unsandboxed(
        &[("AGENTCI_TEST_VAR".into(), "from-env".into())],
        Default::default(),
    );

    let r = call(
        &ctx,
        "exec",
        json!({"command": "echo $AGENTCI_TEST_VAR; pwd"}),
    )
    .await;
    assert!(r.ok, "{}", r.summary);
    assert_eq!(r.summary, "exit code 0");
    let root = ctx.workspace.root().display().to_string();
    assert_eq!(r.output, format!("from-env\n{root}\n"));

    let r = call(
        &ctx,
        "exec",
        json!({"command": "pwd; echo oops >&2; exit 3", "cwd": "sub"}),
    )
    .await;
    assert!(!r.ok);
    assert_eq!(r.error, None, "a failing command is not a tool error");
    assert_eq!(r.summary, "exit code 3");
    assert_eq!(r.output, format!("{root}/sub\n[stderr]\noops\n"));
    assert_eq!(r.data["exit_code"], 3);

    // stdin is /dev/null: `cat` ends at once instead of waiting.
    let r = call(&ctx, "exec", json!({"command": "cat", "timeout_ms": 5000})).await;
    assert!(
        r.ok && r.summary == "exit code 0 (no output)",
        "{}",
        r.summary
    );
    let r = call(&ctx, "exec", json!({"command": "true", "cwd": "nope"})).await;
    assert_eq!(r.error, Some(ToolErrorCode::NotFound));
}

#[tokio::test]
async fn exec_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let started = Instant::now();
    let r = call(
        &ctx,
        "exec",
        json!({"command": "sleep 30 & echo $! > pid; echo started; wait", "timeout_ms": 500}),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(r.error, Some(ToolErrorCode::Timeout), "{}", r.summary);
    assert_eq!(r.output, "started\n");
    assert_eq!(r.data["timed_out"], true);
    let pid: i32 = std::fs::read_to_string(dir.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_until_dead(pid),
        "grandchild {pid} survived the timeout"
    );
}

#[tokio::test]
async fn exec_does_not_wait_for_background_processes() {
    // Regression guard: a background child holding stdout must not make the
    // call wait for it, and must not outlive the command.
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let started = Instant::now();
    let r = call(
        &ctx,
        "exec",
        json!({"command": "sleep 30 & echo $! > pid; echo done"}),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert!(r.ok, "{}", r.summary);
    assert_eq!(r.output, "done\n");
    let pid: i32 = std::fs::read_to_string(dir.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_until_dead(pid),
        "background {pid} outlived the command"
    );
}

/// True once `pid` is gone or a zombie (nobody may reap it in a container).
fn wait_until_dead(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat) => {
                let state = stat.rsplit(") ").next().and_then(|s| s.chars().next());
                if state == Some('Z') {
                    return true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[tokio::test]
async fn exec_output_is_capped_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = context(dir.path());
    ctx.limits.max_output_chars = 1000;
    let r = call(
        &ctx,
        "exec",
        json!({"command": "echo FIRST; seq 1 20000; echo LAST"}),
    )
    .await;
    assert!(r.ok);
    assert!(r.output.starts_with("FIRST\n1\n"), "{}", &r.output[..40]);
    assert!(r.output.ends_with("20000\nLAST\n"));
    let cut = r.data["cut_bytes"].as_u64().unwrap();
    let total = r.data["stdout_bytes"].as_u64().unwrap();
    assert_eq!(total, 108_905);
    assert_eq!(cut, total - 1000);
    assert!(
        r.output
            .contains(&format!("[... {cut} of {total} bytes of stdout cut ...]"))
    );
    assert!(
        r.summary.contains(&format!("{cut} bytes not shown")),
        "{}",
        r.summary
    );
    assert!(r.output.chars().count() < 1100);
}

// Regression (issue 22, item 6): `cwd` in a skill folder was refused as
// "read-only … write in the workspace instead" though running there
// writes nothing; other read-only places stay refused.
#[tokio::test]
async fn exec_runs_in_a_skill_folder_given_as_cwd() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    write(&root, "ws/.agents/skills/inner/SKILL.md", "x");
    write(&root, "ws/.git/HEAD", "ref: refs/heads/main\n");
    write(&root, "skills/outer/SKILL.md", "x");
    let ws = root.join("ws");
    let mut ctx = context(&ws);
    ctx.workspace = ctx
        .workspace
        .with_skill_folder(&root.join("skills/outer"))
        .unwrap()
        .with_skill_folder(&ws.join(".agents/skills/inner"))
        .unwrap();
    let outer = root.join("skills/outer").display().to_string();
    for (cwd, shown) in [
        (outer.as_str(), outer.clone()),
        (".agents/skills/inner", ".agents/skills/inner".to_string()),
    ] {
        let r = call(&ctx, "exec", json!({"command": "pwd", "cwd": cwd})).await;
        assert!(r.ok, "{cwd}: {r:?}");
        assert_eq!(r.data["cwd"], shown);
    }
    for refused in [".git", "/tmp", "../skills/outer"] {
        let r = call(&ctx, "exec", json!({"command": "pwd", "cwd": refused})).await;
        assert!(!r.ok, "{refused}: {r:?}");
    }
}
