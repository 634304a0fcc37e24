// orchctl secrets against real gateway, auth and secrets processes, with orchctl itself run as a
// process: the value arrives on piped stdin or at a hidden terminal prompt, never in argv, and the
// stored ciphertext opens to exactly that value.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import pg from "pg";
import * as pty from "node-pty";
import { createTestDatabase, startNats, startSystem } from "@orch/kit/testing";
import { parseKeyring } from "../../services/secrets/src/keyring.js";

const ORCHCTL = fileURLToPath(new URL("../../cli/dist/main.js", import.meta.url));
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const key = `k1:${randomBytes(32).toString("base64")}`;
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "secrets", "gateway"],
  env: { ORCH_SECRETS_KEYS: key },
});
const sql = new pg.Client({ connectionString: db.url });
await sql.connect();
t.teardown(async () => {
  await sql.end();
});

const dir = mkdtempSync(join(tmpdir(), "orch-secrets-cli-"));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const env = { ...process.env, HOME: dir, ORCHCTL_HOME: join(dir, "home"), ORCH_URL: system.url };
const adminPem = join(dir, "admin.pem");
writeFileSync(adminPem, system.admin.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });

/** Runs orchctl as a process with `stdin` piped in (or closed). */
function orchctl(
  args: string[],
  stdin: string | Buffer = "",
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [ORCHCTL, ...args], { env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    p.on("error", reject);
    p.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    p.stdin.end(stdin);
  });
}

/** Decrypts a stored row with the service's key: what Resolve would hand out. */
async function stored(name: string): Promise<string> {
  const r = (await sql.query("SELECT key_id, nonce, ciphertext, auth_tag FROM secrets.secrets WHERE name = $1", [name]))
    .rows[0];
  return parseKeyring(key).open(name, { keyId: r.key_id, nonce: r.nonce, ciphertext: r.ciphertext, tag: r.auth_tag });
}

t.before(async () => {
  const r = await orchctl(["login", "--key", adminPem]);
  if (r.code !== 0) throw new Error(r.stderr);
});

t.test("set from piped stdin creates, then updates; show and list never print a value", async (t) => {
  const value = `pipe-${randomBytes(12).toString("hex")}`;
  const node = "b".repeat(32);
  const c = await orchctl(
    ["secrets", "set", "db.pass", "--description", "database", "--node", node, "--tag", "env=prod"],
    `${value}\n`,
  );
  t.equal(c.code, 0, c.stderr);
  t.match(c.stdout, /^Created secret db\.pass$/m);
  t.equal(await stored("db.pass"), value, "one trailing newline from echo is dropped");

  const show = await orchctl(["--json", "secrets", "show", "db.pass"]);
  const meta = JSON.parse(show.stdout);
  t.same(meta.restriction, { node_ids: [node], tags: { env: "prod" } });
  t.equal(meta.description, "database");
  t.notOk("value" in meta);
  const human = await orchctl(["secrets", "show", "db.pass"]);
  t.match(human.stdout, /restriction:\s+nodes: b{32}; tags: env=prod/);

  const multi = `line1\nline2\n`;
  const u = await orchctl(
    ["--json", "secrets", "set", "db.pass", "--keep-newline", "--expires-at", "2999-01-01T00:00:00Z", "--unrestricted"],
    multi,
  );
  t.equal(u.code, 0, u.stderr);
  const doc = JSON.parse(u.stdout);
  t.equal(doc.action, "updated");
  t.equal(doc.secret.restriction, null);
  t.equal(doc.secret.expires_at, "2999-01-01T00:00:00.000Z");
  t.equal(doc.secret.description, "database", "unspecified fields are kept");
  t.equal(await stored("db.pass"), multi, "--keep-newline keeps the bytes");

  const ls = await orchctl(["secrets", "list"]);
  t.match(ls.stdout, /^NAME\s+RESTRICTION\s+EXPIRES\s+UPDATED\s+DESCRIPTION$/m);
  t.match(ls.stdout, /^db\.pass\s+any approved agent\s+2999-01-01T00:00:00\.000Z/m);
  for (const out of [c, show, human, u, ls])
    t.notOk(
      out.stdout.includes(value) || out.stderr.includes(value) || out.stdout.includes("line1"),
      "no value printed",
    );
});

t.test("list pages with --limit/--cursor and --all", async (t) => {
  for (const n of ["pg-1", "pg-2", "pg-3"]) t.equal((await orchctl(["secrets", "set", n], "v")).code, 0);
  const p1 = JSON.parse((await orchctl(["--json", "secrets", "list", "--limit", "2"])).stdout);
  t.equal(p1.secrets.length, 2);
  t.equal(p1.has_more, true);
  const all = JSON.parse((await orchctl(["--json", "secrets", "list", "--all", "--limit", "2"])).stdout);
  t.same(
    all.secrets.map((s: { name: string }) => s.name),
    ["db.pass", "pg-1", "pg-2", "pg-3"],
  );
});

t.test("refusals: empty stdin, bad flags, unknown names, server-side validation", async (t) => {
  const empty = await orchctl(["secrets", "set", "nothing"], "");
  t.equal(empty.code, 1);
  t.match(empty.stderr, /empty value.*\(invalid_value\)/);
  const binary = await orchctl(["secrets", "set", "x"], Buffer.from([0x66, 0xff, 0xfe, 0x00]));
  t.equal(binary.code, 1);
  t.match(binary.stderr, /not valid UTF-8 text.*\(invalid_value\)/);
  const tag = await orchctl(["secrets", "set", "x", "--tag", "novalue"], "v");
  t.match(tag.stderr, /--tag expects key=value/);
  const both = await orchctl(["secrets", "set", "x", "--unrestricted", "--node", "b".repeat(32)], "v");
  t.match(both.stderr, /cannot be combined/);
  const badNode = await orchctl(["--json", "secrets", "set", "x", "--node", "web-1"], "v");
  t.equal(badNode.code, 1);
  t.equal(JSON.parse(badNode.stdout).code, "invalid_restriction");
  const past = await orchctl(["secrets", "set", "x", "--expires-at", "2001-01-01T00:00:00Z"], "v");
  t.match(past.stderr, /expires_at_in_past/);
  const show = await orchctl(["secrets", "show", "nope"]);
  t.equal(show.code, 1);
  t.match(show.stderr, /secret_not_found/);
  t.equal(
    (await sql.query("SELECT count(*) FROM secrets.secrets WHERE name = 'x' OR name = 'nothing'")).rows[0].count,
    0,
  );
});

t.test("rm and reencrypt", async (t) => {
  const rm = await orchctl(["secrets", "rm", "pg-3"]);
  t.equal(rm.code, 0, rm.stderr);
  t.match(rm.stdout, /Deleted secret pg-3/);
  t.match((await orchctl(["secrets", "rm", "pg-3"])).stderr, /secret_not_found/);
  const re = await orchctl(["--json", "secrets", "reencrypt"]);
  t.equal(re.code, 0, re.stderr);
  t.same(JSON.parse(re.stdout), { active_key: "k1", reencrypted: 0, failed: [] });
});

/** orchctl in a real terminal; `answers` are typed at each prompt in turn. */
function inTerminal(args: string[], answers: string[]): Promise<{ code: number; screen: string }> {
  return new Promise((resolve) => {
    const term = pty.spawn(process.execPath, [ORCHCTL, ...args], {
      cols: 120,
      rows: 30,
      env: env as Record<string, string>,
    });
    let screen = "";
    let asked = 0;
    term.onData((d) => {
      screen += d;
      const prompts = (screen.match(/Value \(input hidden\): |Repeat value: /g) ?? []).length;
      while (asked < prompts && asked < answers.length) term.write(`${answers[asked++]}\r`);
    });
    term.onExit(({ exitCode }) => resolve({ code: exitCode, screen }));
  });
}

t.test("at a terminal the value is asked twice with echo off", async (t) => {
  const value = `tty-${randomBytes(12).toString("hex")}`;
  const ok = await inTerminal(["secrets", "set", "tty.secret"], [value, value]);
  t.equal(ok.code, 0, ok.screen);
  t.match(ok.screen, /Created secret tty\.secret/);
  t.notOk(ok.screen.includes(value), "the typed value is not echoed");
  t.equal(await stored("tty.secret"), value);

  const mismatch = await inTerminal(["secrets", "set", "tty.other"], [value, `${value}x`]);
  t.equal(mismatch.code, 1);
  t.match(mismatch.screen, /the two values differ.*\(value_mismatch\)/);
  t.equal((await sql.query("SELECT count(*) FROM secrets.secrets WHERE name = 'tty.other'")).rows[0].count, 0);
});
