// Prints, for each test file that failed in the last `npm test`, its failing points with their
// diagnostics, compactly. CI shows only the end of its output: without this, a failure far up the
// log (or in .tap/test-results of a machine nobody can reach) says only which file failed.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const PER_FILE_LINES = 24;
const TOTAL_LINES = 72;
const procDir = ".tap/processinfo";
const resultsDir = ".tap/test-results";

const runs = (existsSync(procDir) ? readdirSync(procDir) : [])
  .map((f) => JSON.parse(readFileSync(join(procDir, f), "utf8")))
  .filter((p) => p.parent === null && p.externalID);

/** The lines that explain a failure: each `not ok` (any depth) and the diagnostics that follow it. */
function failingLines(tap) {
  const lines = tap.split("\n");
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*not ok /.test(lines[i])) continue;
    out.push(lines[i].trim());
    // The YAML block after a `not ok`: `---` … `...`, one indent deeper. Kept: the first stack frame,
    // the diff's changed lines and the short fields; the source excerpt and positions are dropped.
    if (!/^\s*---$/.test(lines[i + 1] ?? "")) continue;
    const base = lines[i + 1].search(/\S/);
    let key = "";
    let frames = 0;
    for (i += 2; i < lines.length && !/^\s*\.\.\.$/.test(lines[i]); i++) {
      const line = lines[i];
      const indent = line.search(/\S/);
      if (indent < 0) continue;
      const l = line.trim();
      if (indent === base) {
        key = l.split(":")[0];
        frames = 0;
        if (
          !/[|>]$/.test(l) &&
          !/^(at|source|compare|fileName|lineNumber|columnNumber|typeName|isToplevel)$/.test(key) &&
          l.includes(":") &&
          !l.endsWith(":")
        )
          out.push(`    ${l.slice(0, 160)}`);
        continue;
      }
      if (key === "stack" && frames++ === 0) out.push(`    at ${l.slice(0, 150)}`);
      else if (key === "diff" && /^[-+](?![-+]{2})/.test(l)) out.push(`    ${l.slice(0, 160)}`);
      else if (!/^(stack|diff|source|at)$/.test(key)) out.push(`    ${key}: ${l.slice(0, 150)}`);
    }
  }
  // Comments a test wrote when it failed (stdout/stderr tails of a bench, for instance).
  const comments = lines.filter((l) => /^\s*# /.test(l) && !/^\s*# (Subtest|time=)/.test(l)).map((l) => l.trim());
  return [...out, ...comments.slice(-12)];
}

let printed = 0;
const failed = runs.filter((p) => p.code !== 0 || p.signal);
for (const p of failed) {
  if (printed >= TOTAL_LINES) break;
  const file = join(resultsDir, `${p.externalID}.tap`);
  const tap = existsSync(file) ? readFileSync(file, "utf8") : "";
  let lines = failingLines(tap);
  if (!lines.length) lines = tap.trim().split("\n").slice(-8);
  lines = lines.slice(0, PER_FILE_LINES);
  if (printed === 0) console.log("\n=== why the failed test files failed (their .tap records)");
  console.log(
    `--- ${p.externalID} (exit ${p.code ?? "-"}${p.signal ? `, ${p.signal}` : ""}, ${(p.runtime / 1000).toFixed(0)} s)`,
  );
  for (const l of lines) console.log(`  ${l}`);
  printed += lines.length + 1;
}
