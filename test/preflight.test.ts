// scripts/preflight.mjs: with a PATH that lacks asciinema (every other command of the real PATH
// linked into a temp dir) it names asciinema and the apt-get line and exits non-zero; with the
// real PATH of this machine, which has every tool, it passes.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import t from "tap";

const SCRIPT = new URL("../scripts/preflight.mjs", import.meta.url).pathname;

function preflight(mode: string, env: NodeJS.ProcessEnv) {
  const r = spawnSync(process.execPath, [SCRIPT, mode], { encoding: "utf8", env });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

/** A PATH of one temp dir holding a link to every command of `path` except those in `without`. */
function pathWithout(path: string, without: string[]): string {
  const bin = mkdtempSync(join(tmpdir(), "orch-preflight-"));
  t.teardown(() => rmSync(bin, { recursive: true, force: true }));
  for (const dir of path.split(delimiter).filter(Boolean)) {
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      if (without.includes(name) || existsSync(join(bin, name))) continue;
      symlinkSync(join(dir, name), join(bin, name));
    }
  }
  return bin;
}

t.test("the real PATH has every tool the tests need", async (t) => {
  const r = preflight("test", process.env);
  t.equal(r.code, 0, r.out);
});

t.test("without asciinema: names it and the apt-get line, exits 1", async (t) => {
  const { NATS_SERVER_BIN: _, ...env } = process.env;
  const r = preflight("test", { ...env, PATH: pathWithout(process.env.PATH ?? "", ["asciinema"]) });
  t.equal(r.code, 1, "exits 1");
  t.match(r.out, /- asciinema: terminal tests/, "names asciinema and why it is needed");
  t.match(r.out, /apt-get install -y asciinema\n/, "prints the install line, with only what is missing");
  t.notMatch(r.out, /shellcheck|promtool/, "does not list what is installed");
});

t.test("up needs no test-only tool", async (t) => {
  const r = preflight("up", { ...process.env, PATH: pathWithout(process.env.PATH ?? "", ["asciinema", "chromium"]) });
  t.equal(r.code, 0, r.out);
});

t.test("an unknown mode is a usage error", async (t) => {
  const r = preflight("deploy", process.env);
  t.equal(r.code, 2);
  t.match(r.out, /usage: node scripts\/preflight\.mjs test\|up/);
});
