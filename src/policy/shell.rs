//! Reading an `exec` command line the way bash will run it.
//!
//! `exec` runs its command with [`SHELL`](crate::process::SHELL) (bash), so the line is parsed with
//! a bash grammar (`brush-parser`), not split by hand: a hand-written
//! splitter disagrees with the shell about comments, escapes and
//! redirections, and every disagreement is a way to run a command no rule
//! allowed. The parse is flattened into what the rules judge: every simple
//! command wherever it sits (pipelines, lists, subshells, command
//! substitutions, `if`/`for`/`while`/`case` bodies, function bodies), every
//! redirection (a write or a read of a file), and the *hazards*: anything an
//! allow rule must not vouch for because the text the rule reads is not what
//! bash runs. This module only reads the line; [`super::command`] judges it.

use brush_parser::ast::{self, Command, CommandPrefixOrSuffixItem, CompoundCommand, IoRedirect};
use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::{ParserOptions, Token};

use super::skill_programs::SkillPrograms;

mod evaluated;

/// Programs that run another program named in their arguments (or a
/// string as code). An allow rule naming the outer program would vouch for
/// whatever it runs, so under an allow rule a line using one is refused;
/// a deny rule looks at every word after them.
#[rustfmt::skip] // one long list, kept compact
pub const WRAPPERS: &[&str] = &[
    "command", "builtin", "exec", "env", "eval", "xargs", "sudo", "doas", "su", "nohup", "timeout",
    "nice", "ionice", "stdbuf", "setsid", "time", "chroot", "unshare", "nsenter", "flock", "watch",
    "strace", "ltrace", "busybox", "source", ".", "trap", "sh", "bash", "dash", "zsh", "ksh",
    "fish", "taskset", "chrt", "prlimit", "setpriv", "runuser", "sg", "script", "parallel",
    "fakeroot", "faketime", "valgrind", "xvfb-run", "dbus-run-session", "unbuffer", "rlwrap",
    "pkexec", "systemd-run", "bwrap", "firejail", "proot", "capsh", "numactl", "catchsegv",
    "flatpak-spawn",
];

/// Programs that run a string as shell code: a deny rule cannot see what
/// they run, so a line using one is denied whenever an `exec` deny rule
/// with an argument exists.
const CODE_RUNNERS: &[&str] = &[
    "eval", "source", ".", "sh", "bash", "dash", "zsh", "ksh", "fish", "trap", "watch", "su",
    "busybox", "sg", "script", "parallel", "capsh",
];

/// The shells among [`WRAPPERS`]: given a script file (`sh scripts/x.sh`),
/// they run that file, like `python3 x.py` runs its file, rather than a
/// command hidden in the line.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "fish"];

/// `sh FILE …`: a shell whose first argument is a script file, not an
/// option (`-c`, `-s`, `-`) and not absent (reading commands from stdin).
fn runs_a_script_file(program: &str, args: &[String]) -> bool {
    SHELLS.contains(&program) && args.first().is_some_and(|first| !first.starts_with('-'))
}

/// `find`'s actions that run the command written after them.
const FIND_ACTIONS_THAT_RUN: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];

/// Whether `program` with `args` runs another command: a wrapper (a shell
/// given a script file aside), or `find` with an action that runs one.
fn runs_another_command(program: &str, args: &[String]) -> bool {
    if program == "find" {
        return args
            .iter()
            .any(|arg| FIND_ACTIONS_THAT_RUN.contains(&arg.as_str()));
    }
    WRAPPERS.contains(&program) && !runs_a_script_file(program, args)
}

/// A command line as bash will run it.
#[derive(Debug, Default)]
pub struct ShellLine {
    pub commands: Vec<SimpleCommand>,
    pub redirects: Vec<Redirect>,
    /// Why an allow rule cannot vouch for this line, each with the fix.
    pub hazards: Vec<String>,
}

/// One simple command: a program and its arguments.
#[derive(Debug, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The words as written, joined by one space: what allow rules match.
    pub text: String,
    /// The command as the program will see it (quotes and escapes removed,
    /// the program reduced to its base name), and each command a wrapper
    /// such as `command`, `env` or `sudo` could run: what deny rules match.
    pub deny_forms: Vec<String>,
    /// Why nobody can tell which program runs, when that is so.
    pub opaque: Option<String>,
    /// The program, when it is given by an absolute path or a path with
    /// `..` (and written plainly): no allow rule vouches for it unless it
    /// is a loaded skill's file ([`ShellLine::hazards_with`]).
    pub program_path: Option<String>,
}

impl ShellLine {
    /// Why an allow rule cannot vouch for this line: the hazards of the
    /// line, and each program given by a path that is not a file of a
    /// loaded skill (`programs`).
    pub fn hazards_with(&self, programs: &SkillPrograms) -> Vec<String> {
        let paths = self
            .commands
            .iter()
            .filter_map(|c| c.program_path.as_deref())
            .filter(|path| !programs.holds(path))
            .map(|path| outside_program(path, programs));
        let mut all: Vec<String> = self.hazards.iter().cloned().chain(paths).collect();
        all.dedup();
        all
    }
}

/// Why the program at `path` (not a loaded skill's file) cannot be vouched for.
fn outside_program(path: &str, programs: &SkillPrograms) -> String {
    let skills = match programs.is_empty() {
        true => "",
        false => " and is not a file inside a skill folder of this run",
    };
    format!(
        "the program `{path}` is given by an absolute path or one with `..`{skills}, so \
         no allow rule can vouch for it; call an installed program by its name, a \
         workspace script by its path relative to the workspace (`./scripts/x.sh`), or a \
         skill's script by its absolute path inside the skill's folder"
    )
}

/// A file a redirection opens.
#[derive(Debug, PartialEq, Eq)]
pub struct Redirect {
    pub write: bool,
    /// The path after quote removal, or `None` when it is only known at run time.
    pub path: Option<String>,
    /// The target as written, for messages.
    pub raw: String,
}

/// Why a line was not judged: it is not valid bash, or it goes where the
/// reading stops (too deep, a construct it does not follow).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct UnreadableLine {
    pub reason: String,
}

/// Parse `line` as bash would; `Err` says why it is not valid bash.
pub fn parse(line: &str) -> Result<ShellLine, UnreadableLine> {
    let mut out = ShellLine::default();
    parse_into(line, &mut out, 0).map_err(|reason| UnreadableLine { reason })?;
    out.hazards.dedup();
    Ok(out)
}

fn options() -> ParserOptions {
    // `bash -c` runs with extglob off; parse as it will.
    ParserOptions {
        enable_extended_globbing: false,
        ..ParserOptions::default()
    }
}

/// Command substitutions nest; past this depth a line is not judged.
const MAX_DEPTH: usize = 8;

fn parse_into(line: &str, out: &mut ShellLine, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("command substitutions are nested too deeply to judge".into());
    }
    let options = options();
    let tokens = brush_parser::tokenize_str_with_options(line, &options.tokenizer_options())
        .map_err(|e| format!("it is not valid bash ({e})"))?;
    if has_comment(line, &tokens) {
        out.hazards.push(
            "a comment could hide a second command (the rest of the line after `#` is not \
             run, and quotes there do not count); rewrite without the comment"
                .into(),
        );
    }
    let program = brush_parser::parse_tokens(&tokens, &options)
        .map_err(|e| format!("it is not valid bash ({e})"))?;
    let mut walker = Walker { out, depth };
    for list in &program.complete_commands {
        walker.list(list)?;
    }
    Ok(())
}

/// The tokenizer drops comments, so a `#` outside every token started one.
/// A token's span may start early (a newline token starts where the
/// comment before it did), so each token is measured back from its end.
fn has_comment(line: &str, tokens: &[Token]) -> bool {
    let spans: Vec<(usize, usize)> = tokens
        .iter()
        .map(|t| {
            let end = t.location().end.index;
            (end.saturating_sub(t.to_str().chars().count()), end)
        })
        .collect();
    line.chars()
        .enumerate()
        .any(|(i, c)| c == '#' && !spans.iter().any(|&(s, e)| s <= i && i < e))
}

struct Walker<'o> {
    out: &'o mut ShellLine,
    depth: usize,
}

impl Walker<'_> {
    fn hazard(&mut self, why: impl Into<String>) {
        self.out.hazards.push(why.into());
    }

    fn list(&mut self, list: &ast::CompoundList) -> Result<(), String> {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first)?;
            for next in &and_or.additional {
                let (ast::AndOr::And(p) | ast::AndOr::Or(p)) = next;
                self.pipeline(p)?;
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline) -> Result<(), String> {
        for command in &pipeline.seq {
            self.command(command)?;
        }
        Ok(())
    }

    fn command(&mut self, command: &Command) -> Result<(), String> {
        match command {
            Command::Simple(simple) => self.simple(simple),
            Command::Compound(compound, redirects) => {
                self.compound(compound)?;
                self.redirect_list(redirects.as_ref())
            }
            Command::Function(function) => {
                self.compound(&function.body.0)?;
                self.redirect_list(function.body.1.as_ref())
            }
            Command::ExtendedTest(test, redirects) => {
                let text = test.to_string();
                let seen = !evaluated::test_evaluates(&test.expr) && !text.contains('$');
                self.opaque_construct("a `[[ … ]]` test", &text, seen)?;
                self.redirect_list(redirects.as_ref())
            }
        }
    }

    fn compound(&mut self, compound: &CompoundCommand) -> Result<(), String> {
        match compound {
            CompoundCommand::BraceGroup(g) => self.list(&g.list),
            CompoundCommand::Subshell(s) => self.list(&s.list),
            CompoundCommand::ForClause(f) => {
                for value in f.values.iter().flatten() {
                    self.argument_word(value)?;
                }
                self.list(&f.body.list)
            }
            CompoundCommand::CaseClause(c) => {
                self.argument_word(&c.value)?;
                for item in &c.cases {
                    for pattern in &item.patterns {
                        self.argument_word(pattern)?;
                    }
                    if let Some(body) = &item.cmd {
                        self.list(body)?;
                    }
                }
                Ok(())
            }
            CompoundCommand::IfClause(i) => {
                self.list(&i.condition)?;
                self.list(&i.then)?;
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.list(c)?;
                    }
                    self.list(&e.body)?;
                }
                Ok(())
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.list(&w.0)?;
                self.list(&w.1.list)
            }
            CompoundCommand::Arithmetic(a) => {
                let seen = evaluated::arithmetic_is_plain(&a.expr.value);
                self.opaque_construct("an arithmetic command `(( … ))`", &a.expr.value, seen)
            }
            CompoundCommand::ArithmeticForClause(f) => {
                self.opaque_construct("an arithmetic `for ((…))` loop", "", false)?;
                self.list(&f.body.list)
            }
            CompoundCommand::Coprocess(c) => {
                self.hazard(
                    "`coproc` runs a command in the background out of sight; run it directly",
                );
                self.command(&c.body)
            }
        }
    }

    /// Code the parser does not hand back as commands: refused under an
    /// allow rule, and a command nobody can see for deny rules.
    fn unseen(&mut self, what: &str) {
        self.hazard(format!(
            "{what} can run commands that are not judged; compute the value another way"
        ));
        self.out.commands.push(SimpleCommand {
            text: String::new(),
            deny_forms: Vec::new(),
            program_path: None,
            opaque: Some(format!(
                "{what} can run commands nobody can see before it runs"
            )),
        });
    }

    /// A construct whose insides are not judged word by word: arithmetic
    /// runs the code a variable or a subscript holds. Refused under an
    /// allow rule; for deny rules it counts as a command nobody can see
    /// unless it is `seen` to evaluate nothing but plain values.
    fn opaque_construct(&mut self, what: &str, text: &str, seen: bool) -> Result<(), String> {
        self.hazard(format!(
            "{what} is not judged piece by piece; rewrite it as plain commands"
        ));
        if !seen || text.contains("$(") || text.contains('`') || text.contains('[') {
            self.out.commands.push(SimpleCommand {
                text: text.to_string(),
                deny_forms: Vec::new(),
                program_path: None,
                opaque: Some(format!(
                    "{what} can run commands nobody can see before it runs"
                )),
            });
        }
        Ok(())
    }

    fn redirect_list(&mut self, list: Option<&ast::RedirectList>) -> Result<(), String> {
        for r in list.iter().flat_map(|l| l.0.iter()) {
            self.redirect(r)?;
        }
        Ok(())
    }

    fn simple(&mut self, simple: &ast::SimpleCommand) -> Result<(), String> {
        let mut words: Vec<WordInfo> = Vec::new();
        let items = simple.prefix.iter().flat_map(|p| p.0.iter());
        for item in items {
            match item {
                CommandPrefixOrSuffixItem::AssignmentWord(assignment, raw) => {
                    self.hazard(format!(
                        "the assignment `{}` before the command changes how it runs \
                         (PATH, LD_PRELOAD, …); set variables in the job's `env:` instead",
                        raw.value
                    ));
                    self.assignment(assignment)?;
                }
                other => self.item(other, &mut words)?,
            }
        }
        if let Some(w) = &simple.word_or_name {
            words.push(self.word(w)?);
        }
        for item in simple.suffix.iter().flat_map(|s| s.0.iter()) {
            self.item(item, &mut words)?;
        }
        if words.is_empty() {
            return Ok(());
        }
        self.record(&words);
        Ok(())
    }

    fn item(
        &mut self,
        item: &CommandPrefixOrSuffixItem,
        words: &mut Vec<WordInfo>,
    ) -> Result<(), String> {
        match item {
            CommandPrefixOrSuffixItem::IoRedirect(r) => self.redirect(r),
            CommandPrefixOrSuffixItem::Word(w) => {
                words.push(self.word(w)?);
                Ok(())
            }
            // After the program name `X=1` is an ordinary argument (`make X=1`).
            CommandPrefixOrSuffixItem::AssignmentWord(_, w) => {
                words.push(self.word(w)?);
                Ok(())
            }
            CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                self.process_substitution(sub)
            }
        }
    }

    fn process_substitution(&mut self, sub: &ast::SubshellCommand) -> Result<(), String> {
        self.hazard(
            "a process substitution `<(…)`/`>(…)` runs a command whose output is passed \
             as a file name; run the command separately",
        );
        self.list(&sub.list)
    }

    fn assignment(&mut self, assignment: &ast::Assignment) -> Result<(), String> {
        // `a[$(touch m)]=1`: the subscript is arithmetic, which runs code.
        if let ast::AssignmentName::ArrayElementName(_, index) = &assignment.name
            && !index.trim().chars().all(|c| c.is_ascii_digit())
        {
            self.unseen("an array subscript in an assignment (`a[…]=`)");
        }
        match &assignment.value {
            ast::AssignmentValue::Scalar(w) => self.argument_word(w),
            ast::AssignmentValue::Array(items) => {
                for (key, value) in items {
                    if let Some(k) = key {
                        self.argument_word(k)?;
                    }
                    self.argument_word(value)?;
                }
                Ok(())
            }
        }
    }

    fn argument_word(&mut self, w: &ast::Word) -> Result<(), String> {
        let info = self.word(w)?;
        self.argument_hazards(&info);
        Ok(())
    }

    fn redirect(&mut self, r: &IoRedirect) -> Result<(), String> {
        match r {
            IoRedirect::File(_, kind, target) => {
                use ast::IoFileRedirectKind as K;
                let write = !matches!(kind, K::Read | K::DuplicateInput);
                match target {
                    ast::IoFileRedirectTarget::Filename(w) => self.redirect_to(w, write),
                    ast::IoFileRedirectTarget::Fd(_) => Ok(()),
                    ast::IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                        self.process_substitution(sub)
                    }
                    // `>&2` and `2>&-` duplicate or close a descriptor, but
                    // `>&name` writes (stdout and stderr) to the file `name`.
                    ast::IoFileRedirectTarget::Duplicate(w) => {
                        let fd = w.value.trim_end_matches('-');
                        if fd.chars().all(|c| c.is_ascii_digit()) {
                            Ok(())
                        } else {
                            self.redirect_to(w, write)
                        }
                    }
                }
            }
            IoRedirect::OutputAndError(w, _) => self.redirect_to(w, true),
            IoRedirect::HereDocument(_, doc) => {
                self.hazard(
                    "a here-document's body is not judged and can hide commands; pass the \
                     text another way (write a file first)",
                );
                // An unquoted delimiter expands the body: `$(…)` in it runs.
                if doc.requires_expansion {
                    let pieces = word::parse_heredoc(&doc.doc.value, &options())
                        .map_err(|e| format!("it is not valid bash ({e})"))?;
                    let mut info = WordInfo::default();
                    self.pieces(&pieces, &mut info, &mut None, true)?;
                }
                Ok(())
            }
            IoRedirect::HereString(_, w) => self.argument_word(w),
        }
    }

    fn redirect_to(&mut self, w: &ast::Word, write: bool) -> Result<(), String> {
        let info = self.word(w)?;
        self.argument_hazards(&info);
        let path = if info.expands || info.glob || info.brace {
            None
        } else {
            info.value.clone()
        };
        self.out.redirects.push(Redirect {
            write,
            path,
            raw: info.raw,
        });
        Ok(())
    }

    /// Analyze a word and judge the commands its substitutions run.
    fn word(&mut self, w: &ast::Word) -> Result<WordInfo, String> {
        let pieces =
            word::parse(&w.value, &options()).map_err(|e| format!("it is not valid bash ({e})"))?;
        let mut info = WordInfo {
            raw: w.value.clone(),
            ..WordInfo::default()
        };
        let mut value = Some(String::new());
        self.pieces(&pieces, &mut info, &mut value, false)?;
        // `${x:-$(cmd)}`, `${a[$(cmd)]}`: the words inside a parameter
        // expansion are not parsed out, so code in them goes unseen.
        if info.parameter && w.value.contains(['`', '[', '(']) {
            self.unseen("a parameter expansion holding code (`${x:-$(…)}`, `${a[…]}`)");
        }
        info.value = value;
        info.quote_pieces = pieces.iter().filter(|p| is_quoted(&p.piece)).count();
        info.mixed_quotes = info.quote_pieces > 0 && pieces.len() > 1;
        Ok(info)
    }

    fn pieces(
        &mut self,
        pieces: &[WordPieceWithSource],
        info: &mut WordInfo,
        value: &mut Option<String>,
        in_quotes: bool,
    ) -> Result<(), String> {
        let push = |value: &mut Option<String>, s: &str| {
            if let Some(v) = value.as_mut() {
                v.push_str(s);
            }
        };
        for piece in pieces {
            match &piece.piece {
                WordPiece::Text(t) => {
                    if !in_quotes {
                        info.glob |= t.contains(['*', '?', '[']);
                        info.brace |= t.contains('{');
                    }
                    push(value, t);
                }
                WordPiece::SingleQuotedText(t) => push(value, t),
                WordPiece::AnsiCQuotedText(t) => {
                    info.escaped = true;
                    push(value, t);
                }
                WordPiece::EscapeSequence(e) => {
                    info.escaped = true;
                    push(value, e.strip_prefix('\\').unwrap_or(e));
                }
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(inner, info, value, true)?;
                }
                WordPiece::TildeExpansion(_) => {
                    info.expands = true;
                    *value = None;
                }
                WordPiece::ParameterExpansion(expr) => {
                    info.expands = true;
                    info.parameter = true;
                    *value = None;
                    self.parameter(expr)?;
                }
                // `$(( a[$(cmd)] ))`: array subscripts in arithmetic run
                // commands the parser does not hand back as words.
                WordPiece::ArithmeticExpression(_) => {
                    info.expands = true;
                    *value = None;
                    self.unseen("an arithmetic expansion `$((…))`");
                }
                WordPiece::CommandSubstitution(body)
                | WordPiece::BackquotedCommandSubstitution(body) => {
                    info.expands = true;
                    *value = None;
                    parse_into(body, self.out, self.depth + 1)?;
                }
            }
        }
        Ok(())
    }

    /// Judge what a parameter expansion evaluates, and the words nested
    /// in it (`${x:-${!y}}`), which bash expands in turn.
    fn parameter(&mut self, expr: &word::ParameterExpr) -> Result<(), String> {
        let (why, nested) = evaluated::parameter(expr);
        if let Some(why) = why {
            self.evaluated(&why);
        }
        for text in nested {
            let pieces =
                word::parse(text, &options()).map_err(|e| format!("it is not valid bash ({e})"))?;
            self.pieces(&pieces, &mut WordInfo::default(), &mut None, false)?;
        }
        Ok(())
    }

    /// A value bash evaluates as code: refused under an allow rule, and a
    /// command nobody can see for deny rules.
    fn evaluated(&mut self, why: &str) {
        self.hazard(why.to_string());
        self.out.commands.push(SimpleCommand {
            text: String::new(),
            deny_forms: Vec::new(),
            program_path: None,
            opaque: Some(
                "a value bash evaluates as code can run commands nobody can see before it runs"
                    .into(),
            ),
        });
    }

    fn argument_hazards(&mut self, info: &WordInfo) {
        if info.escaped {
            self.hazard(format!(
                "the escape in `{}` makes the text differ from what runs; quote the whole word \
                 with single quotes instead",
                info.raw
            ));
        }
        if info.mixed_quotes {
            self.hazard(format!(
                "the quotes inside the word `{}` make the text differ from what runs; quote \
                 the whole word (`'--name=value'`, not `--name='value'`)",
                info.raw
            ));
        }
    }

    fn record(&mut self, words: &[WordInfo]) {
        for w in words {
            self.argument_hazards(w);
        }
        let program = &words[0];
        let name = program.value.clone().filter(|_| !program.expands);
        let mut program_path = None;
        match program_hazard(program) {
            Some(why) => self.hazard(why),
            None if is_outside_path(&program.raw) => program_path = Some(program.raw.clone()),
            None => {}
        }
        if let Some(why) = name
            .as_deref()
            .and_then(|name| evaluated::builtin_argument(base_name(name), &words[1..]))
        {
            self.evaluated(&why);
        }
        let text = words
            .iter()
            .map(|w| w.raw.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let mut opaque = None;
        if program.expands || program.glob || program.brace {
            opaque = Some(format!(
                "the program name `{}` is only known when the line runs",
                program.raw
            ));
        }
        let mut deny_forms = vec![text.clone()];
        if let Some(name) = &name {
            let base = base_name(name).to_string();
            let plain: Vec<String> = words[1..]
                .iter()
                .map(|w| w.value.clone().unwrap_or_else(|| w.raw.clone()))
                .collect();
            deny_forms.push(join(&base, &plain));
            if runs_another_command(&base, &plain) {
                if opaque.is_none() && CODE_RUNNERS.contains(&base.as_str()) {
                    opaque = Some(format!("`{base}` runs a string as commands"));
                }
                self.hazard(format!(
                    "`{base}` runs another command, which an allow rule for `{base}` would \
                     vouch for unseen; call the command directly"
                ));
                // Whatever follows a wrapper may be the program it runs
                // (`sudo -u root rm …`): every later word is a candidate.
                for start in 0..plain.len() {
                    deny_forms.push(join(base_name(&plain[start]), &plain[start + 1..]));
                }
            }
        }
        deny_forms.dedup();
        self.out.commands.push(SimpleCommand {
            text,
            deny_forms,
            opaque,
            program_path,
        });
    }
}

fn join(program: &str, args: &[String]) -> String {
    std::iter::once(program)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why an allow rule cannot vouch for a program word as written.
fn program_hazard(program: &WordInfo) -> Option<String> {
    let raw = &program.raw;
    if program.expands {
        return Some(format!(
            "the program name `{raw}` comes from an expansion, so the rule cannot see which \
             program runs; name the program directly"
        ));
    }
    if program.glob || program.brace {
        return Some(format!(
            "the program name `{raw}` is a pattern bash expands; name the program directly"
        ));
    }
    if program.quote_pieces > 0 || program.escaped {
        return Some(format!(
            "the program name `{raw}` is quoted or escaped, so it reads differently from \
             what runs; write it plainly"
        ));
    }
    None
}

/// Whether the program word (plain, no quotes or expansions) is a path that
/// may lead outside the workspace: absolute, or climbing with `..`.
fn is_outside_path(raw: &str) -> bool {
    raw.starts_with('/') || raw.split('/').any(|part| part == "..")
}

fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

fn is_quoted(piece: &WordPiece) -> bool {
    matches!(
        piece,
        WordPiece::SingleQuotedText(_)
            | WordPiece::AnsiCQuotedText(_)
            | WordPiece::DoubleQuotedSequence(_)
            | WordPiece::GettextDoubleQuotedSequence(_)
    )
}

/// What a word is, as far as judging it goes.
#[derive(Debug, Default)]
struct WordInfo {
    raw: String,
    /// The word after quote removal, when nothing in it expands at run time.
    value: Option<String>,
    quote_pieces: usize,
    /// A quoted part next to other parts: `r''m`, `--name='x'`.
    mixed_quotes: bool,
    escaped: bool,
    /// Parameter, tilde, arithmetic expansion or command substitution.
    expands: bool,
    /// A parameter expansion (`$x`, `${x:-…}`).
    parameter: bool,
    /// Unquoted `*`, `?` or `[`: a pathname pattern.
    glob: bool,
    /// Unquoted `{`: possibly a brace expansion (`{rm,-rf,x}` runs `rm -rf x`).
    brace: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(line: &str) -> Vec<String> {
        parse(line)
            .unwrap()
            .commands
            .into_iter()
            .map(|c| c.text)
            .collect()
    }

    fn hazards(line: &str) -> Vec<String> {
        parse(line).unwrap().hazards_with(&SkillPrograms::default())
    }

    #[test]
    fn finds_every_simple_command() {
        assert_eq!(
            texts("cargo test && rm -rf x; echo a | sh & b || c").len(),
            6
        );
        assert_eq!(texts("(cd sub && git push)"), ["cd sub", "git push"]);
        assert_eq!(
            texts("echo $(rm x) `rm y`"),
            ["rm x", "rm y", "echo $(rm x) `rm y`"]
        );
        assert_eq!(
            texts("if a; then b; elif c; then d; else e; fi"),
            ["a", "b", "c", "d", "e"]
        );
        assert_eq!(
            texts("for i in $(a); do b; done; while c; do d; done"),
            ["a", "b", "c", "d"]
        );
        assert_eq!(texts("f() { rm x; }; f"), ["rm x", "f"]);
        assert_eq!(texts("case $(a) in x) b;; esac"), ["a", "b"]);
        assert_eq!(texts("git commit -m 'a; b'"), ["git commit -m 'a; b'"]);
    }

    // Regression: a hand-written splitter took `#'` as an open quote and
    // `\>&` as a redirection, so the second command hid from the rules.
    #[test]
    fn the_splitter_tricks_are_read_as_bash_reads_them() {
        assert_eq!(
            texts("cargo test #'\ntouch /tmp/x"),
            ["cargo test", "touch /tmp/x"]
        );
        assert!(hazards("cargo test #'\ntouch /tmp/x")[0].contains("comment"));
        assert_eq!(texts("ls \\>&touch /tmp/x"), ["ls \\>", "touch /tmp/x"]);
        assert!(hazards("a#b").is_empty());
        assert!(hazards("echo '#'").is_empty());
    }

    #[test]
    fn deny_forms_see_the_program_however_it_is_spelled() {
        for line in [
            "rm -rf x",
            "\\rm -rf x",
            "/bin/rm -rf x",
            "r''m -rf x",
            "\"rm\" -rf x",
            "command rm -rf x",
            "env -i rm -rf x",
            "X=1 rm -rf x",
            "true &&>/dev/null rm -rf x",
            "sudo -u root rm -rf x",
            "xargs rm -rf x",
            "timeout 5 rm -rf x",
        ] {
            let parsed = parse(line).unwrap();
            assert!(
                parsed
                    .commands
                    .iter()
                    .any(|c| c.deny_forms.iter().any(|f| f == "rm -rf x")),
                "{line}: {parsed:?}"
            );
        }
        for line in [
            "eval 'rm x'",
            "bash -c 'rm x'",
            "$(echo rm) x",
            "\"$P\" x",
            "{rm,x}",
        ] {
            let parsed = parse(line).unwrap();
            assert!(parsed.commands.iter().any(|c| c.opaque.is_some()), "{line}");
        }
    }

    #[test]
    fn redirections_are_files_written_or_read() {
        let targets = |line: &str| -> Vec<(bool, Option<String>)> {
            parse(line)
                .unwrap()
                .redirects
                .into_iter()
                .map(|r| (r.write, r.path))
                .collect()
        };
        assert_eq!(targets("a > /tmp/x"), [(true, Some("/tmp/x".into()))]);
        assert_eq!(targets("a 2>&1 >&2 2>&-"), []);
        assert_eq!(
            targets("a >&out &>> log"),
            [(true, Some("out".into())), (true, Some("log".into()))]
        );
        assert_eq!(targets("a < in"), [(false, Some("in".into()))]);
        assert_eq!(targets("a > $HOME/x"), [(true, None)]);
        assert_eq!(targets("(a) > 'x y'"), [(true, Some("x y".into()))]);
    }

    #[test]
    fn hazards_say_why_and_how_to_fix() {
        for (line, word) in [
            ("X=1 cargo test", "assignment"),
            ("cat <<EOF\nx\nEOF", "here-document"),
            ("diff <(a) b", "process substitution"),
            ("/usr/bin/cargo test", "path"),
            ("car'go' test", "quoted"),
            ("ca* test", "pattern"),
            ("$CARGO test", "expansion"),
            ("command cargo test", "runs another command"),
            ("cargo test --x='y'", "quotes inside"),
            ("cargo test \\;", "escape"),
        ] {
            let found = hazards(line);
            assert!(found.iter().any(|h| h.contains(word)), "{line}: {found:?}");
        }
        assert!(hazards("cargo test -- --nocapture 'a b' \"c\" 2>&1 | tail -5").is_empty());
    }

    #[test]
    fn a_shell_given_a_script_file_runs_that_file_and_nothing_hidden() {
        // A skill's scripts run as `sh /skill/scripts/x.sh`: the rule that
        // allows it vouches for that file, as `exec(python3 *)` does for a .py.
        assert!(hazards("sh scripts/count.sh form.txt").is_empty());
        assert!(hazards("bash ./x.sh").is_empty());
        for line in ["sh -c 'rm x'", "bash -s", "echo rm x | sh", "sh"] {
            assert!(!hazards(line).is_empty(), "{line}");
        }
    }

    #[test]
    fn code_hidden_in_expansions_is_refused_and_unseen() {
        for line in [
            "ls $(( a[$(touch t)] ))",
            "ls ${x:-$(touch t)}",
            "ls \"${a[$(touch t)]}\"",
        ] {
            let parsed = parse(line).unwrap();
            assert!(!parsed.hazards.is_empty(), "{line}");
            assert!(parsed.commands.iter().any(|c| c.opaque.is_some()), "{line}");
        }
        assert!(hazards("ls $HOME \"${X}\" ${Y:-z}").is_empty());
    }

    // Regression: values bash evaluates as code (a name with a subscript
    // reached by indirection, a substring offset, `@P`, a name given to a
    // builtin) ran `touch m` under `exec(ls*)`, `exec(printf *)`,
    // `exec(test *)` and `exec(read *)`.
    #[test]
    fn values_bash_evaluates_are_refused_and_unseen() {
        for line in [
            "for x in 'a[$(touch m)]'; do ls ${!x}; done",
            "ls ${PWD:x}",
            "ls ${PWD:0:x}",
            "ls ${x@P}",
            "ls \"${x@Q}\"",
            "ls ${y:-${!x}}",
            "ls ${a[i]}",
            "printf -v 'a[$(touch m)]' x",
            "printf -va[1+x] x",
            "test -v 'a[$(touch m)]'",
            "[ -v \"$x\" ]",
            "read 'a[$(touch m)]' <<< x",
            "read $x <<< x",
            "unset 'a[$(touch m)]'",
            "declare -i n",
            "local -n r",
            "export 'a[$(touch m)]=1'",
            "let x",
            "mapfile -C 'touch m' -c 1 a",
            "wait -p 'a[$(touch m)]'",
            "getopts a 'a[$(touch m)]'",
            "(( x ))",
            "[[ $x -eq 1 ]]",
            "[[ -v x ]]",
            "ls $[x]",
            "a[x]=1",
        ] {
            let parsed = parse(line).unwrap();
            assert!(!parsed.hazards.is_empty(), "{line}");
            assert!(
                parsed.commands.iter().any(|c| c.opaque.is_some()),
                "{line}: {parsed:?}"
            );
        }
        for line in [
            "ls ${PWD:1} ${PWD:0:2} ${PWD: -3} ${#PWD} ${!P*}",
            "printf '[%s]\\n' x",
            "printf -v out '%s' x",
            "test -f 'a[1]'",
            "read -r line",
            "export A=$HOME",
            "wait $!",
        ] {
            assert!(hazards(line).is_empty(), "{line}: {:?}", hazards(line));
        }
        let parsed = parse("(( 1 + 2 )); [[ -f x ]]").unwrap();
        assert!(parsed.commands.iter().all(|c| c.opaque.is_none()));
    }

    #[test]
    fn here_document_bodies_are_searched_for_commands() {
        assert!(texts("cat <<EOF\n$(rm x)\nEOF").contains(&"rm x".to_string()));
        assert!(!texts("cat <<'EOF'\n$(rm x)\nEOF").contains(&"rm x".to_string()));
    }

    #[test]
    fn what_bash_refuses_is_an_error() {
        for line in ["cargo test (", "echo 'open", "if true; then", "a && && b"] {
            assert!(parse(line).is_err(), "{line}");
        }
    }
}
