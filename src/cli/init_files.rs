//! The text of the files `agentci init` writes for one use (`fix`,
//! `review`, `maintenance`, `eval`): the job, its skill's skeleton, the
//! GitHub workflow and the eval suite, for the project's test command.
//! Each is a job, skill, workflow or suite as the docs describe them, so
//! `agentci validate` and actionlint accept them (the tests check both).
//! This module renders text; it neither reads the repository nor writes.

use super::init_project::Language;

/// The action the workflows use, at the release they were written for.
const ACTION: &str = "agentci/agentci/.github/actions/agentci@v0.1.0";
/// The third-party actions, pinned by commit as this repository's own workflows pin them.
const CHECKOUT: &str = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2";
const UPLOAD: &str = "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02 # v4.6.2";
const CREATE_PR: &str =
    "peter-evans/create-pull-request@271a8d0340265f705b14b6d32b9829c1cb33d45e # v7.0.8";
/// The model the files name; `--model` changes it at run time.
pub const MODEL: &str = "openai:gpt-4.1-mini";

/// What the first workflow does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Use {
    /// Fix failing tests on demand and open a pull request.
    Fix,
    /// Review each pull request, changing nothing.
    Review,
    /// A weekly maintenance chore that opens a pull request.
    Maintenance,
    /// Evaluate the skill on every pull request.
    Eval,
}

/// The project as the files need it.
pub struct Target<'a> {
    /// The repository folder's name.
    pub name: &'a str,
    pub language: Option<Language>,
    /// The test command: `--test-command`, else the language's.
    pub test: Option<&'a str>,
    /// What an `exec` allow rule names for it (`go test` for `go test ./...`).
    pub test_rule: Option<&'a str>,
}

/// The job (and skill) a use writes: `fix` and `eval` share one.
pub fn job_name(use_: Use) -> &'static str {
    match use_ {
        Use::Fix | Use::Eval => "fix-tests",
        Use::Review => "review",
        Use::Maintenance => "maintenance",
    }
}

/// The workflow file's name under `.github/workflows/`.
pub fn workflow_name(use_: Use) -> String {
    let which = match use_ {
        Use::Fix => "fix",
        Use::Review => "review",
        Use::Maintenance => "maintenance",
        Use::Eval => "eval",
    };
    format!("agentci-{which}.yml")
}

/// The job file, in `agentci/`; relative paths in it start there.
pub fn job(use_: Use, target: &Target<'_>) -> String {
    let name = job_name(use_);
    let test = target.test.unwrap_or("the tests");
    let checks = match target.test {
        Some(test) => format!(
            "checks:\n  - name: tests pass\n    run: {}\n",
            yaml_str(test)
        ),
        None => "# No test command was found: add `checks:` that decide success, e.g.\n\
                 # checks:\n#   - {name: tests pass, run: make test}\n"
            .to_string(),
    };
    let exec_rule = target
        .test_rule
        .map(|rule| format!(", {}", yaml_str(&format!("exec({rule} *)"))))
        .unwrap_or_default();
    let sandbox = match target.language {
        // Go's build cache lives outside the workspace.
        Some(Language::Go) => "sandbox: {writable: [preset:go]}\n",
        _ => "",
    };
    let head = format!(
        "# Written by `agentci init`. Check it with `agentci validate agentci`.\n\
         # Run it from the repository's root:\n\
         #   OPENAI_API_KEY=... agentci run agentci/{name}.yaml\n\
         version: 1\nname: {name}\nskill: {name}\nskills_path: [skills]\n"
    );
    let body = match use_ {
        Use::Fix | Use::Eval => format!(
            "goal: |\n  `{test}` fails. Find the failing test, fix the code under test (not the \
             test), and\n  make `{test}` pass without changing other behaviour.\n\
             {model}tools: [read, grep, find, ls, edit, write, exec]\n\
             permissions:\n  default: deny\n  allow: [read, grep, find, ls, edit, write{exec_rule}]\n\
             \x20 deny: [\"read(**/.env)\", \"edit(.github/**)\", \"write(.github/**)\"]\n\
             {sandbox}budget: {{max_turns: 40, max_tool_calls: 100, timeout: 15m}}\n\
             workspace: .\n{checks}",
            model = model_block(),
        ),
        Use::Maintenance => format!(
            "goal: |\n  Do one small, safe maintenance task in this repository: fix a compiler or \
             linter\n  warning, a broken link, a typo or an outdated comment. Change nothing \
             else, and keep\n  `{test}` passing.\n\
             {model}tools: [read, grep, find, ls, edit, write, exec]\n\
             permissions:\n  default: deny\n  allow: [read, grep, find, ls, edit, write{exec_rule}]\n\
             \x20 deny: [\"read(**/.env)\", \"edit(.github/**)\", \"write(.github/**)\"]\n\
             {sandbox}budget: {{max_turns: 30, max_tool_calls: 80, timeout: 15m}}\n\
             workspace: .\n{checks}",
            model = model_block(),
        ),
        // Read-only: it reports; its one check holds it to changing nothing
        // (outside a git checkout, such as an eval's fixture copy, there is
        // nothing to compare and it passes).
        Use::Review => format!(
            "goal: |\n  Review the changes of this branch against `${{{{ vars.base }}}}`: read \
             the diff\n  (`git diff ${{{{ vars.base }}}}...HEAD`) and the code around it, and \
             report bugs, missing\n  tests and risky changes, each with its file and line. \
             Change no file.\n\
             vars: {{base: origin/main}}\n\
             {model}tools: [read, grep, find, ls, exec]\n\
             permissions:\n  default: deny\n  allow: [read, grep, find, ls, \"exec(git diff *)\", \
             \"exec(git log *)\", \"exec(git show *)\"]\n  deny: [\"read(**/.env)\"]\n\
             budget: {{max_turns: 30, max_tool_calls: 80, timeout: 10m}}\n\
             workspace: .\n\
             checks:\n  - name: changed no file\n    run: 'test -z \"$(git status --porcelain)\"'\n",
            model = model_block(),
        ),
    };
    format!("{head}{body}")
}

fn model_block() -> &'static str {
    "model:\n  provider: openai\n  name: gpt-4.1-mini\n  api_key_env: OPENAI_API_KEY\n"
}

/// The skill's `SKILL.md`, in `agentci/skills/<name>/`.
pub fn skill(use_: Use, target: &Target<'_>) -> String {
    let name = job_name(use_);
    let test = target.test.unwrap_or("the project's tests");
    let (description, title, steps) = match use_ {
        Use::Fix | Use::Eval => (
            format!(
                "Find out why a test of {project} fails and make the smallest change to the \
                 code under test that makes it pass. Use when `{test}` is red.",
                project = target.name
            ),
            "Fix a failing test",
            format!(
                "1. Run `{test}` and read the failure: which test, what it expected, what it got.\n\
                 2. Read the test and the code it calls. The test states what the code should do.\n\
                 3. Fix the code under test with the smallest change; never weaken the test.\n\
                 4. Run `{test}` again; it must pass, and no other test may break.\n\
                 5. Report the cause, the change and the command that shows it passes."
            ),
        ),
        Use::Review => (
            format!(
                "Review a branch of {project} against its base and report what a careful \
                 reviewer would: bugs, missing tests, risky changes. Use on a pull request; it \
                 changes no file.",
                project = target.name
            ),
            "Review a change",
            "1. Read the diff against the base the goal names (`git diff BASE...HEAD`).\n\
             2. Read the code around each change: callers, tests, documentation.\n\
             3. Report each finding with its file and line, what is wrong and a fix.\n\
             4. Say what you checked and found in order; do not invent problems."
                .to_string(),
        ),
        Use::Maintenance => (
            format!(
                "Do one small, safe maintenance task in {project}: a warning, a broken link, \
                 an outdated comment. Use for a scheduled chore that opens a pull request.",
                project = target.name
            ),
            "Do one maintenance task",
            format!(
                "1. Look for one small problem: a compiler or linter warning, a broken link, \
                 a typo.\n\
                 2. Fix only that, in the style of the code around it.\n\
                 3. Run `{test}`; it must still pass.\n\
                 4. Report what you changed and why."
            ),
        ),
    };
    format!(
        "---\nname: {name}\ndescription: >-\n  {description}\n---\n\
         # {title}\n\n\
         <!-- Written by `agentci init`: a starting point. Say here what is particular to this \
         project (its layout, conventions, commands), and evaluate changes with \
         `agentci eval agentci/eval/suite.yaml`. -->\n\n\
         {steps}\n"
    )
}

/// The eval suite, in `agentci/eval/`: one case on the fixture copied from
/// the repository.
pub fn suite(use_: Use, target: &Target<'_>, fixture: &str) -> String {
    let name = job_name(use_);
    let assertions = match (use_, target.test) {
        (Use::Review, _) => {
            "      - tool_not_called: edit\n      - tool_not_called: write\n".to_string()
        }
        (_, Some(test)) => format!("      - run: {}\n", yaml_str(test)),
        (_, None) => "      - status: passed\n".to_string(),
    };
    format!(
        "# Written by `agentci init`: evaluates agentci/{name}.yaml on a copy of this \
         repository\n\
         # (fixtures/{fixture}, its tracked files when `init` ran).\n\
         #\n\
         # Live:    OPENAI_API_KEY=... agentci eval agentci/eval/suite.yaml --model {MODEL}\n\
         # Record:  agentci eval agentci/eval/suite.yaml --record --model {MODEL}\n\
         #          (then it replays offline from the cassettes, with no key)\n\
         #\n\
         # Add cases: copy the fixture, break what the job should repair, and assert the repair.\n\
         version: 1\nname: {name}\njob: ../{name}.yaml\ncases:\n\
         \x20 - name: {fixture}-as-committed\n    fixture: fixtures/{fixture}\n    assert:\n\
         {assertions}"
    )
}

/// The GitHub workflow, in `.github/workflows/`.
pub fn workflow(use_: Use, target: &Target<'_>) -> String {
    let name = job_name(use_);
    let setup = setup_steps(target.language);
    match use_ {
        Use::Fix | Use::Maintenance => {
            let (title, on, branch) = if use_ == Use::Fix {
                (
                    "fix failing tests",
                    "on:\n  workflow_dispatch:\n".to_string(),
                    "agentci/fix-tests",
                )
            } else {
                (
                    "maintenance",
                    "on:\n  schedule:\n    - cron: \"17 5 * * 1\"   # Mondays, 05:17 UTC\n  \
                     workflow_dispatch:\n"
                        .to_string(),
                    "agentci/maintenance",
                )
            };
            format!(
                "# Written by `agentci init`: runs agentci/{name}.yaml and opens a pull request \
                 when its checks pass.\n\
                 # Needs the repository secret OPENAI_API_KEY, and \"Allow GitHub Actions to \
                 create and approve\n# pull requests\" in the repository's Actions settings.\n\
                 name: \"agentci: {title}\"\n{on}\
                 permissions:\n  contents: write\n  pull-requests: write\n\
                 jobs:\n  {name}:\n    runs-on: ubuntu-latest\n    timeout-minutes: 30\n    steps:\n\
                 \x20     - uses: {CHECKOUT}\n{setup}\
                 \x20     - id: agentci\n        uses: {ACTION}\n        with:\n\
                 \x20         job: agentci/{name}.yaml\n\
                 \x20         api-key: ${{{{ secrets.OPENAI_API_KEY }}}}\n\
                 {artifact}\
                 \x20     - if: steps.agentci.outputs.status == 'passed'\n        uses: {CREATE_PR}\n\
                 \x20       with:\n          branch: {branch}\n          delete-branch: true\n\
                 \x20         title: \"agentci: {title}\"\n\
                 \x20         body: \"Made by agentci (agentci/{name}.yaml); its checks passed.\"\n",
                artifact = artifact_step(".agentci/runs/"),
            )
        }
        Use::Review => format!(
            "# Written by `agentci init`: reviews each pull request with agentci/review.yaml.\n\
             # The job and its skill are read from the base branch (checked out in `base/`), the\n\
             # pull request's files are the workspace (`pr/`): a pull request cannot change the\n\
             # instructions its own review follows. Needs the repository secret OPENAI_API_KEY.\n\
             name: \"agentci: review\"\non:\n  pull_request:\n\
             permissions:\n  contents: read\n\
             jobs:\n  review:\n    runs-on: ubuntu-latest\n    timeout-minutes: 20\n    steps:\n\
             \x20     - uses: {CHECKOUT}\n        with:\n          ref: ${{{{ github.base_ref }}}}\n\
             \x20         path: base\n\
             \x20     - uses: {CHECKOUT}\n        with:\n          path: pr\n\
             \x20         fetch-depth: 0\n\
             \x20     - id: agentci\n        uses: {ACTION}\n        with:\n\
             \x20         job: base/agentci/review.yaml\n          workspace: pr\n\
             \x20         api-key: ${{{{ secrets.OPENAI_API_KEY }}}}\n\
             \x20         vars: |\n            base=origin/${{{{ github.base_ref }}}}\n\
             {artifact}",
            artifact = artifact_step("pr/.agentci/runs/"),
        ),
        Use::Eval => format!(
            "# Written by `agentci init`: evaluates the skill with agentci/eval/suite.yaml on \
             every pull request\n\
             # and uploads the results and HTML report. Needs the repository secret \
             OPENAI_API_KEY.\n\
             name: \"agentci: eval\"\non:\n  pull_request:\n  push:\n    branches: [main]\n\
             permissions:\n  contents: read\n\
             jobs:\n  eval:\n    runs-on: ubuntu-latest\n    timeout-minutes: 30\n    steps:\n\
             \x20     - uses: {CHECKOUT}\n{setup}\
             \x20     - id: agentci\n        uses: {ACTION}\n        with:\n\
             \x20         suite: agentci/eval/suite.yaml\n          model: {MODEL}\n\
             \x20         api-key: ${{{{ secrets.OPENAI_API_KEY }}}}\n"
        ),
    }
}

/// Keep the run folder (trace, JUnit, patch) as an artifact, also when the run failed.
fn artifact_step(path: &str) -> String {
    format!(
        "      - if: always()\n        uses: {UPLOAD}\n        with:\n\
         \x20         name: agentci-run\n          path: {path}\n\
         \x20         include-hidden-files: true\n          if-no-files-found: ignore\n"
    )
}

/// Commands run without network in the sandbox: fetch what the tests need first.
fn setup_steps(language: Option<Language>) -> String {
    let run = match language {
        Some(Language::Rust) => "cargo fetch",
        Some(Language::Node) => "npm ci || npm install",
        Some(Language::Python) => {
            "python -m pip install pytest && if [ -f requirements.txt ]; then python -m pip \
             install -r requirements.txt; fi && if [ -f pyproject.toml ] || [ -f setup.py ]; \
             then python -m pip install -e .; fi"
        }
        Some(Language::Go) => "go mod download",
        None => return String::new(),
    };
    format!(
        "      # The job's commands run without network: fetch what the tests need first.\n\
         \x20     - run: {}\n",
        yaml_str(run)
    )
}

/// `text` as a YAML scalar: plain when that reads back as the same text,
/// else double-quoted with JSON escapes (YAML accepts them).
fn yaml_str(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " ./_-".contains(c))
        && !text.starts_with(['-', ' ', '.'])
        && !text.ends_with(' ');
    if plain {
        text.to_string()
    } else {
        serde_json::to_string(text).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_scalars_quote_what_yaml_would_read_otherwise() {
        assert_eq!(yaml_str("cargo test"), "cargo test");
        assert_eq!(yaml_str("go test ./..."), "go test ./...");
        assert_eq!(yaml_str("exec(cargo test *)"), "\"exec(cargo test *)\"");
        assert_eq!(yaml_str("a: b"), "\"a: b\"");
        assert_eq!(yaml_str("- x"), "\"- x\"");
    }
}
