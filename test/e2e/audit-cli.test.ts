import t from "tap";
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createTestDatabase, eventually, startNats, startSystem } from "@orch/kit/testing";
import { cli } from "../../cli/test/helpers/cli.js";
import { eventFactory, publisher } from "../../services/audit/test/harness.js";

// orchctl audit against the real gateway, auth and audit processes: filters, table and --json,
// --all, prune, retention, and --follow across a gateway restart.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const system = await startSystem({ owner: t, nats, db, services: ["auth", "audit", "gateway"] });
const dir = mkdtempSync(join(tmpdir(), "orch-audit-cli-"));
const adminPem = join(dir, "admin.pem");
writeFileSync(adminPem, system.admin.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
const env = { ORCHCTL_HOME: join(dir, "home"), HOME: dir };
const orchctl = (...args: string[]) => cli(args, env);
const login = await cli(["--server", system.url, "login", "--key", adminPem], env);
if (login.code !== 0) throw new Error(login.stderr);

const nc = await nats.connect("cli-publisher");
const publish = await publisher(nc);
const event = eventFactory();
const web1 = { id: "node-1111", name: "web-1", type: "agent" };
const HOUR = 3_600_000;
const seeded = [
  event({ type: "cli.one", at: Date.now() - 3 * HOUR, target: web1, summary: "first" }),
  event({ type: "cli.two", at: Date.now() - 2 * HOUR, summary: "second" }),
  event({ type: "cli.three", at: Date.now() - HOUR, target: web1, summary: "third" }),
  event({ type: "cli.four", summary: "fourth" }),
  event({ type: "cli.five", summary: "fifth" }),
];
await publish(seeded);
await eventually(
  async () =>
    JSON.parse((await orchctl("--json", "audit", "--category", "cli", "--limit", "500")).stdout).events.length === 5,
  20_000,
);

t.test("audit: a table by default, one JSON page with --json, every page with --all", async (t) => {
  const table = await orchctl("audit", "--category", "cli", "--limit", "2");
  t.equal(table.code, 0, table.stderr);
  const lines = table.stdout.trimEnd().split("\n");
  t.match(lines[0], /^TIME\s+TYPE\s+SEVERITY\s+ACTOR\s+TARGET\s+SUMMARY\s+ID$/);
  t.equal(lines.length, 3);
  t.match(lines[1], /cli\.five\s+info\s+system:system\s+thing:thing\s+fifth/);
  t.match(table.stderr, new RegExp(`--cursor ${seeded[3]!.id}`), "says how to get the next page");

  const page = JSON.parse((await orchctl("--json", "audit", "list", "--category", "cli", "--limit", "2")).stdout);
  t.equal(page.events.length, 2);
  t.equal(page.has_more, true);
  t.equal(page.next_cursor, seeded[3]!.id);
  const next = JSON.parse(
    (await orchctl("--json", "audit", "--category", "cli", "--limit", "2", "--cursor", page.next_cursor)).stdout,
  );
  t.same(
    next.events.map((e: { summary: string }) => e.summary),
    ["third", "second"],
  );

  const all = JSON.parse((await orchctl("--json", "audit", "--category", "cli", "--limit", "2", "--all")).stdout);
  t.same(
    all.events.map((e: { summary: string }) => e.summary),
    ["fifth", "fourth", "third", "second", "first"],
  );
  t.equal(all.has_more, false);
});

t.test("audit: every filter flag, relative times, and the API's 400s", async (t) => {
  const q = async (...args: string[]) =>
    JSON.parse((await orchctl("--json", "audit", ...args)).stdout).events.map((e: { summary: string }) => e.summary);
  t.same(await q("--agent", "web-1"), ["third", "first"]);
  t.same(await q("--agent", "node-1111", "--after", "150m"), ["third"]);
  t.same(await q("--event-type", "cli.two"), ["second"]);
  t.same(
    await q("--category", "cli", "--before", "90m", "--after", new Date(Date.now() - 150 * 60_000).toISOString()),
    ["second"],
  );
  t.same(
    await q("--operator", "admin", "--event-type", "auth.login.succeeded").then((s: string[]) => s.length > 0),
    true,
  );

  const bad = await orchctl("--json", "audit", "--category", "cli.");
  t.equal(bad.code, 1);
  t.equal(JSON.parse(bad.stdout).code, "invalid_filter");
  t.match(bad.stderr, /category/);
  const badTime = await orchctl("audit", "--after", "yesterday");
  t.equal(badTime.code, 1);
  t.match(badTime.stderr, /--after must be an RFC 3339 time/);
});

t.test("audit retention: show, set, back to the default; prune", async (t) => {
  const show = await orchctl("audit", "retention");
  t.equal(show.code, 0, show.stderr);
  t.match(show.stdout, /retention_days:\s+off/);
  t.match(show.stdout, /source:\s+config/);
  const set = JSON.parse((await orchctl("--json", "audit", "retention", "set", "7")).stdout);
  t.same(set, { retention_days: 7, source: "override", default_retention_days: null });
  const back = JSON.parse((await orchctl("--json", "audit", "retention", "set", "default")).stdout);
  t.same(back, { retention_days: null, source: "config", default_retention_days: null });
  const zero = await orchctl("audit", "retention", "set", "0");
  t.equal(zero.code, 1);

  const pruned = await orchctl("audit", "prune", "--before", "90m");
  t.equal(pruned.code, 0, pruned.stderr);
  t.match(pruned.stdout, /^Deleted 2 audit events before /);
  const after = JSON.parse((await orchctl("--json", "audit", "--category", "cli")).stdout);
  t.same(
    after.events.map((e: { summary: string }) => e.summary),
    ["fifth", "fourth", "third"],
  );
  const record = JSON.parse((await orchctl("--json", "audit", "--event-type", "audit.pruned")).stdout).events[0];
  t.match(record, { actor: { name: "admin" }, metadata: { deleted: 2, trigger: "manual" } });
});

t.test("audit --follow streams NDJSON and resumes after the gateway restarts", async (t) => {
  const anchor = event({ type: "live.anchor" });
  await publish([anchor]);
  await eventually(
    async () =>
      JSON.parse((await orchctl("--json", "audit", "--event-type", "live.anchor")).stdout).events.length === 1,
  );
  const main = fileURLToPath(new URL("../../cli/dist/main.js", import.meta.url));
  const child = spawn(
    process.execPath,
    [main, "--json", "audit", "--follow", "--category", "live", "--cursor", anchor.id],
    { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  t.teardown(() => void child.kill("SIGKILL"));
  const lines = () =>
    out
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { id: string; event_type: string });

  const first = [event({ type: "live.one" }), event({ type: "other.x" }), event({ type: "live.two" })];
  await publish(first);
  await eventually(() => lines().length >= 2, 20_000);

  await system.kill("gateway", "SIGKILL");
  const whileDown = [event({ type: "live.three" })];
  await publish(whileDown);
  await system.start("gateway");
  const later = [event({ type: "live.four" })];
  await eventually(async () => (await system.api("GET", "/api/v1/status")).status === 200, 20_000);
  await publish(later);
  await eventually(() => lines().length >= 4, 30_000);
  t.same(
    lines().map((l) => l.event_type),
    ["live.one", "live.two", "live.three", "live.four"],
    "nothing missed or repeated across the reconnect",
  );
  t.match(err, /reconnecting/);

  child.kill("SIGINT");
  t.equal(await exited, 0, "Ctrl-C ends it cleanly");
});
