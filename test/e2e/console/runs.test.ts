import t from "tap";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { eventually, waitMs } from "@orch/kit/testing";
import { consoleStack, expectNoA11yViolations, shoot, signInWithLink } from "../lib/browser.js";

// Assignment runs in the browser against real processes: two real orch-agents, a plan started from
// the assignment page whose run page shows real diffs (+/- lines, a side-by-side switch), an apply
// in batches of one whose counts move live over the run's SSE stream (no polling, no reload), an
// exec's captured output, and a gateway killed mid-apply: the page says "reconnecting", then shows
// the run's true final state.
const stack = await consoleStack(t, { agents: 2 });
const [n1, n2] = stack.nodeIds as [string, string];
const dir = mkdtempSync(join(tmpdir(), "orch-e2e-console-runs-"));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const must = async (method: string, path: string, body: unknown, status: number) => {
  const r = await stack.api(method, path, body);
  if (r.status !== status) throw new Error(`${method} ${path}: expected ${status}, got ${r.status} ${r.text}`);
  return r.body;
};
for (const id of stack.nodeIds)
  await eventually(async () => (await stack.api("GET", `/api/v1/agents/${id}`)).body?.connected === true, 30_000);
for (const [id, name, slot] of [
  [n1, "app-1", "1"],
  [n2, "app-2", "2"],
] as const) {
  await must("POST", `/api/v1/agents/${id}`, { status: "approved", name }, 200);
  await must("PUT", `/api/v1/agents/${id}/tags`, { tags: { role: "app", slot } }, 200);
}

// app-1's file exists with other content (a diff with - and + lines); app-2's is new.
writeFileSync(join(dir, "conf-1.txt"), "old line\nkept\n");
const DEMO = [
  "name: runs-demo",
  "resources:",
  "  - id: conf",
  "    type: file",
  `    path: "${dir}/conf-{{ tags.slot }}.txt"`,
  '    content: "new line <b>&amp;\\nkept\\n"',
  "  - id: hello",
  "    type: exec",
  // A second of work per agent: with batches of one, "done 1 of 2" is a state the page must pass through.
  '    command: "echo hello-from-{{ tags.slot }}; sleep 1"',
  "",
].join("\n");
const SLOW = ["name: runs-slow", "resources:", "  - id: wait", "    type: exec", '    command: "sleep 5"', ""].join(
  "\n",
);
await must("POST", "/api/v1/modules", { name: "runs-demo", content: DEMO }, 201);
await must("POST", "/api/v1/modules", { name: "runs-slow", content: SLOW }, 201);
await must("POST", "/api/v1/assignments", { name: "demo", selector: "role=app", modules: ["runs-demo"] }, 201);
await must("POST", "/api/v1/assignments", { name: "slow", selector: "role=app", modules: ["runs-slow"] }, 201);

const { page, guard } = await stack.newPage();
await signInWithLink(page, stack, stack.system.admin);

const h1 = (name: string) =>
  page.getByRole("heading", { level: 1, name, exact: true }).waitFor({ timeout: waitMs(15_000) });
const textOf = async (testId: string) => ((await page.getByTestId(testId).first().textContent()) ?? "").trim();
const runPath = (name: string) => new RegExp(`^/assignments/${name}/runs/[0-9A-Z]{26}$`);

/** GETs of the run resource and opened streams, by path, while the page follows a run. */
function watchRequests(p: Page) {
  const runGets: { path: string; at: number }[] = [];
  const streams: string[] = [];
  p.on("request", (r) => {
    const path = new URL(r.url()).pathname;
    if (r.method() === "GET" && /^\/api\/v1\/assignments\/[^/]+\/runs\/[^/]+$/.test(path))
      runGets.push({ path, at: Date.now() });
    if (/\/runs\/[^/]+\/stream$/.test(path)) streams.push(path);
  });
  return { runGets, streams };
}

let planUrl = "";
t.test("the assignment page: details, Plan/Apply controls, runs", async (t) => {
  await page.goto("/assignments/demo");
  await h1("demo");
  // The heading is the URL's name at once; the actions and the form come with the assignment.
  await page.getByTestId("assignment-enforce").waitFor();
  t.ok(await page.getByRole("link", { name: "Edit", exact: true }).isVisible(), "Edit link");
  t.ok(await page.getByLabel("Batch", { exact: true }).isVisible(), "Batch field");
  t.ok(await page.getByLabel("Max failures", { exact: true }).isVisible(), "Max failures field");
  await page.getByRole("region", { name: "Runs", exact: true }).getByText("No recent runs.").waitFor();
  await page.getByLabel("Batch", { exact: true }).fill("0");
  await page.getByRole("alert").or(page.locator(".field-error")).first().waitFor();
  t.equal(await page.getByRole("button", { name: "Apply", exact: true }).isDisabled(), true, "a bad batch disables");
  await page.getByLabel("Batch", { exact: true }).fill("");
  t.equal(await page.getByRole("button", { name: "Apply", exact: true }).isDisabled(), false);
  await page.waitForLoadState("networkidle");
  await expectNoA11yViolations(t, page, "assignment");
  t.equal((await shoot(page, "assignment")).length, 4);
  guard.check(t, "assignment page");
});

t.test("Plan: the run page shows real diffs per agent and switches to side by side", async (t) => {
  await page.getByRole("button", { name: "Plan", exact: true }).click();
  await page.waitForURL((u) => runPath("demo").test(u.pathname), { timeout: waitMs(15_000) });
  planUrl = page.url();
  await h1("Plan demo");
  await eventually(async () => (await textOf("run-status")) === "completed", 60_000, 250);
  t.equal(await textOf("run-done"), "2");
  t.equal(await textOf("run-failed"), "0");
  t.equal(await textOf("run-live"), "ended", "the stream closed with the run");
  for (const name of ["app-1", "app-2"]) await page.getByRole("heading", { name, exact: true }).waitFor();

  const diffs = page.getByTestId("diff");
  await eventually(async () => (await diffs.locator(".d2h-ins").count()) > 0, 10_000);
  const added = (await diffs.locator(".d2h-ins").allTextContents()).join("\n");
  t.match(added, /new line <b>&amp;/, "an added line, its HTML shown as text");
  t.equal(await diffs.locator("b").count(), 0, "never as markup");
  const removed = (await diffs.locator(".d2h-del").allTextContents()).join("\n");
  t.match(removed, /old line/, "app-1's current line shows as removed");
  t.match((await diffs.allTextContents()).join("\n"), /echo hello-from-1; sleep 1/, "the exec's plan is text");

  // Below the first agent, diff tables are built as they scroll near (the text shows meanwhile).
  const app2 = page.getByRole("region", { name: "app-2", exact: true });
  await app2.getByTestId("diff").first().scrollIntoViewIfNeeded();
  await eventually(async () => (await app2.locator(".d2h-ins").count()) > 0, 5_000);
  t.match((await app2.locator(".d2h-ins").allTextContents()).join("\n"), /kept/, "app-2's new file: added lines");
  t.equal(await app2.locator(".d2h-del").count(), 0, "a new file removes nothing");

  const toggle = page.getByRole("button", { name: "Side by side", exact: true });
  t.equal(await toggle.getAttribute("aria-pressed"), "false");
  t.equal(await page.locator(".d2h-file-side-diff").count(), 0, "unified first");
  await toggle.click();
  t.equal(await toggle.getAttribute("aria-pressed"), "true");
  await eventually(async () => (await page.locator(".d2h-file-side-diff").count()) >= 2, 5_000);
  t.equal(new URL(page.url()).searchParams.get("view"), "split", "the layout is in the URL");
  t.ok((await diffs.locator(".d2h-ins").count()) > 0, "still marked lines side by side");
  await page.goBack();
  await eventually(async () => (await page.locator(".d2h-file-side-diff").count()) === 0, 5_000);
  t.equal(await toggle.getAttribute("aria-pressed"), "false", "back returns to unified");

  await page.waitForLoadState("networkidle");
  await expectNoA11yViolations(t, page, "run (plan)");
  // The screenshots show the diffs, not just the counts above them.
  await page.getByRole("heading", { name: "app-1", exact: true }).scrollIntoViewIfNeeded();
  await page.evaluate(
    "window.scrollBy(0, document.querySelector('[data-testid=diff]').getBoundingClientRect().top - 120)",
  );
  t.equal((await shoot(page, "run-plan")).length, 4);
  guard.check(t, "plan run");
});

t.test("Apply in batches of one: counts move live over the stream to done=2", async (t) => {
  await page.goto("/assignments/demo");
  await h1("demo");
  // The run page is reached by in-app navigation: a full reload would drop this marker.
  await page.evaluate("window.__sameDocument = true");
  const seen = watchRequests(page);
  await page.getByLabel("Batch", { exact: true }).fill("1");
  await page.getByRole("button", { name: "Apply", exact: true }).click();
  // Apply on more than one agent asks first, naming the count.
  await page
    .getByRole("dialog")
    .getByRole("button", { name: /^Apply to / })
    .click();
  await page.waitForURL((u) => runPath("demo").test(u.pathname) && u.href !== planUrl, { timeout: waitMs(15_000) });
  await h1("Apply demo");
  // Every value the done counter shows, recorded in the page as it changes.
  await page.evaluate(`(() => {
    const seen = (window.__done = []);
    const note = () => {
      const v = document.querySelector('[data-testid="run-done"]')?.textContent;
      if (v != null && seen[seen.length - 1] !== v) seen.push(v);
    };
    note();
    new MutationObserver(note).observe(document.body, { subtree: true, childList: true, characterData: true });
  })()`);
  await eventually(
    async () => (await textOf("run-done")) === "2" && (await textOf("run-status")) === "completed",
    60_000,
    250,
  );
  t.equal(await textOf("run-failed"), "0");
  t.equal(await textOf("run-unreachable"), "0");
  t.equal(await textOf("run-not-started"), "0");
  t.equal(await textOf("run-live"), "ended");
  const done = (await page.evaluate("window.__done")) as string[];
  t.ok(done.includes("1") && done.indexOf("1") < done.indexOf("2"), `done went 1 → 2 live (${done.join(" → ")})`);
  t.equal(await page.evaluate("window.__sameDocument"), true, "no reload");
  t.ok(seen.runGets.length <= 1, `at most one GET of the run (${seen.runGets.length}); the stream carries the rest`);
  t.ok(seen.streams.length >= 1, "the run stream was opened");

  // The exec's captured output, read when its disclosure opens.
  const app1 = page.getByRole("region", { name: "app-1", exact: true });
  await app1.getByText("Output", { exact: true }).click();
  await eventually(async () => /hello-from-1/.test((await app1.getByTestId("output-stdout").textContent()) ?? ""));
  t.pass("app-1's stdout shows in its Output disclosure");

  await page.waitForLoadState("networkidle");
  await expectNoA11yViolations(t, page, "run (apply)");
  await app1.getByTestId("output-stdout").scrollIntoViewIfNeeded();
  t.equal((await shoot(page, "run-apply")).length, 4);
  guard.check(t, "apply run");
});

t.test("gateway restart mid-apply: reconnecting, then the true final state", async (t) => {
  await page.goto("/assignments/slow");
  await h1("slow");
  await page.getByRole("button", { name: "Apply", exact: true }).click();
  // Apply on more than one agent asks first, naming the count.
  await page
    .getByRole("dialog")
    .getByRole("button", { name: /^Apply to / })
    .click();
  await page.waitForURL((u) => runPath("slow").test(u.pathname), { timeout: waitMs(15_000) });
  await h1("Apply slow");
  await eventually(async () => (await textOf("run-live")) === "live", 10_000, 100);
  t.equal(await textOf("run-status"), "running", "killed while the agents still run");
  // Refused connections are what this test causes; the page logs them as network errors.
  guard.allow(/net::ERR_|Failed to load resource/);
  await stack.system.kill("gateway");
  await eventually(async () => (await textOf("run-live")) === "reconnecting", 15_000, 100);
  t.pass("the page says it is reconnecting");
  await stack.system.start("gateway");
  await eventually(
    async () => (await textOf("run-status")) === "completed" && (await textOf("run-done")) === "2",
    60_000,
    250,
  );
  t.equal(await textOf("run-failed"), "0");
  t.equal(await textOf("run-live"), "ended");
  const runId = new URL(page.url()).pathname.split("/").pop();
  const truth = await must("GET", `/api/v1/assignments/slow/runs/${runId}`, undefined, 200);
  t.equal(truth.status, "completed", "the page agrees with the API");
  t.same(
    truth.operations.map((o: { status: string }) => o.status),
    ["succeeded", "succeeded"],
  );
  guard.check(t, "gateway restart");
});

t.test("the assignment page lists the runs", async (t) => {
  await page.goto("/assignments/demo");
  await h1("demo");
  const runs = page.getByRole("region", { name: "Runs", exact: true });
  await eventually(async () => (await runs.getByRole("row").count()) === 3, 10_000);
  t.pass("a header and the plan and apply runs");
  await runs.getByRole("link").first().click();
  await page.waitForURL((u) => runPath("demo").test(u.pathname));
  await h1("Apply demo");
  guard.check(t, "runs list");
});
