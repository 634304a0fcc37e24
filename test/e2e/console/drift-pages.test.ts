import t, { type Test } from "tap";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Locator } from "playwright-core";
import { ULID_CHARS } from "@orch/contracts";
import { eventually, waitMs } from "@orch/kit/testing";
import { consoleStack, expectNoA11yViolations, shoot, signInWithLink } from "../lib/browser.js";

// Drift where people look, in a real browser against real processes: three real orch-agents (two
// role=web), an assignment applied from its page (which lists the agents it matches with their drift,
// says when enforcement checks run, and asks before applying to 2 agents), a hand edit on web-1 found
// by a drift check, then the fleet's Drift column (rows by name), the agent header, the "drift found"
// operation badge, and a fourth agent left pending by a revoked join token with its reason. No page
// visited shows a raw ULID where the object has a name (operators, assignments, agents).
const stack = await consoleStack(t, { agents: 3 });
const [w1, w2, db] = stack.nodeIds as [string, string, string];
const dir = mkdtempSync(join(tmpdir(), "orch-e2e-console-drift-"));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const must = async (method: string, path: string, body: unknown, status: number) => {
  const r = await stack.api(method, path, body);
  if (r.status !== status) throw new Error(`${method} ${path}: expected ${status}, got ${r.status} ${r.text}`);
  return r.body;
};
for (const id of stack.nodeIds)
  await eventually(async () => (await stack.api("GET", `/api/v1/agents/${id}`)).body?.connected === true, 30_000);
// Approved in an order that is neither the node-id order nor the name order.
for (const [id, name, tags] of [
  [w2, "web-2", { role: "web", slot: "2" }],
  [db, "db-1", { role: "db", slot: "3" }],
  [w1, "web-10", { role: "web", slot: "1" }],
] as const) {
  await must("POST", `/api/v1/agents/${id}`, { status: "approved", name }, 200);
  await must("PUT", `/api/v1/agents/${id}/tags`, { tags }, 200);
}

const fileOf = (slot: string) => join(dir, `motd-${slot}.txt`);
const MODULE = [
  "name: motd",
  "resources:",
  "  - id: motd",
  "    type: file",
  `    path: "${dir}/motd-{{ tags.slot }}.txt"`,
  '    content: "welcome to slot {{ tags.slot }}\\n"',
  "",
].join("\n");
await must("POST", "/api/v1/modules", { name: "motd", content: MODULE }, 201);
await must("POST", "/api/v1/assignments", { name: "web", selector: "role=web", modules: ["motd"], enforce: true }, 201);
const me = await must("GET", "/api/v1/auth/whoami", undefined, 200);

const { page, guard } = await stack.newPage();
await signInWithLink(page, stack, stack.system.admin);

const h1 = (name: string) =>
  page.getByRole("heading", { level: 1, name, exact: true }).waitFor({ timeout: waitMs(15_000) });
const textOf = async (testId: string, scope: Locator | typeof page = page) =>
  ((await scope.getByTestId(testId).first().textContent()) ?? "").trim();
/** Each row's cells as text, header row left out (the rows of a table or of the ARIA table). */
interface Cells {
  querySelectorAll(selector: string): ArrayLike<{ textContent: string | null }>;
}
const rowsOf = async (table: Locator): Promise<string[][]> =>
  table
    .getByRole("row")
    .evaluateAll((rows) =>
      (rows as unknown as Cells[])
        .slice(1)
        .map((r) => Array.from(r.querySelectorAll('td, [role="cell"]')).map((c) => (c.textContent ?? "").trim())),
    );

const ULID = new RegExp(`\\b[${ULID_CHARS}]{26}\\b`, "g");
/**
 * Operations and runs have no name, so their ids may show; nothing else's may. Asked for afresh on
 * each page: the page may show an operation started just now.
 */
const namelessIds = async (): Promise<Set<string>> => {
  const ops = await must("GET", "/api/v1/state/operations?limit=500", undefined, 200);
  const runs = await must("GET", "/api/v1/assignments/web/runs", undefined, 200);
  return new Set([
    ...ops.operations.map((o: { id: string }) => o.id),
    ...runs.runs.map((r: { run_id: string }) => r.run_id),
  ]);
};
const noRawIds = async (t: Test, where: string) => {
  const text = (await page.evaluate("document.body.innerText")) as string;
  const allowed = await namelessIds();
  const raw = [...new Set(text.match(ULID) ?? [])].filter((id) => !allowed.has(id));
  t.same(raw, [], `${where}: no raw ULID where the object has a name`);
  t.notOk(text.includes(me.id), `${where}: the operator's id is not shown`);
};

t.test("the assignment page: creator by name, matched agents, enforcement note", async (t) => {
  await page.goto("/assignments/web");
  await h1("web");
  const matched = page.getByRole("region", { name: "Matched agents", exact: true });
  await eventually(async () => (await rowsOf(matched)).length === 2, 15_000);
  const rows = await rowsOf(matched);
  t.same(
    rows.map((r) => r[0]),
    ["web-2", "web-10"],
    "the approved role=web agents, by name (numbers in order); db-1 is not role=web",
  );
  await eventually(async () => (await rowsOf(matched)).every((r) => r[2] === "unknown"), 15_000);
  t.same(
    (await rowsOf(matched)).map((r) => [r[2], r[3]]),
    [
      ["unknown", "never"],
      ["unknown", "never"],
    ],
    "no drift check yet",
  );
  t.equal(await textOf("matched-count"), "2 approved agents match");
  t.match(await textOf("enforcement-note"), /scheduled drift checks run every hour by default/);
  t.match(await textOf("enforcement-note"), /re-applied right away/, "enforce is on");
  await eventually(async () => (await page.getByText(`by ${me.name}`, { exact: false }).count()) > 0, 15_000);
  t.pass(`"Created … by ${me.name}", the operator's name`);
  await noRawIds(t, "assignment");
  guard.check(t, "assignment page");
});

t.test("Apply on 2 agents asks first with the count; Cancel applies nothing, confirming applies", async (t) => {
  const dialog = page.getByRole("dialog");
  await page.getByRole("button", { name: "Apply", exact: true }).click();
  await dialog.waitFor();
  t.equal(
    await dialog.getByRole("heading").textContent(),
    "Apply web to 2 agents?",
    "the dialog names the assignment and the count",
  );
  t.match(await textOf("apply-confirm-text", dialog), /^motd will be applied to 2 agents, all at once\./);
  await expectNoA11yViolations(t, page, "assignment (apply confirmation)");
  t.equal((await shoot(page, "drift-apply-confirm")).length, 4);
  await dialog.getByRole("button", { name: "Cancel", exact: true }).click();
  await dialog.waitFor({ state: "hidden" });
  t.equal((await must("GET", "/api/v1/assignments/web/runs", undefined, 200)).runs.length, 0, "Cancel: no run");
  t.equal(new URL(page.url()).pathname, "/assignments/web");

  await page.getByRole("button", { name: "Apply", exact: true }).click();
  await dialog.getByRole("button", { name: "Apply to 2 agents", exact: true }).click();
  await page.waitForURL((u) => /^\/assignments\/web\/runs\/[^/]+$/.test(u.pathname), { timeout: waitMs(15_000) });
  await h1("Apply web");
  await eventually(
    async () => (await textOf("run-done")) === "2" && (await textOf("run-status")) === "completed",
    60_000,
    250,
  );
  t.equal(readFileSync(fileOf("1"), "utf8"), "welcome to slot 1\n", "web-10 wrote its file");
  t.equal(readFileSync(fileOf("2"), "utf8"), "welcome to slot 2\n");
  guard.check(t, "apply");
});

let driftOp = "";
t.test("a hand edit on web-10 is found by a drift check; web-2 is in sync", async (t) => {
  writeFileSync(fileOf("1"), "edited by hand\n");
  const found = await must("POST", `/api/v1/agents/${w1}/drift?wait=60`, undefined, 200);
  t.match(found, { operation: { kind: "drift", status: "succeeded" }, drift: { drifted: true } });
  t.equal(found.drift.resources.length, 1);
  driftOp = found.operation.id;
  const clean = await must("POST", `/api/v1/agents/${w2}/drift?wait=60`, undefined, 200);
  t.match(clean, { operation: { status: "succeeded" }, drift: { drifted: false } });
});

t.test("the fleet: a Drift column, rows sorted by name, the pending agent last", async (t) => {
  await page.goto("/");
  await h1("Fleet");
  const table = page.getByRole("table", { name: "Agents" });
  const header = await table.getByRole("columnheader").allTextContents();
  t.ok(header.includes("Drift"), `a Drift column (${header.join(", ")})`);
  const at = header.indexOf("Drift");
  await eventually(async () => (await rowsOf(table)).length === 3, 15_000);
  await eventually(
    async () => (await rowsOf(table)).map((r) => r[at]).join() === "unknown,in sync,drifted (1)",
    15_000,
  );
  const rows = await rowsOf(table);
  t.same(
    rows.map((r) => [r[0], r[at]]),
    [
      ["db-1", "unknown"],
      ["web-2", "in sync"],
      ["web-10", "drifted (1)"],
    ],
    "by name; web-10's drift, web-2 in sync, db-1 never checked",
  );
  const badge = table.getByRole("row").filter({ hasText: "web-10" }).getByText("drifted (1)", { exact: true });
  t.match(await badge.getAttribute("class"), /badge-warn/, "drift in the warning colour");
  await noRawIds(t, "fleet");
  await expectNoA11yViolations(t, page, "fleet (drift column)");
  t.equal((await shoot(page, "drift-fleet")).length, 4);
  guard.check(t, "fleet");
});

t.test("the agent header says drifted beside approved/connected; the drift check reads 'drift found'", async (t) => {
  await page.goto(`/agents/${w1}`);
  await h1("web-10");
  await eventually(async () => (await textOf("agent-drift")) === "drifted (1)", 15_000);
  const header = page.locator("dl.props").first();
  t.match(
    ((await header.textContent()) ?? "").replace(/\s+/g, " "),
    /approved ?connected ?drifted \(1\)/,
    "in the Status line, beside approved and connected",
  );
  const recent = page.getByRole("region", { name: "Recent operations", exact: true });
  const row = recent.getByRole("row").filter({ hasText: driftOp });
  await eventually(async () => ((await row.textContent()) ?? "").includes("drift found"), 15_000);
  t.match(
    await row.getByText("drift found", { exact: true }).locator("xpath=..").getAttribute("class"),
    /badge-warn/,
    "the recent operations list: a warning, not a green succeeded",
  );
  // The header badge leads down to the Drift section, far below on this long page.
  const driftTop = async () => (await page.getByRole("region", { name: "Drift", exact: true }).boundingBox())?.y ?? -1;
  // Charts and tables above it load lazily: measure once the page has settled.
  await page.waitForLoadState("networkidle");
  t.ok((await driftTop()) > 800, "the Drift section starts below the first screen");
  await page.getByRole("button", { name: "drifted (1)" }).click();
  await eventually(async () => {
    const y = await driftTop();
    return y >= 0 && y < 800;
  }, 10_000);
  t.pass("the header's drift badge scrolls to the Drift section");
  await noRawIds(t, "agent");
  await page.evaluate("window.scrollTo(0, 0)");
  t.equal((await shoot(page, "drift-agent")).length, 4);
  guard.check(t, "agent page");

  await page.goto(`/agents/${w2}`);
  await h1("web-2");
  await eventually(async () => (await textOf("agent-drift")) === "in sync", 15_000);
  await page.goto(`/agents/${db}`);
  await h1("db-1");
  await eventually(async () => (await textOf("agent-drift")) === "drift unknown", 15_000);
  t.pass("in sync on web-2, unknown on db-1 (never checked)");
  guard.check(t, "other agents");
});

t.test("the operation page of that drift check: a warning-coloured 'drift found'", async (t) => {
  await page.goto(`/operations/${driftOp}`);
  await h1(`Operation ${driftOp}`);
  await eventually(async () => (await textOf("operation-status")) === "drift found", 15_000);
  const badge = page.getByTestId("operation-status").locator("xpath=..");
  t.match(await badge.getAttribute("class"), /badge-warn/);
  t.equal(await page.getByText("succeeded", { exact: true }).count(), 0, "no green succeeded badge");
  await noRawIds(t, "operation");
  t.equal((await shoot(page, "drift-operation")).length, 4);

  // A drift check that found nothing keeps its plain status.
  const clean = (await must("GET", `/api/v1/state/operations?node_id=${w2}&kind=drift`, undefined, 200)).operations[0];
  await page.goto(`/operations/${clean.id}`);
  await h1(`Operation ${clean.id}`);
  await eventually(async () => (await textOf("operation-status")) === "succeeded", 15_000);
  guard.check(t, "operation page");
});

t.test("the assignment page lists the matched agents' drift", async (t) => {
  await page.goto("/assignments/web");
  await h1("web");
  const matched = page.getByRole("region", { name: "Matched agents", exact: true });
  await eventually(async () => (await rowsOf(matched)).map((r) => r[2]).join() === "in sync,drifted (1)", 15_000);
  const last = (await rowsOf(matched)).map((r) => r[3]);
  t.ok(
    last.every((s) => s !== "never" && s !== ""),
    `both agents show when they were last checked (${last.join(", ")})`,
  );
  await noRawIds(t, "assignment (after the checks)");
  await expectNoA11yViolations(t, page, "assignment");
  t.equal((await shoot(page, "drift-assignment")).length, 4);
  guard.check(t, "assignment drift");
});

t.test("an agent left pending by a revoked join token: the Pending page says why", async (t) => {
  const created = await must("POST", "/api/v1/join-tokens", { ttl_s: 3600 }, 201);
  await must("DELETE", `/api/v1/join-tokens/${created.join_token.id}`, undefined, 200);
  const { nodeId } = await stack.spawnAgent(["--join-token", created.token]);
  await eventually(
    async () => (await stack.api("GET", `/api/v1/agents/${nodeId}`)).body?.pending_reason === "join_token_revoked",
    30_000,
  );
  await page.goto("/agents/pending");
  await h1("Pending approvals");
  const row = page.getByRole("row").filter({ hasText: nodeId });
  await eventually(async () => (await row.count()) === 1, 15_000);
  t.equal(await textOf("pending-reason", row), "join token revoked");
  t.ok(await row.getByText("join_token_revoked", { exact: true }).isVisible(), "with its code");
  t.equal(
    await row.getByRole("cell").filter({ hasText: "join token revoked" }).getAttribute("data-label"),
    "Reason",
    "the cell is labelled for the card layout",
  );
  await noRawIds(t, "pending");
  await expectNoA11yViolations(t, page, "pending (reason)");
  t.equal((await shoot(page, "drift-pending")).length, 4);

  // The fleet lists it after the named agents (by node id), without a drift.
  await page.goto("/");
  await h1("Fleet");
  const table = page.getByRole("table", { name: "Agents" });
  await eventually(async () => (await rowsOf(table)).length === 4, 15_000);
  const rows = await rowsOf(table);
  t.same(
    rows.map((r) => r[1]),
    [db, w2, w1, nodeId],
    "db-1, web-2, web-10, then the unnamed pending agent",
  );
  guard.check(t, "pending page");
});
