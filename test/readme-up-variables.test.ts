import t from "tap";
import { readFileSync } from "node:fs";

// Every environment variable scripts/up.mjs reads is in the README's table of what `npm run up`
// honours (a variable added to up without a row here is one a new user cannot find).
const root = new URL("../", import.meta.url);
const up = readFileSync(new URL("scripts/up.mjs", root), "utf8");
const readme = readFileSync(new URL("README.md", root), "utf8");

t.test("the README lists every variable npm run up reads", async (t) => {
  const read = [...new Set([...up.matchAll(/process\.env\.([A-Z][A-Z0-9_]*)/g)].map((m) => m[1]!))].sort();
  t.ok(read.length >= 10, `up reads its variables through process.env (${read.length} found)`);
  const listed = new Set([...readme.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1]!));
  t.same(
    read.filter((v) => !listed.has(v)),
    [],
    "variables up reads that the README's table does not list",
  );
});

t.test("the README names every flag npm run up takes", async (t) => {
  const options = up.slice(up.indexOf("parseArgs({"), up.indexOf("allowPositionals"));
  const flags = [...options.matchAll(/^ {4}"?([a-z][a-z-]*)"?: \{ type:/gm)].map((m) => m[1]!);
  t.ok(flags.includes("insecure-bus"), `up's flags are found (${flags.join(", ")})`);
  t.same(
    flags.filter((f) => !readme.includes(`--${f}`)),
    [],
    "flags of up the README does not mention",
  );
});
