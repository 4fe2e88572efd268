//! A real terminal for the tests that look at what a person sees: a tmux
//! server of our own (its socket in a temporary folder, so no user's tmux
//! is touched), one pane of a fixed size running a command, and its screen
//! captured with `capture-pane` at the moments a test waits for.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::harness::GITHUB_VARIABLES;
use super::prerequisites;

pub struct Pane {
    socket: PathBuf,
    _dir: TempDir,
}

/// `tmux`, or `None` (a skip, or a failure under CI) when it is not installed.
pub fn available(what: &str) -> Option<PathBuf> {
    prerequisites::program(
        &["tmux"],
        what,
        "install it with `apt-get install tmux` or `brew install tmux`",
    )
}

fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

impl Pane {
    /// `argv` in `dir`, in a pane 120 columns wide and 40 lines high, with
    /// `env` set and the GitHub runner's variables and colour variables
    /// unset. After the command ends the pane shows `[exit CODE]` and stays.
    pub fn start(dir: &Path, argv: &[String], env: &[(&str, &str)]) -> Pane {
        let tmp = tempfile::tempdir().unwrap();
        let socket = tmp.path().join("tmux.sock");
        let mut line = String::from("env");
        for name in GITHUB_VARIABLES.iter().chain(&[
            "NO_COLOR",
            "CLICOLOR",
            "CLICOLOR_FORCE",
            "OPENAI_API_KEY",
        ]) {
            line.push_str(&format!(" -u {name}"));
        }
        for (name, value) in env {
            line.push_str(&format!(" {name}={}", sh_quote(value)));
        }
        for arg in argv {
            line.push(' ');
            line.push_str(&sh_quote(arg));
        }
        // The pane must outlive the command so its last screen can be read.
        let script = format!(
            "cd {} && {line}; echo \"[exit $?]\"; sleep 600",
            sh_quote(&dir.display().to_string())
        );
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args([
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "120",
                "-y",
                "40",
            ])
            .args(["sh", "-c", &script])
            .env("TERM", "xterm-256color")
            // Inside someone's tmux, ours stays separate all the same.
            .env_remove("TMUX")
            .status()
            .unwrap();
        assert!(status.success(), "tmux new-session failed");
        Pane { socket, _dir: tmp }
    }

    /// The pane's screen as text; with `escapes`, colours as escape sequences (`-e`).
    pub fn capture(&self, escapes: bool) -> String {
        self.capture_with(if escapes { &["-e"] } else { &[] })
    }

    /// The screen with the lines the pane wrapped joined again (`-J`), so
    /// a path's length does not move the breaks. Not for a live view: its
    /// lines are drawn as wide as the pane, and would be joined too.
    pub fn capture_joined(&self) -> String {
        self.capture_with(&["-J"])
    }

    fn capture_with(&self, flags: &[&str]) -> String {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S")
            .arg(&self.socket)
            .args(["capture-pane", "-p"])
            .args(flags);
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "tmux capture-pane failed");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // Blank lines below the last drawn one say nothing.
        let trimmed: Vec<&str> = text.lines().map(str::trim_end).collect();
        let end = trimmed
            .iter()
            .rposition(|l| !l.is_empty())
            .map_or(0, |i| i + 1);
        trimmed[..end].join("\n")
    }

    /// The screen once `ready` holds for it, polling for up to 30 seconds.
    pub fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture(false);
            if ready(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the pane never showed {what}; it shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}
