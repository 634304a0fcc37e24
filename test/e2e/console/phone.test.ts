import t from "tap";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Locator } from "playwright-core";
import type { Test } from "tap";
import { eventually, waitMs } from "@orch/kit/testing";
import { consoleStack, DESKTOP, expectNoA11yViolations, PHONE, SHOTS, shoot, signInWithLink } from "../lib/browser.js";

// The console at phone width (390×844) against the real stack: on Fleet, Pending, Audit, a run and
// an agent nothing scrolls sideways, the page's primary action lies within the screen's width, axe
// finds nothing serious, and the navigation is folded behind a "Menu" button that opens on a tap and
// by keyboard. Audit's filters fold behind "Filters (n active)"; a run's counts leave its results on
// the first screen. At desktop width (1280×800) the navigation shows without a menu.
const stack = await consoleStack(t, { agents: 2 });
const [n1, n2] = stack.nodeIds as [string, string];
const must = async (method: string, path: string, body: unknown, status: number) => {
  const r = await stack.api(method, path, body);
  if (r.status !== status) throw new Error(`${method} ${path}: expected ${status}, got ${r.status} ${r.text}`);
  return r.body;
};
for (const id of stack.nodeIds)
  await eventually(async () => (await stack.api("GET", `/api/v1/agents/${id}`)).body?.connected === true, 30_000);
// n1 approved with a tag; n2 stays pending (Pending's Approve is the action under test).
await must("POST", `/api/v1/agents/${n1}`, { status: "approved", name: "web-1" }, 200);
await must("PUT", `/api/v1/agents/${n1}/tags`, { tags: { role: "app", env: "production" } }, 200);
const MODULE = [
  "name: phone-demo",
  "resources:",
  "  - id: motd",
  "    type: exec",
  '    command: "echo a line long enough to wrap at phone width, and then some more words"',
  "",
].join("\n");
await must("POST", "/api/v1/modules", { name: "phone-demo", content: MODULE }, 201);
await must("POST", "/api/v1/assignments", { name: "phone", selector: "role=app", modules: ["phone-demo"] }, 201);
const plan = await stack.api("POST", "/api/v1/assignments/phone/plan", {});
if (plan.status !== 202 && plan.status !== 200) throw new Error(`plan: ${plan.status} ${plan.text}`);
const runPath = `/assignments/phone/runs/${plan.body.run_id as string}`;

const { page, guard } = await stack.newPage({ viewport: PHONE });
await signInWithLink(page, stack, stack.system.admin);

const h1 = (name: string) =>
  page.getByRole("heading", { level: 1, name, exact: true }).waitFor({ timeout: waitMs(15_000) });
const nav = () => page.getByRole("navigation", { name: "Main" });
const menu = () => nav().getByRole("button", { name: /^Menu/ });

/** The document is no wider than the viewport: nothing scrolls sideways. */
async function noSideways(t: Test, what: string) {
  // Strings: this file is type-checked without the DOM library.
  const scroll = (await page.evaluate("document.documentElement.scrollWidth")) as number;
  const client = (await page.evaluate("document.documentElement.clientWidth")) as number;
  t.ok(scroll <= client, `${what}: no horizontal scroll (scrollWidth ${scroll} <= clientWidth ${client})`);
}

/** No list table scrolls sideways inside its box either: at phone width they are cards. */
async function tablesFit(t: Test, what: string) {
  const wide = (await page.evaluate(`[...document.querySelectorAll(".table")]
    .map((table) => table.closest(".table-wrap") ?? table)
    .filter((box) => box.scrollWidth > box.clientWidth + 1)
    .map((box) => box.getAttribute("aria-label") ?? box.querySelector("[aria-label]")?.getAttribute("aria-label") ?? "?")`)) as string[];
  t.same(wide, [], `${what}: no table scrolls sideways`);
}

/** `el` lies within the viewport's width (reachable without scrolling sideways). */
async function withinWidth(t: Test, el: Locator, what: string) {
  await el.waitFor();
  const box = await el.boundingBox();
  const width = page.viewportSize()?.width ?? 0;
  t.ok(box && box.x >= 0 && box.x + box.width <= width, `${what} within the width (${JSON.stringify(box)})`);
}

async function shot(name: string) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `phone-${name}.png`) });
}

/** Every phone page: no sideways scroll, the menu folded, axe clean, screenshots at both widths. */
async function phoneChecks(t: Test, name: string, primary: Locator, label: string) {
  await page.waitForLoadState("networkidle").catch(() => {});
  await noSideways(t, name);
  await tablesFit(t, name);
  await withinWidth(t, primary, label);
  t.equal(await menu().getAttribute("aria-expanded"), "false", "the menu is folded");
  t.equal(await nav().getByRole("link", { name: "Fleet", exact: true }).isVisible(), false, "its links are hidden");
  await expectNoA11yViolations(t, page, `${name} (phone)`, { all: true });
  await shot(name);
  // light/dark × desktop/phone; leaves the page at desktop width, so back to the phone.
  t.equal((await shoot(page, `phone-${name}`)).length, 4);
  await page.setViewportSize(PHONE);
  guard.check(t, name);
}

t.test("the navigation folds into a menu that opens on a tap and by keyboard", async (t) => {
  await page.goto("/");
  await h1("Fleet");
  const list = page.locator(`[id="${await menu().getAttribute("aria-controls")}"]`);
  t.ok(await menu().isVisible(), "a Menu button");
  t.equal(await menu().getAttribute("aria-expanded"), "false");
  t.equal(await list.isVisible(), false, "aria-controls names the folded list");
  const header = await page.locator(".shell-header").boundingBox();
  t.ok(header && header.height < 70, `the header is one row (${header?.height} px)`);

  await menu().click();
  t.equal(await menu().getAttribute("aria-expanded"), "true", "a tap opens it");
  await nav().getByRole("link", { name: "Audit", exact: true }).waitFor();
  t.ok(await list.isVisible(), "the list shows");
  await noSideways(t, "the open menu");
  await expectNoA11yViolations(t, page, "open menu (phone)", { all: true });
  await shot("menu-open");
  await page.keyboard.press("Escape");
  t.equal(await menu().getAttribute("aria-expanded"), "false", "Escape folds it");
  t.equal(
    await page.evaluate("document.activeElement?.getAttribute('aria-controls')"),
    await menu().getAttribute("aria-controls"),
    "and gives focus back to the button",
  );

  await page.keyboard.press("Enter");
  t.equal(await menu().getAttribute("aria-expanded"), "true", "Enter on the button opens it");
  await page.keyboard.press("Tab");
  t.equal(await page.evaluate("document.activeElement?.textContent?.trim()"), "Fleet", "Tab goes on to the first link");
  await nav().getByRole("link", { name: "Pending", exact: true }).click();
  await h1("Pending approvals");
  t.equal(await menu().getAttribute("aria-expanded"), "false", "following a link folds the menu");

  await menu().click();
  t.equal(await menu().getAttribute("aria-expanded"), "true");
  // Below the dropped-down list, on the page.
  await page.mouse.click(PHONE.width / 2, PHONE.height - 20);
  t.equal(await menu().getAttribute("aria-expanded"), "false", "a tap outside folds it");
  guard.check(t, "menu");
});

t.test("Fleet at phone width", async (t) => {
  await page.goto("/");
  await h1("Fleet");
  await phoneChecks(t, "fleet", page.getByRole("link", { name: "web-1", exact: true }), "the agent's link");
  // The virtual list's rows are cards of the height it was told: one below the other, not overlapping.
  const boxes = [];
  const agentRows = page
    .getByRole("table", { name: "Agents" })
    .getByRole("row")
    .filter({ has: page.getByRole("cell") });
  for (const row of await agentRows.all()) {
    const box = await row.boundingBox();
    if (box) boxes.push(box);
  }
  t.equal(boxes.length, 2, "two agent cards");
  const [first, second] = boxes;
  t.ok(first && second && second.y >= first.y + first.height - 1, "the second card starts below the first");
  await withinWidth(t, page.getByText(n2, { exact: true }), "the pending agent's node id");
});

t.test("Pending at phone width: rows are cards, Approve on screen", async (t) => {
  await page.goto("/agents/pending");
  await h1("Pending approvals");
  const approve = page.getByRole("button", { name: "Approve", exact: true });
  await phoneChecks(t, "pending", approve, "Approve");
  const name = page.getByLabel(`Name for ${n2}`, { exact: true });
  await withinWidth(t, name, "the name field");
});

t.test("Audit at phone width: the filters fold, showing how many apply", async (t) => {
  await page.goto("/audit");
  await h1("Audit");
  const toggle = page.getByRole("button", { name: /^Filters/ });
  await toggle.waitFor();
  t.equal(await toggle.getAttribute("aria-expanded"), "false", "folded by default");
  t.equal(await page.getByLabel("Agent", { exact: true }).isVisible(), false, "the fields are hidden");
  const firstEvent = page.getByRole("list", { name: "Audit events" }).getByRole("listitem").first();
  await firstEvent.waitFor();
  const box = await firstEvent.boundingBox();
  t.ok(box && box.y < PHONE.height / 2, `the first event in the upper half of the first screen (y ${box?.y})`);
  await phoneChecks(t, "audit", toggle, "the Filters button");

  await toggle.click();
  t.equal(await toggle.getAttribute("aria-expanded"), "true");
  await page.getByLabel("Agent", { exact: true }).fill("web-1");
  await withinWidth(t, page.getByRole("button", { name: "Apply", exact: true }), "Apply");
  await noSideways(t, "audit, filters open");
  await shot("audit-filters-open");
  await page.getByRole("button", { name: "Apply", exact: true }).click();
  await page.waitForURL((u) => u.searchParams.get("agent") === "web-1");
  t.equal(await toggle.textContent(), "Filters (1 active)", "the button counts the applied filters");
  t.equal(await toggle.getAttribute("aria-expanded"), "false", "applying folds the panel");
  await page.getByLabel("Live", { exact: true }).check();
  await page.getByTestId("live-indicator").waitFor();
  await noSideways(t, "audit, live");
  await expectNoA11yViolations(t, page, "audit filtered (phone)", { all: true });
  guard.check(t, "audit filters");
});

t.test("a run at phone width: compact counts, results on the first screen", async (t) => {
  await page.goto(runPath);
  await h1("Plan phone");
  await eventually(async () => (await page.getByTestId("run-status").textContent())?.trim() === "completed", 30_000);
  const agent = page.getByRole("heading", { level: 3, name: "web-1", exact: true });
  await agent.waitFor();
  const box = await agent.boundingBox();
  t.ok(box && box.y + box.height < PHONE.height, `the first agent's results start on the first screen (y ${box?.y})`);
  const countsBox = await page.getByLabel(/^Progress of \d+ agents/).boundingBox();
  t.ok(countsBox && countsBox.height < 100, `the five counts take at most two short lines (${countsBox?.height} px)`);
  await page.getByRole("table").first().waitFor();
  await phoneChecks(t, "run", page.getByRole("button", { name: /^Hide results/ }), "Hide results");
});

t.test("an agent at phone width", async (t) => {
  await page.goto(`/agents/${n1}`);
  await h1("web-1");
  await phoneChecks(t, "agent", page.getByRole("link", { name: "Open terminal" }).first(), "Open terminal");
});

t.test("desktop width: the navigation shows without a menu", async (t) => {
  await page.setViewportSize(DESKTOP);
  await page.goto("/audit");
  await h1("Audit");
  t.equal(await menu().isVisible(), false, "no Menu button");
  for (const name of ["Fleet", "Pending", "Audit", "Account"])
    t.ok(await nav().getByRole("link", { name, exact: true }).isVisible(), `${name} in the navigation`);
  const tops: number[] = [];
  for (const link of await nav().getByRole("link").all()) tops.push(Math.round((await link.boundingBox())?.y ?? -1));
  t.equal(new Set(tops).size, 1, `the ${tops.length} entries in one row`);
  t.equal(await page.getByRole("button", { name: /^Filters/ }).isVisible(), false, "no Filters button");
  t.ok(await page.getByLabel("Agent", { exact: true }).isVisible(), "the filters show");
  await noSideways(t, "audit (desktop)");
  await expectNoA11yViolations(t, page, "audit (desktop)", { all: true });
  await shot("desktop-audit");
  guard.check(t, "desktop");
});
