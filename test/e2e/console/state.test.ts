import t, { type Test } from "tap";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Locator, Page } from "playwright-core";
import { eventually, waitMs } from "@orch/kit/testing";
import { consoleStack, expectNoA11yViolations, shoot, signInWithLink } from "../lib/browser.js";

// The console's state acceptance walk, all through the browser against real processes: three real
// orch-agents (two tagged role=web), a secret restricted to role=web, a module typed into the YAML
// editor with a file resource rendered from the secret, an assignment role=web, a plan whose diff
// shows the file sealed (its size, never the value), a live apply to done=2, a hand edit of the file the
// agent wrote, "Check now" on the agent page showing the edit as drift, and "Re-apply" clearing it.
// Then one agent's own State section (plan, a refused secret), and the operation page.
const stack = await consoleStack(t, { agents: 3 });
const [w1, w2, db] = stack.nodeIds as [string, string, string];
const dir = mkdtempSync(join(tmpdir(), "orch-e2e-console-state-"));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const must = async (method: string, path: string, body: unknown, status: number) => {
  const r = await stack.api(method, path, body);
  if (r.status !== status) throw new Error(`${method} ${path}: expected ${status}, got ${r.status} ${r.text}`);
  return r.body;
};
for (const id of stack.nodeIds)
  await eventually(async () => (await stack.api("GET", `/api/v1/agents/${id}`)).body?.connected === true, 30_000);
for (const [id, name, tags] of [
  [w1, "web-1", { role: "web", slot: "1" }],
  [w2, "web-2", { role: "web", slot: "2" }],
  [db, "db-1", { role: "db", slot: "3" }],
] as const) {
  await must("POST", `/api/v1/agents/${id}`, { status: "approved", name }, 200);
  await must("PUT", `/api/v1/agents/${id}/tags`, { tags }, 200);
}

// Random, so no page could show it by accident; the files on disk are the positive control.
const SECRET = `S3cret-${randomBytes(9).toString("hex")}`;
await must(
  "POST",
  "/api/v1/secrets",
  { name: "app_token", value: SECRET, restriction: { tags: { role: "web" } } },
  201,
);

const fileOf = (slot: string) => join(dir, `app-${slot}.conf`);
const MODULE = [
  "name: app-config",
  "description: the app's config with its token",
  "resources:",
  "  - id: conf",
  "    type: file",
  `    path: "${dir}/app-{{ tags.slot }}.conf"`,
  '    content: "token={{ secrets.app_token }}\\nowner=console\\n"',
  '    mode: "0600"',
  "",
].join("\n");
const WANT = `token=${SECRET}\nowner=console\n`;

const { page, guard } = await stack.newPage();
await signInWithLink(page, stack, stack.system.admin);

const h1 = (name: string) =>
  page.getByRole("heading", { level: 1, name, exact: true }).waitFor({ timeout: waitMs(15_000) });
const textOf = async (testId: string, scope: Page | Locator = page) =>
  ((await scope.getByTestId(testId).first().textContent()) ?? "").trim();
/** Everything the page holds as text and markup: the secret must be in none of it. */
const domHasSecret = async () =>
  (await page.evaluate("document.documentElement.outerHTML + document.body.innerText")) as unknown as string;
/** What a diff says instead of the content of a file rendered from a secret (docs/secrets.md, sealed). */
const SEALED = "not shown: the file holds content rendered from a secret";
/** Results arrive after the counts (fetched as operations finish), so wait for the sealed note first. */
const noSecret = async (t: Test, where: string) => {
  await eventually(async () => (await domHasSecret()).includes(SEALED), 30_000, 250).catch(() => {});
  const dom = await domHasSecret();
  t.notOk(dom.includes(SECRET), `${where}: the secret's value is nowhere in the DOM`);
  t.ok(dom.includes(SEALED), `${where}: the content shows as sealed (sizes only)`);
};

t.test("upload the module by typing it into the YAML editor", async (t) => {
  await page.goto("/modules/new");
  await h1("Upload module");
  const editor = page.getByLabel("Module YAML", { exact: true });
  await editor.click();
  await page.keyboard.press("ControlOrMeta+a");
  await page.keyboard.press("Delete");
  await page.keyboard.insertText(MODULE);
  await page.getByRole("button", { name: "Upload", exact: true }).click();
  await page.waitForURL((u) => u.pathname === "/modules/app-config", { timeout: waitMs(15_000) });
  await h1("app-config");
  const stored = await must("GET", "/api/v1/modules/app-config", undefined, 200);
  t.equal(stored.content.trim(), MODULE.trim(), "the typed YAML is what was stored");
  t.equal(stored.resource_count, 1);
  guard.check(t, "module upload");
});

let planUrl = "";
t.test("create the assignment role=web in the form", async (t) => {
  await page.goto("/assignments/new");
  await h1("New assignment");
  await page.getByLabel("Name", { exact: true }).fill("web");
  await page.getByLabel("Selector", { exact: true }).fill("role=web");
  await eventually(async () => (await textOf("selector-matches")) === "matches 2 agents", 10_000);
  t.equal(await textOf("selector-matches"), "matches 2 agents");
  await page.getByRole("group", { name: "Modules" }).getByRole("checkbox", { name: "app-config", exact: true }).check();
  // Enforce mode (scheduled drift checks are off in this stack, so it changes nothing below).
  await page.getByRole("checkbox", { name: "Enforce", exact: true }).check();
  await page.getByRole("button", { name: "Create", exact: true }).click();
  await page.waitForURL((u) => u.pathname === "/assignments/web", { timeout: waitMs(15_000) });
  await h1("web");
  t.match(await must("GET", "/api/v1/assignments/web", undefined, 200), {
    selector: "role=web",
    modules: ["app-config"],
    enforce: true,
  });
  t.match(await textOf("assignment-enforce"), /^on:/, "the assignment page shows enforce mode");
  guard.check(t, "assignment create");
});

t.test("Plan: the file's diff is sealed (sizes, never the secret)", async (t) => {
  await page.getByRole("button", { name: "Plan", exact: true }).click();
  await page.waitForURL((u) => /^\/assignments\/web\/runs\/[^/]+$/.test(u.pathname), { timeout: waitMs(15_000) });
  planUrl = page.url();
  await h1("Plan web");
  await eventually(async () => (await textOf("run-status")) === "completed", 60_000, 250);
  t.equal(await textOf("run-done"), "2", "both web agents planned");
  t.equal(await textOf("run-failed"), "0");
  for (const name of ["web-1", "web-2"]) await page.getByRole("heading", { name, exact: true }).waitFor();
  t.equal(await page.getByRole("heading", { name: "db-1", exact: true }).count(), 0, "db-1 is not role=web");
  const notes = page.getByTestId("diff").locator(".diff-notes");
  await eventually(async () => (await notes.count()) > 0, 10_000);
  const noteText = (await notes.allTextContents()).join("\n");
  t.match(noteText, /create file/, "the attribute notes: a new file");
  t.match(noteText, /content \(none\) -> \d+ bytes/, "its size, not its content");
  await noSecret(t, "plan");
  t.throws(() => readFileSync(fileOf("1")), "a plan writes nothing");
  guard.check(t, "plan run");
});

t.test("Apply: progress reaches done=2 and completed; the agents wrote the real value", async (t) => {
  await page.goto("/assignments/web");
  await h1("web");
  await page.getByRole("button", { name: "Apply", exact: true }).click();
  // Apply on more than one agent asks first, naming the count.
  await page
    .getByRole("dialog")
    .getByRole("button", { name: /^Apply to / })
    .click();
  await page.waitForURL((u) => /^\/assignments\/web\/runs\/[^/]+$/.test(u.pathname) && u.href !== planUrl, {
    timeout: waitMs(15_000),
  });
  await h1("Apply web");
  await eventually(
    async () => (await textOf("run-done")) === "2" && (await textOf("run-status")) === "completed",
    60_000,
    250,
  );
  t.equal(await textOf("run-failed"), "0");
  t.equal(await textOf("run-unreachable"), "0");
  t.equal(await textOf("run-not-started"), "0");
  t.equal(readFileSync(fileOf("1"), "utf8"), WANT, "web-1's file has the secret's value (positive control)");
  t.equal(readFileSync(fileOf("2"), "utf8"), WANT);
  t.throws(() => readFileSync(fileOf("3")), "db-1 got nothing");
  await noSecret(t, "apply");
  guard.check(t, "apply run");
});

const drift = page.getByRole("region", { name: "Drift", exact: true });

t.test("a hand edit on the agent: Check now shows it as drift with its diff", async (t) => {
  await writeFile(fileOf("1"), "token=HAND-EDITED\nowner=console\n");
  await page.goto(`/agents/${w1}`);
  await h1("web-1");
  await eventually(async () => (await textOf("drift-status", drift)) === "never checked", 10_000);
  t.equal(await drift.getByRole("button", { name: "Re-apply" }).isDisabled(), true, "nothing to re-apply yet");
  await drift.getByRole("button", { name: "Check now", exact: true }).click();
  await eventually(async () => (await textOf("drift-status", drift)) === "drifted", 60_000, 250);
  const diff = drift.getByTestId("diff");
  await eventually(async () => (await diff.locator(".diff-notes").count()) > 0, 10_000);
  // The file holds a secret, so even the hand edit is shown by size only (it could hold the value).
  t.match((await diff.locator(".diff-notes").allTextContents()).join("\n"), /content \d+ bytes -> \d+ bytes/);
  t.notMatch((await diff.textContent()) ?? "", /HAND-EDITED/, "no content of a sealed file");
  await noSecret(t, "drift");
  t.match(await must("GET", `/api/v1/agents/${w1}/drift/latest`, undefined, 200), { drifted: true });
  t.equal(
    new URL(page.url()).pathname,
    `/agents/${w1}`,
    "the check stays on the agent page (no navigation, no reload)",
  );
  await expectNoA11yViolations(t, page, "agent (state, drift)");
  // The shots show the state part of the page: State, Recent operations and Drift.
  const stateHeading = page.getByRole("heading", { level: 2, name: "State", exact: true });
  t.equal((await shoot(page, "agent-state", { scrollTo: stateHeading })).length, 4);
  guard.check(t, "agent drift");
});

t.test("Re-apply: the file is enforced again and drift is cleared", async (t) => {
  await drift.getByRole("button", { name: "Re-apply", exact: true }).click();
  await eventually(async () => (await textOf("drift-status", drift)) === "in sync", 60_000, 250);
  t.equal(readFileSync(fileOf("1"), "utf8"), WANT, "the agent wrote the applied content again");
  t.equal(await drift.getByTestId("diff").count(), 0, "no drifted resources left");
  t.match(await must("GET", `/api/v1/agents/${w1}/drift/latest`, undefined, 200), { drifted: false });
  const ops = (await must("GET", `/api/v1/agents/${w1}/state/operations`, undefined, 200)).operations;
  t.match(
    ops.slice(0, 3).map((o: { kind: string; status: string }) => `${o.kind}:${o.status}`),
    ["drift:succeeded", "apply:succeeded", "drift:succeeded"],
    "re-apply = an apply of the checked modules, then a fresh check",
  );
  t.same(ops[1].modules, ["app-config"], "the modules the drift check covered");
  guard.check(t, "re-apply");
});

const state = page.getByRole("region", { name: "State", exact: true });

t.test("one agent's State: plan a module, the result is in the URL", async (t) => {
  await page.goto(`/agents/${w2}`);
  await h1("web-2");
  await state.getByRole("group", { name: "Modules" }).getByRole("checkbox", { name: "app-config" }).check();
  await state.getByRole("button", { name: "Plan", exact: true }).click();
  await eventually(async () => (await textOf("state-operation-status", state)) === "succeeded", 60_000, 250);
  const op = new URL(page.url()).searchParams.get("op");
  t.ok(op, "?op= names the operation shown");
  t.match(await must("GET", `/api/v1/state/operations/${op}`, undefined, 200), {
    kind: "plan",
    node_id: w2,
    modules: ["app-config"],
    summary: { ok: 1, changed: 0, failed: 0 },
  });
  t.ok(await state.getByRole("cell", { name: "app-config/conf", exact: true }).isVisible(), "the results table");
  await page.reload();
  await h1("web-2");
  await eventually(async () => (await textOf("state-operation-status", state)) === "succeeded", 10_000);
  t.pass("a reload shows the same operation (bookmarkable)");
  guard.check(t, "agent plan");
});

t.test("one agent's State: a secret the agent may not receive fails the plan, said with its code", async (t) => {
  await page.goto(`/agents/${db}`);
  await h1("db-1");
  await state.getByRole("group", { name: "Modules" }).getByRole("checkbox", { name: "app-config" }).check();
  await state.getByRole("button", { name: "Plan", exact: true }).click();
  await eventually(async () => (await textOf("state-operation-status", state)) === "failed", 60_000, 250);
  t.ok(await state.getByText("secret_not_permitted").first().isVisible(), "the refusal's code");
  t.equal((await domHasSecret()).includes(SECRET), false);
  guard.check(t, "agent plan refused");
});

t.test("Recent operations link to the operation page", async (t) => {
  await page.goto(`/agents/${w1}`);
  await h1("web-1");
  const recent = page.getByRole("region", { name: "Recent operations", exact: true });
  const row = recent.getByRole("row").filter({ hasText: "apply" }).first();
  const link = row.getByRole("link");
  const id = ((await link.textContent()) ?? "").trim();
  await link.click();
  await page.waitForURL((u) => u.pathname === `/operations/${id}`, { timeout: waitMs(15_000) });
  await h1(`Operation ${id}`);
  t.equal(await textOf("operation-status"), "succeeded");
  t.ok(await page.getByRole("cell", { name: "app-config/conf", exact: true }).isVisible(), "its results");
  t.ok(await page.getByRole("link", { name: "web-1", exact: true }).isVisible(), "a link back to its agent");
  await noSecret(t, "operation");
  await expectNoA11yViolations(t, page, "operation");
  t.equal((await shoot(page, "operation")).length, 4);
  await page.goBack();
  await h1("web-1");
  t.pass("back returns to the agent");
  guard.check(t, "operation page");
});
