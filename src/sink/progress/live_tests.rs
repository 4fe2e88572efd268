use super::*;
use crate::event::{PlanStep, Totals};

fn event(kind: EventKind) -> Event {
    Event {
        seq: 0,
        ts: String::new(),
        run_id: "r".to_string(),
        agent: None,
        kind,
    }
}

fn step(title: &str) -> PlanStep {
    PlanStep {
        title: title.to_string(),
        expected_outcome: String::new(),
    }
}

fn view_after(kinds: Vec<EventKind>) -> LiveView {
    let mut view = LiveView::default();
    for kind in kinds {
        view.on_event(&event(kind));
    }
    view
}

fn failed_check() -> CheckCompleted {
    CheckCompleted {
        name: "tests".into(),
        command: "cargo test".into(),
        outcome: CheckOutcome::Failed,
        exit_code: Some(101),
        duration_ms: 1500,
        output: "compiling\nboom\u{1b}[2J".into(),
        sandbox: "workspace-write".into(),
    }
}

#[test]
fn the_view_shows_each_steps_state_and_the_current_steps_calls() {
    let view = view_after(vec![
        EventKind::PlanCreated {
            steps: vec![step("Read"), step("Fix"), step("Test")],
        },
        EventKind::StepStarted {
            index: 0,
            title: "Read".into(),
        },
        EventKind::StepCompleted {
            index: 0,
            title: "Read".into(),
            summary: "found it".into(),
            status: StepStatus::Done,
        },
        EventKind::StepStarted {
            index: 1,
            title: "Fix".into(),
        },
        EventKind::ToolCall {
            call_id: "c1".into(),
            tool: "exec".into(),
            arguments: serde_json::json!({"command": "cargo test"}),
        },
    ]);
    assert_eq!(
        view.live_lines(Palette::new(false)),
        [
            "",
            "  ✓ 1. Read — done: found it",
            "  ▸ 2. Fix",
            "      exec cargo test …",
            "  · 3. Test",
        ]
    );
    assert_eq!(view.status(), "step 2/3 · turn 0 · 0 tokens");
}

// Regression (issue 23): the check line was printed twice, once before
// the plan; the final picture has it once, after the plan, with the end of
// a failed check's output.
#[test]
fn the_final_picture_has_the_plan_then_the_checks_with_a_failed_checks_output() {
    let view = view_after(vec![
        EventKind::PlanCreated {
            steps: vec![step("Read"), step("Fix")],
        },
        EventKind::StepCompleted {
            index: 0,
            title: "Read".into(),
            summary: "found it".into(),
            status: StepStatus::Failed,
        },
        EventKind::CheckCompleted(failed_check()),
    ]);
    let done = RunCompleted {
        status: RunStatus::Failed,
        reason: "a check failed".into(),
        summary: None,
        totals: Totals::default(),
        checks_passed: 0,
        checks_failed: 1,
        result: None,
        signal: None,
    };
    assert_eq!(
        view.final_lines(&done, Palette::new(false)),
        [
            "plan: 2 steps",
            "  ✗ 1. Read — failed: found it",
            "  · 2. Fix",
            "check \"tests\": failed: exit code 101 (1.5s)",
            "  | compiling",
            "  | boom",
            "run failed in 0.0s: 0 turns, 0 tool calls, 0 tokens",
            "  reason: a check failed",
        ]
    );
    let painted = view.final_lines(&done, Palette::new(true)).join("\n");
    assert!(painted.contains("\u{1b}[31mcheck"), "{painted}");
    assert!(!painted.contains("\u{1b}[2J"), "{painted}");
}

#[test]
fn a_long_plan_shows_a_window_around_the_current_step() {
    let titles: Vec<String> = (1..=30).map(|i| format!("Step {i}")).collect();
    let mut kinds = vec![EventKind::PlanCreated {
        steps: titles.iter().map(|t| step(t)).collect(),
    }];
    for (index, title) in titles.iter().enumerate().take(14) {
        kinds.push(EventKind::StepCompleted {
            index,
            title: title.clone(),
            summary: "ok".into(),
            status: StepStatus::Done,
        });
    }
    kinds.push(EventKind::StepStarted {
        index: 14,
        title: titles[14].clone(),
    });
    let lines = view_after(kinds).live_lines(Palette::new(false));
    assert_eq!(lines[1], "  … 12 steps earlier");
    assert_eq!(lines[2], "  ✓ 13. Step 13 — done: ok");
    assert_eq!(lines[4], "  ▸ 15. Step 15");
    assert_eq!(lines.last().unwrap(), "  … 8 steps to come");
    assert_eq!(lines.len(), 13);
}
