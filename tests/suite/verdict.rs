//! No false greens (issue 22): a run of a job without checks passes only
//! when the agent could act and finished its steps; a `--goal` run without
//! rules may look around and says how to allow more; `validate` warns about
//! a job without checks and one whose rules allow none of its tools; and a
//! tool that is offered but refused (`submit_result` in a step) says when
//! it is taken and counts for the loop guard. The real binary against the
//! fake model server.

use serde_json::{Value, json};

use super::support::fake_model::{FakeModel, Reply};
use super::support::harness::{Sandbox, events, stderr, stdout};
use super::support::trace_schema::assert_valid_trace;

const SOURCE: &str = "def add(a, b):\n    return a - b\n";

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("ws/calc.py", SOURCE);
    sb.skill("fix-failing-test", None);
    sb
}

fn completed(trace: &[Value]) -> &Value {
    events(trace, "run.completed")[0]
}

/// The warnings the run gave at its start.
fn load_warnings(trace: &[Value]) -> Vec<String> {
    events(trace, "warning")
        .into_iter()
        .filter(|w| w["source"] == "load")
        .map(|w| w["message"].as_str().unwrap().to_string())
        .collect()
}

/// The text of the tool message answering `call_id` in the last request that has it.
fn answer(model: &FakeModel, call_id: &str) -> String {
    model
        .requests()
        .iter()
        .rev()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no answer to {call_id}"))
}

/// Regression: `agentci run --goal … --skill …` with no rules denied every
/// `read` and `edit`, then reported "passed — the agent finished; the job
/// has no checks" and exited 0. Now the read-only tools are allowed (and
/// the run says how to allow edits), and a run whose step ended blocked
/// is not passed.
#[test]
fn a_goal_run_without_rules_may_look_and_a_blocked_step_does_not_pass() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Fix the code", "the test passes")]),
        Reply::tool_calls(vec![("call_read", "read", json!({"path": "calc.py"}))]),
        Reply::tool_calls(vec![(
            "call_edit",
            "edit",
            json!({"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}),
        )]),
        Reply::tool_call(
            "step_done",
            json!({"summary": "edit is denied, so the fix cannot be made", "status": "blocked"}),
        ),
        Reply::text("Could not fix: edits are not allowed."),
    ]);
    let sb = sandbox();
    let base_url = model.base_url();
    let out = sb.agentci(&[
        "run",
        "--goal",
        "pytest fails; fix the code",
        "--skill",
        "fix-failing-test",
        "--skills-path",
        "skills",
        "--model",
        "openai:fake-model",
        "--base-url",
        &base_url,
        "--workspace",
        "ws",
        "--trace",
        "out/trace.jsonl",
        "--progress",
        "plain",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(sb.read("ws/calc.py"), SOURCE);
    assert_valid_trace(&sb.path().join("out/trace.jsonl"));
    let trace = sb.trace("out/trace.jsonl");
    // Looking was allowed, changing was not.
    assert!(answer(&model, "call_read").contains("return a - b"));
    assert!(answer(&model, "call_edit").contains("PERMISSION_DENIED"));
    let warnings = load_warnings(&trace);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("--allow edit"), "{warnings:?}");
    let run = completed(&trace);
    assert_eq!(run["status"], "failed", "{run}");
    let shown = format!(
        "## run.completed reason\n{}\n## warning\n{}\n## stderr\n{}",
        run["reason"].as_str().unwrap(),
        warnings[0],
        stderr(&out)
            .lines()
            .filter(|l| l.contains("warning") || l.starts_with("agentci: failed"))
            // The run folder's name holds the time.
            .map(|l| l.split(" (trace:").next().unwrap())
            .collect::<Vec<_>>()
            .join("\n"),
    );
    insta::assert_snapshot!("goal_run_without_rules", shown);
}

/// A job file whose rules deny everything and that has no checks: every
/// call is denied, the agent "finishes", and the run used to pass.
#[test]
fn a_run_whose_every_call_was_denied_does_not_pass() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Look", "the code is known")]),
        Reply::tool_calls(vec![
            ("call_a", "read", json!({"path": "calc.py"})),
            ("call_b", "ls", json!({})),
        ]),
        Reply::step_done("looked around"),
        Reply::text("All done."),
    ]);
    let sb = sandbox();
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: locked\nskill: fix-failing-test\ngoal: Fix the code.\n\
             model: {{provider: openai, name: fake-model, base_url: {}}}\n\
             tools: [read, ls, edit]\nworkspace: ws\nskills_path: [skills]\n\
             permissions: {{default: deny}}\n",
            model.base_url()
        ),
    );
    let out = sb.agentci(&[
        "run",
        "job.yaml",
        "--trace",
        "out/trace.jsonl",
        "--progress",
        "none",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let trace = sb.trace("out/trace.jsonl");
    let run = completed(&trace);
    assert_eq!(run["status"], "failed", "{run}");
    // The run says at the start that nothing is allowed, and at the end why it failed.
    let warnings = load_warnings(&trace).join("\n");
    assert!(warnings.contains("allow none of its tools"), "{warnings}");
    insta::assert_snapshot!("every_call_denied_reason", run["reason"].as_str().unwrap());

    let validate = sb.agentci(&["validate", "job.yaml"]);
    assert_eq!(validate.status.code(), Some(0), "{}", stdout(&validate));
    insta::assert_snapshot!("validate_unjudged_job", stdout(&validate));
}

/// A job with checks is judged by them alone: a blocked step whose checks
/// pass still passes.
#[test]
fn checks_still_decide_when_a_job_has_them() {
    let model = FakeModel::start(vec![
        Reply::plan(&[("Look", "the code is known")]),
        Reply::tool_call(
            "step_done",
            json!({"summary": "nothing to do", "status": "blocked"}),
        ),
        Reply::text("Nothing to do."),
    ]);
    let sb = sandbox();
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: checked\nskill: fix-failing-test\ngoal: Fix the code.\n\
             model: {{provider: openai, name: fake-model, base_url: {}}}\n\
             tools: [read]\nworkspace: ws\nskills_path: [skills]\n\
             permissions: {{allow: [read]}}\nchecks:\n  - {{name: present, run: test -f calc.py}}\n",
            model.base_url()
        ),
    );
    let out = sb.agentci(&["run", "job.yaml", "--progress", "none"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Regression: in round 2 the tool list still offers `submit_result`; a
/// scripted model that kept calling it in the round's step was told
/// "tool `submit_result` is not available in this run" 24 times, until the
/// budget ran out, because the loop guard did not count refused calls.
/// Now the refusal says when it is taken, and the third identical call is
/// a repeat: warned, then the step ends and the run asks for the result.
#[test]
fn submit_result_in_a_step_says_when_it_is_taken_and_repeats_end_the_step() {
    let result = json!({"fixed": true});
    let again = |id: &str| Reply::tool_calls(vec![(id, "submit_result", result.clone())]);
    let model = FakeModel::start(vec![
        Reply::plan(&[("Fix", "the check passes")]),
        Reply::step_done("tried"),
        Reply::tool_call("submit_result", json!({"fixed": false})),
        // Round 2: the check failed; the model wants to report instead of working.
        again("r1"),
        again("r2"),
        again("r3"),
        again("r4"),
        // The step ended: the final turn takes the result.
        Reply::tool_call("submit_result", json!({"fixed": false})),
        Reply::text("spare"),
        Reply::text("spare"),
    ]);
    let sb = sandbox();
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: rounds\nskill: fix-failing-test\ngoal: Fix the code.\n\
             model: {{provider: openai, name: fake-model, base_url: {}}}\n\
             tools: [read]\nworkspace: ws\nskills_path: [skills]\n\
             permissions: {{allow: [read]}}\nchecks_rounds: 2\n\
             budget: {{max_turns: 30}}\n\
             result_schema: {{type: object, properties: {{fixed: {{type: boolean}}}}, required: [fixed]}}\n\
             checks:\n  - {{name: fixed, run: grep -q 'a + b' calc.py}}\n",
            model.base_url()
        ),
    );
    let out = sb.agentci(&[
        "run",
        "job.yaml",
        "--trace",
        "out/trace.jsonl",
        "--progress",
        "none",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_valid_trace(&sb.path().join("out/trace.jsonl"));
    let trace = sb.trace("out/trace.jsonl");
    // The step ended at the fourth call, and the final turn came next.
    assert_eq!(model.remaining(), 2, "the model was called past the repeat");
    let steps = events(&trace, "step.completed");
    let last = steps.last().unwrap();
    assert_eq!(last["status"], "failed", "{last}");
    assert!(
        last["summary"]
            .as_str()
            .unwrap()
            .contains("repeating itself"),
        "{last}"
    );
    assert_eq!(completed(&trace)["result"], json!({"fixed": false}));
    let warnings: Vec<&Value> = events(&trace, "warning")
        .into_iter()
        .filter(|w| w["source"] == "loop_guard")
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let shown = ["r1", "r3", "r4"]
        .iter()
        .map(|id| format!("## {id}\n{}", answer(&model, id)))
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!("submit_result_in_a_step", shown);
}

/// A tool the run does not have, called again and again, is a repeat like
/// any other: before, an unknown tool never reached the loop guard.
#[test]
fn repeated_calls_of_a_tool_the_run_lacks_end_the_step() {
    let bash = |id: &str| Reply::tool_calls(vec![(id, "bash", json!({"command": "pytest"}))]);
    let model = FakeModel::start(vec![
        Reply::plan(&[("Run the tests", "they pass")]),
        bash("b1"),
        bash("b2"),
        bash("b3"),
        bash("b4"),
        Reply::text("Could not run the tests."),
        Reply::text("spare"),
    ]);
    let sb = sandbox();
    sb.write(
        "job.yaml",
        &format!(
            "version: 1\nname: no-bash\nskill: fix-failing-test\ngoal: Run the tests.\n\
             model: {{provider: openai, name: fake-model, base_url: {}}}\n\
             tools: [read]\nworkspace: ws\nskills_path: [skills]\n\
             permissions: {{allow: [read]}}\nbudget: {{max_turns: 30}}\n",
            model.base_url()
        ),
    );
    let out = sb.agentci(&[
        "run",
        "job.yaml",
        "--trace",
        "out/trace.jsonl",
        "--progress",
        "none",
    ]);
    // No call ever ran, and the step failed: not passed.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(model.remaining(), 1);
    assert!(answer(&model, "b3").contains("3rd time"));
    let trace = sb.trace("out/trace.jsonl");
    let steps = events(&trace, "step.completed");
    assert_eq!(steps[0]["status"], "failed", "{}", steps[0]);
    insta::assert_snapshot!(
        "nothing_ran_reason",
        completed(&trace)["reason"].as_str().unwrap()
    );
}

/// The rules a `--goal` run gets without `--allow`, as `--print-job` shows
/// them: the read-only tools it has, and nothing once any `--allow` is given.
#[test]
fn a_goal_run_without_allow_rules_allows_the_read_only_tools_it_has() {
    let sb = sandbox();
    let allowed = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--goal",
            "x",
            "--skill",
            "fix-failing-test",
            "--skills-path",
            "skills",
            "--model",
            "openai:m",
            "--workspace",
            "ws",
            "--print-job",
        ];
        args.extend_from_slice(extra);
        let out = sb.agentci(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let job: Value = serde_saphyr::from_str(&stdout(&out)).unwrap();
        let rules: Vec<String> = job["permissions"]["allow"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .collect();
        (rules, stderr(&out).contains("--allow: warning: none given"))
    };
    assert_eq!(
        allowed(&[]),
        (
            vec!["read".into(), "find".into(), "grep".into(), "ls".into()],
            true
        )
    );
    assert_eq!(
        allowed(&["--tools", "read,edit"]),
        (vec!["read".into()], true)
    );
    assert_eq!(allowed(&["--tools", "edit"]), (vec![], false));
    assert_eq!(
        allowed(&["--allow", "edit(*.py)"]),
        (vec!["edit(*.py)".into()], false)
    );
}
