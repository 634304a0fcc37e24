#!/usr/bin/env node
// Lists the longest hand-written functions (generated code, tests and benches left out), longest
// first: `node scripts/long-functions.mjs [--top N] [--json]`. test/function-length.test.ts holds
// the limit (MAX_FUNCTION_LINES) against this same list.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import ts from "typescript";

export const MAX_FUNCTION_LINES = 120;

const root = fileURLToPath(new URL("..", import.meta.url));

/** Hand-written source: tracked .ts/.tsx/.mjs/.js files outside tests, benches and generated code. */
export function sourceFiles() {
  return (
    execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: root })
      .toString()
      .split("\0")
      .filter((f) => /\.(ts|tsx|mts|mjs|js)$/.test(f) && !f.endsWith(".d.ts"))
      .filter((f) => !/(^|\/)(test|tests|bench|fixtures)\//.test(f) && !/\.test\.tsx?$/.test(f))
      .filter((f) => !/(^|\/)gen\//.test(f) && !/(^|\/)(dist|node_modules)\//.test(f))
      // Deleted in the work tree but still in the index: not part of the tree being measured.
      .filter((f) => existsSync(`${root}/${f}`))
  );
}

function nameOf(node, sf) {
  if (node.name) return node.name.getText(sf);
  const p = node.parent;
  if (p && ts.isVariableDeclaration(p)) return p.name.getText(sf);
  if (p && ts.isPropertyAssignment(p)) return p.name.getText(sf);
  if (p && ts.isCallExpression(p)) return `${p.expression.getText(sf).slice(0, 40)}(callback)`;
  return "(anonymous)";
}

/** Every function-like node with its line count (first to last line, inclusive). */
export function functionsOf(file) {
  const text = readFileSync(new URL(file, `file://${root}/`), "utf8");
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out = [];
  const visit = (node) => {
    if (
      ts.isFunctionDeclaration(node) ||
      ts.isFunctionExpression(node) ||
      ts.isArrowFunction(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isConstructorDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) ||
      ts.isSetAccessorDeclaration(node)
    ) {
      if (node.body) {
        const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
        const end = sf.getLineAndCharacterOfPosition(node.end).line;
        out.push({ file, line: start + 1, name: nameOf(node, sf), lines: end - start + 1 });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

export function longestFunctions() {
  return sourceFiles()
    .flatMap(functionsOf)
    .sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const i = args.indexOf("--top");
  const top = i >= 0 ? Number(args[i + 1]) : 10;
  const list = longestFunctions().slice(0, top);
  if (args.includes("--json")) console.log(JSON.stringify(list, null, 2));
  else {
    console.log(`longest hand-written functions (limit ${MAX_FUNCTION_LINES} lines):`);
    for (const f of list) console.log(`${String(f.lines).padStart(5)}  ${f.file}:${f.line}  ${f.name}`);
  }
}
