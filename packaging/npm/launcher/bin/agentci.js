#!/usr/bin/env node
// The `agentci` command of the npm package: finds the binary that the platform package
// (@agentci/<os>-<cpu>, installed by npm as an optional dependency that matches this machine's
// `os`/`cpu`/`libc`) holds, and runs it with this process's arguments, standard streams and
// environment. Signals reach the binary once (see below); the exit code, or the signal the
// binary died of, is this process's own. It downloads nothing and never falls back to
// another binary.
"use strict";

const { spawn } = require("node:child_process");
const os = require("node:os");
const path = require("node:path");
const tty = require("node:tty");

// process.platform-process.arch -> the platform package built from release.yml's archives.
const PACKAGES = {
  "linux-x64": "@agentci/linux-x64",
  "linux-arm64": "@agentci/linux-arm64",
  "darwin-x64": "@agentci/darwin-x64",
  "darwin-arm64": "@agentci/darwin-arm64",
};

function fail(message) {
  process.stderr.write(`agentci: ${message}\n`);
  process.exit(2);
}

function binaryPath() {
  const platform = `${process.platform}-${process.arch}`;
  const name = PACKAGES[platform];
  if (!name) {
    fail(
      `no agentci build for ${platform} (builds exist for ${Object.keys(PACKAGES).join(", ")}); ` +
        "build it from source: cargo install --locked --git https://github.com/agentci/agentci agentci"
    );
  }
  let manifest;
  try {
    manifest = require.resolve(`${name}/package.json`);
  } catch {
    fail(
      `the package ${name}, which holds the agentci binary for ${platform}, is not installed; ` +
        "reinstall agentci without --omit=optional (or --no-optional), e.g. npm i -g agentci"
    );
  }
  return path.join(path.dirname(manifest), "bin", "agentci");
}

// Who else a signal reaches decides whether to pass it on: agentci winds a run down on the
// first SIGINT/SIGTERM (trace and JUnit written) and drops it unfinished on a second, so it
// must get each signal once. On a terminal, Ctrl-C and Ctrl-\ go to the whole foreground
// process group, agentci included: those are not passed on. Without a terminal (CI), agentci
// runs in a process group of its own, so a signal sent to this process or to its group
// (`timeout`, a runner cancelling the step) reaches agentci once, through here.
const interactive = [0, 1, 2].some((fd) => tty.isatty(fd));
const FORWARDED = interactive ? ["SIGTERM", "SIGHUP"] : ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"];
const HANDLED = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"];
// Handlers first: a signal that came before them would end this process and leave agentci
// running on its own. One that comes before agentci starts is passed on once it has.
let child = null;
const early = [];
for (const signal of HANDLED) {
  process.on(signal, () => {
    if (!FORWARDED.includes(signal)) return;
    if (child === null) early.push(signal);
    else if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  });
}
child = spawn(binaryPath(), process.argv.slice(2), {
  stdio: "inherit",
  detached: !interactive,
});
for (const signal of early) child.kill(signal);

child.on("error", (error) => fail(`cannot run ${child.spawnfile}: ${error.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so the caller sees what the binary saw; 128 + its number
    // if that signal does not end this process.
    for (const handled of HANDLED) process.removeAllListeners(handled);
    process.kill(process.pid, signal);
    setTimeout(() => process.exit(128 + (os.constants.signals[signal] ?? 0)), 100);
    return;
  }
  process.exit(code ?? 1);
});
