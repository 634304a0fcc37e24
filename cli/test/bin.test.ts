/** The built executable: `node cli/dist/main.js` as operators (and scripts) run it. */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import { execFileP } from "./helpers/cli.js";
import { world } from "./helpers/setup.js";

const cliDir = fileURLToPath(new URL("..", import.meta.url));
const mainJs = join(cliDir, "dist", "main.js");

function newest(dir: string): number {
  let m = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    m = Math.max(m, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return m;
}

function stale(): boolean {
  try {
    return statSync(mainJs).mtimeMs < newest(join(cliDir, "src"));
  } catch {
    return true;
  }
}

t.before(async () => {
  // `npm test` builds first; when run alone after editing src/, build the CLI here.
  if (stale())
    await execFileP(process.execPath, [
      join(cliDir, "..", "node_modules", "typescript", "bin", "tsc"),
      "-p",
      join(cliDir, "tsconfig.json"),
    ]);
});

function orchctl(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [mainJs, ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    p.on("error", reject);
    p.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

t.test("dist/main.js has the node shebang", async (t) => {
  t.match(readFileSync(mainJs, "utf8"), /^#!\/usr\/bin\/env node\n/);
});

t.test("keygen → admin adds key → login → whoami → status → logout, via the executable", async (t) => {
  const w = await world(t);
  const env = { ...w.env, ORCH_URL: w.server.url };
  const kg = await orchctl(["keygen", "--json"], env);
  t.equal(kg.code, 0, kg.stderr);
  const { public_key } = JSON.parse(kg.stdout);
  t.equal((await stat(join(w.home, "id_ed25519"))).mode & 0o777, 0o600);
  w.server.addOperator("root", public_key, "admin");

  const login = await orchctl(["login"], env);
  t.equal(login.code, 0, login.stderr);
  t.match(login.stdout, `Logged in to ${w.server.url} as root (admin), token expires`);
  t.equal((await stat(join(w.home, "session.json"))).mode & 0o777, 0o600);

  const who = await orchctl(["whoami", "--json"], env);
  t.equal(who.code, 0, who.stderr);
  t.match(JSON.parse(who.stdout), { name: "root", public_key });

  const add = await orchctl(["operators", "add", "bob", "--public-key", join(w.home, "id_ed25519.pub")], env);
  t.equal(add.code, 0, add.stderr);
  const list = await orchctl(["operators", "list"], env);
  t.match(list.stdout, /^NAME\s+ID\s+ROLE\s+ACTIVE\s+SCOPE\s+CREATED\nroot\s.*\nbob\s/);

  const status = await orchctl(["status", "--json"], env);
  t.equal(status.code, 0);
  t.equal(JSON.parse(status.stdout).status, "degraded");

  const out = await orchctl(["logout"], env);
  t.equal(out.code, 0, out.stderr);
  await t.rejects(readFile(join(w.home, "session.json")));

  const after = await orchctl(["whoami"], env);
  t.equal(after.code, 1);
  t.match(after.stderr, /^error: not logged in; run orchctl login/);
});

t.test("exit status 1 and a clear message when the server is down", async (t) => {
  const r = await orchctl(["status", "--server", "http://127.0.0.1:1"], { HOME: t.testdir() });
  t.equal(r.code, 1);
  t.match(r.stderr, /^error: cannot connect to http:\/\/127\.0\.0\.1:1: connection refused/);
  t.equal(r.stdout, "");
  const v = await orchctl(["--version"], {});
  t.equal(v.code, 0);
  t.match(v.stdout, /^\d+\.\d+\.\d+\n$/);
});
