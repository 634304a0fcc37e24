import t from "tap";
import { ed25519, waitMs } from "@orch/kit/testing";
import type { Page } from "playwright-core";
import { addOperator, consoleStack, expectNoA11yViolations, shoot, signInWithLink } from "../lib/browser.js";

// Approval banners in the browser against real processes (docs/approvals.md, docs/console.md): an
// operator (not an admin) reads the approval policies, so the pages that start an apply say
// beforehand which policy holds it and who approves; no banner while no policy holds the action.
const stack = await consoleStack(t);

const must = async (method: string, path: string, body: unknown, status: number) => {
  const r = await stack.api(method, path, body);
  if (r.status !== status) throw new Error(`${method} ${path}: expected ${status}, got ${r.status} ${r.text}`);
  return r.body;
};
const MODULE = [
  "name: motd",
  "resources:",
  "  - id: motd",
  "    type: file",
  "    path: /tmp/motd",
  '    content: "hi\\n"',
  "",
];
await must("POST", "/api/v1/modules", { name: "motd", content: MODULE.join("\n") }, 201);
await must("POST", "/api/v1/assignments", { name: "web", selector: "env=prod", modules: ["motd"] }, 201);

const olgaKey = ed25519();
await addOperator(stack, "olga", "operator", olgaKey);
const olga = await stack.newPage();
await signInWithLink(olga.page, stack, olgaKey);

const h1 = (page: Page, name: string) =>
  page.getByRole("heading", { level: 1, name, exact: true }).waitFor({ timeout: waitMs(15_000) });

/** Opens `path` and answers the policies the page read (as the signed-in operator). */
async function open(page: Page, path: string, heading: string) {
  const read = page.waitForResponse((r) => new URL(r.url()).pathname === "/api/v1/approval-policies");
  await page.goto(path);
  const res = await read;
  await h1(page, heading);
  return { status: res.status(), body: await res.json() };
}

const TEXT =
  /^Applies here need approval: policy prod-applies holds assignment\.apply on agents matching env=prod \(1 approval from role:admin\)\. A held apply becomes a change request — see Requests\.$/;

t.test("no policy holds assignment.apply: no banner", async (t) => {
  const read = await open(olga.page, "/assignments", "Assignments");
  t.equal(read.status, 200, "an operator reads the policies");
  t.same(read.body.policies, []);
  await olga.page.getByRole("link", { name: "web", exact: true }).waitFor();
  t.equal(await olga.page.getByTestId("approval-banner").count(), 0);
  olga.guard.check(t, "assignments (no policy)");
});

t.test("an admin's policy on env=prod: the operator sees it on Assignments and an assignment", async (t) => {
  await must(
    "PUT",
    "/api/v1/approval-policies/prod-applies",
    {
      description: "production needs a second pair of eyes",
      actions: ["assignment.apply"],
      selector: "env=prod",
      approvals_required: 1,
      approvers: ["role:admin"],
    },
    200,
  );
  const page = olga.page;
  await open(page, "/assignments", "Assignments");
  const banner = page.getByTestId("approval-banner");
  await banner.waitFor();
  t.match(((await banner.textContent()) ?? "").trim(), TEXT);
  t.equal(await banner.getAttribute("role"), "status");
  t.equal(await banner.getByTestId("approval-banner-policy").textContent(), "prod-applies");
  t.equal(await banner.getByTestId("approval-banner-selector").textContent(), "env=prod");
  t.equal(await banner.getByRole("link", { name: "Requests" }).getAttribute("href"), "/requests");
  await page.waitForLoadState("networkidle");
  await expectNoA11yViolations(t, page, "assignments (approval banner)");
  t.equal((await shoot(page, "approval-banner-assignments")).length, 4);

  await open(page, "/assignments/web", "web");
  const run = page.getByRole("region", { name: "Run", exact: true });
  await run.getByTestId("approval-banner").waitFor();
  t.match(((await run.getByTestId("approval-banner").textContent()) ?? "").trim(), TEXT);
  await page.waitForLoadState("networkidle");
  await expectNoA11yViolations(t, page, "assignment (approval banner)");
  t.equal((await shoot(page, "approval-banner-assignment", { scrollTo: run })).length, 4);

  await run.getByRole("link", { name: "Requests" }).click();
  await page.waitForURL((u) => u.pathname === "/requests");
  await h1(page, "Change requests");
  olga.guard.check(t, "approval banners");
});
