//! `agentci init`: a first job, its skill's skeleton, a GitHub workflow
//! for the chosen use and an eval suite with one fixture copied from the
//! repository, written into the repository the command stands in.
//!
//! It never replaces a file: every path is checked before anything is
//! written, and when one exists the command names them all and writes
//! nothing (`--force` replaces them). It prints what it wrote and the next
//! command to run. What the files say is [`super::init_files`]'s; what the
//! repository is, [`super::init_project`]'s.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use super::init_files::{self, MODEL, Target, Use};
use super::init_project::Project;
use super::{CliError, Exit};

#[derive(Debug, Args)]
pub struct InitArgs {
    /// What the workflow does: `fix` (fix failing tests on demand, open a pull
    /// request), `review` (review each pull request, read-only),
    /// `maintenance` (a weekly chore) or `eval` (evaluate the skill on every
    /// pull request).
    #[arg(long = "use", value_enum, default_value = "fix", value_name = "USE")]
    pub use_: Use,
    /// The command that runs the tests (default: found from the project's
    /// files: `cargo test`, `npm test`, `python -m pytest`, `go test ./...`).
    #[arg(long, value_name = "CMD")]
    pub test_command: Option<String>,
    /// Replace files that already exist.
    #[arg(long)]
    pub force: bool,
}

/// One file to write: where (relative to the repository's root) and what.
enum Content {
    Text(String),
    /// A copy of this tracked file of the repository.
    CopyOf(PathBuf),
}

pub fn init(args: &InitArgs) -> Result<Exit, CliError> {
    let mut stderr = std::io::stderr();
    let cwd = std::env::current_dir().map_err(CliError::CurrentDir)?;
    let project = match Project::open(&cwd) {
        Ok(project) => project,
        Err(e) => {
            let _ = writeln!(stderr, "error: {e}");
            return Err(CliError::Reported);
        }
    };
    let test_command = match args.test_command.as_deref().map(str::trim) {
        Some("") => {
            let _ = writeln!(
                stderr,
                "--test-command: error: the command is empty; give the command that runs the \
                 tests, e.g. --test-command 'make test'"
            );
            return Err(CliError::Reported);
        }
        Some(command) => Some(command.to_string()),
        None => project.language.map(|l| l.test_command().to_string()),
    };
    let test_rule = match &args.test_command {
        Some(_) => test_command.clone(),
        None => project.language.map(|l| l.test_rule().to_string()),
    };
    let target = Target {
        name: &project.name,
        language: project.language,
        test: test_command.as_deref(),
        test_rule: test_rule.as_deref(),
    };
    let files = files(args.use_, &target, &project);
    let existing: Vec<&Path> = files
        .iter()
        .map(|(path, _)| path.as_path())
        .filter(|path| project.root.join(path).symlink_metadata().is_ok())
        .collect();
    if !existing.is_empty() && !args.force {
        let _ = writeln!(
            stderr,
            "error: agentci init writes no file that exists, and these do:"
        );
        for path in existing.iter().take(20) {
            let _ = writeln!(stderr, "  {}", path.display());
        }
        if existing.len() > 20 {
            let _ = writeln!(stderr, "  … and {} more", existing.len() - 20);
        }
        let _ = writeln!(
            stderr,
            "nothing was written; move them away, or run `agentci init --force` to replace them"
        );
        return Err(CliError::Reported);
    }
    let mut written = Vec::new();
    for (path, content) in &files {
        if let Err(e) = write_file(&project.root, path, content) {
            let _ = writeln!(stderr, "error: failed to write {}: {e}", path.display());
            report(&written, &files, args.use_, &target, &project);
            return Err(CliError::Reported);
        }
        written.push(path.clone());
    }
    report(&written, &files, args.use_, &target, &project);
    Ok(Exit::Success)
}

/// Every file of the use, relative to the repository's root.
fn files(use_: Use, target: &Target<'_>, project: &Project) -> Vec<(PathBuf, Content)> {
    let name = init_files::job_name(use_);
    let fixture = fixture_name(&project.name);
    let mut files = vec![
        (
            PathBuf::from(format!("agentci/{name}.yaml")),
            Content::Text(init_files::job(use_, target)),
        ),
        (
            PathBuf::from(format!("agentci/skills/{name}/SKILL.md")),
            Content::Text(init_files::skill(use_, target)),
        ),
        (
            Path::new(".github/workflows").join(init_files::workflow_name(use_)),
            Content::Text(init_files::workflow(use_, target)),
        ),
        (
            PathBuf::from("agentci/eval/suite.yaml"),
            Content::Text(init_files::suite(use_, target, &fixture)),
        ),
    ];
    let fixture_dir = Path::new("agentci/eval/fixtures").join(&fixture);
    files.extend(
        project
            .tracked
            .iter()
            .map(|file| (fixture_dir.join(file), Content::CopyOf(file.clone()))),
    );
    files
}

/// The fixture's folder name: the repository's, as a case name can hold it.
fn fixture_name(project: &str) -> String {
    let name: String = project
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_matches('-');
    if name.is_empty() {
        "project".to_string()
    } else {
        name.to_string()
    }
}

/// Writes one file under `root`, making its folders. A copy reads the
/// tracked file without following a symlink (one put there since the index
/// was read is refused).
fn write_file(root: &Path, relative: &Path, content: &Content) -> std::io::Result<()> {
    let path = root.join(relative);
    refuse_links_between(root, relative)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let bytes = match content {
        Content::Text(text) => text.clone().into_bytes(),
        Content::CopyOf(source) => read_regular(&root.join(source))?,
    };
    // A link at the destination is replaced, never written through.
    if path.symlink_metadata().is_ok_and(|m| !m.is_file()) {
        std::fs::remove_file(&path)?;
    }
    std::fs::write(&path, bytes)
}

/// A folder on the way from `root` to `relative` that is a symbolic link
/// would send the write elsewhere: refused.
fn refuse_links_between(root: &Path, relative: &Path) -> std::io::Result<()> {
    let mut at = root.to_path_buf();
    let folders = relative.parent().into_iter().flat_map(Path::components);
    for component in folders {
        at.push(component);
        if at
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(std::io::Error::other(format!(
                "{} is a symbolic link; agentci init writes only into real folders",
                at.display()
            )));
        }
    }
    Ok(())
}

fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// What was written (the fixture's files as one line) and what to run next.
fn report(
    written: &[PathBuf],
    files: &[(PathBuf, Content)],
    use_: Use,
    target: &Target<'_>,
    project: &Project,
) {
    let mut out = std::io::stdout().lock();
    let copies = written
        .iter()
        .zip(files)
        .filter(|(_, (_, content))| matches!(content, Content::CopyOf(_)))
        .count();
    for (path, (_, content)) in written.iter().zip(files) {
        if let Content::Text(_) = content {
            let _ = writeln!(out, "wrote {}", path.display());
        }
    }
    if copies > 0 {
        let _ = writeln!(
            out,
            "wrote agentci/eval/fixtures/{}/ ({copies} files copied from the repository)",
            fixture_name(&project.name)
        );
    }
    if written.len() < files.len() {
        return;
    }
    let language = match (target.language, target.test) {
        (Some(language), Some(test)) => format!("{}: `{test}`", language.label()),
        (None, Some(test)) => format!("`{test}` (--test-command)"),
        (_, None) => "no test command found: add `checks:` to the job".to_string(),
    };
    let _ = writeln!(out, "tests: {language}");
    let name = init_files::job_name(use_);
    let next = match use_ {
        Use::Eval => format!("agentci eval agentci/eval/suite.yaml --model {MODEL}"),
        _ => format!("agentci run agentci/{name}.yaml"),
    };
    let _ = writeln!(
        out,
        "next: agentci validate agentci, then (with OPENAI_API_KEY set) {next}; \
         commit the files to use .github/workflows/{}",
        init_files::workflow_name(use_)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_names_are_case_names() {
        assert_eq!(fixture_name("My Crate"), "my-crate");
        assert_eq!(fixture_name("..."), "project");
        assert_eq!(fixture_name("calc_2"), "calc_2");
    }
}
