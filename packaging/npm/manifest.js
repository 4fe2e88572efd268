// Writes the package.json of one npm package on stdout, for build.sh:
//   node manifest.js platform   @agentci/<os>-<cpu> (AGENTCI_PLATFORM, AGENTCI_CPU, AGENTCI_LIBC)
//   node manifest.js launcher   agentci, naming every platform package as optional
// Both at AGENTCI_VERSION. `repository` must name the GitHub repository the release workflow
// runs in: `npm publish --provenance` refuses a package whose repository differs.
"use strict";

const PLATFORMS = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64"];
const version = process.env.AGENTCI_VERSION;
const common = {
  version,
  license: "MIT OR Apache-2.0",
  homepage: "https://github.com/agentci/agentci",
  repository: { type: "git", url: "git+https://github.com/agentci/agentci.git" },
  publishConfig: { access: "public" },
};

let manifest;
if (process.argv[2] === "platform") {
  const platform = process.env.AGENTCI_PLATFORM;
  const cpu = process.env.AGENTCI_CPU;
  const libc = process.env.AGENTCI_LIBC;
  manifest = {
    name: `@agentci/${platform}-${cpu}`,
    description: `The agentci binary for ${platform} ${cpu}; install the agentci package, which runs it.`,
    ...common,
    os: [platform],
    cpu: [cpu],
    ...(libc ? { libc: [libc] } : {}),
    files: ["bin/agentci"],
  };
} else if (process.argv[2] === "launcher") {
  manifest = {
    name: "agentci",
    description:
      "Run LLM coding agents unattended in CI: plan, execute under a permission policy, verify with checks, write a JSONL trace and JUnit XML.",
    ...common,
    bin: { agentci: "bin/agentci.js" },
    files: ["bin/agentci.js"],
    engines: { node: ">=16" },
    optionalDependencies: Object.fromEntries(PLATFORMS.map((p) => [`@agentci/${p}`, version])),
  };
} else {
  process.stderr.write("usage: node manifest.js platform|launcher\n");
  process.exit(2);
}
process.stdout.write(`${JSON.stringify(manifest, null, 2)}\n`);
