import t from "tap";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ed25519, eventually, waitMs } from "@orch/kit/testing";
import { addOperator, consoleStack, expectNoA11yViolations, shoot, signInWithLink } from "../lib/browser.js";

// Four-eyes applies in the browser against real processes (docs/approvals.md): an approval policy
// on env=prod, two real orch-agents tagged env=prod, an operator's Apply from the assignment page
// held as a change request (a notice links to it, nothing written), the requester refused on their
// own request, and the approver finding it under "To approve", reading each agent's diff from the
// plan run and approving: the request is executed and the files are on disk.
const stack = await consoleStack(t, { agents: 2 });
const [n1, n2] = stack.nodeIds as [string, string];
const dir = mkdtempSync(join(tmpdir(), "orch-e2e-console-approvals-"));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const must = async (method: string, path: string, body: unknown, status: number, as?: string) => {
  const r = await stack.api(method, path, body, as);
  if (r.status !== status) throw new Error(`${method} ${path}: expected ${status}, got ${r.status} ${r.text}`);
  return r.body;
};
for (const id of stack.nodeIds)
  await eventually(async () => (await stack.api("GET", `/api/v1/agents/${id}`)).body?.connected === true, 30_000);
for (const [id, name, slot] of [
  [n1, "prod-1", "1"],
  [n2, "prod-2", "2"],
] as const) {
  await must("POST", `/api/v1/agents/${id}`, { status: "approved", name }, 200);
  await must("PUT", `/api/v1/agents/${id}/tags`, { tags: { env: "prod", slot } }, 200);
}

const CONF = [
  "name: prod-conf",
  "resources:",
  "  - id: conf",
  "    type: file",
  `    path: "${dir}/conf-{{ tags.slot }}.txt"`,
  '    content: "approved line\\n"',
  "",
].join("\n");
await must("POST", "/api/v1/modules", { name: "prod-conf", content: CONF }, 201);
await must("POST", "/api/v1/assignments", { name: "prod-conf", selector: "env=prod", modules: ["prod-conf"] }, 201);

const requesterKey = ed25519();
const approverKey = ed25519();
await addOperator(stack, "alice", "operator", requesterKey);
await addOperator(stack, "bob", "operator", approverKey);
await must(
  "PUT",
  "/api/v1/approval-policies/prod-applies",
  {
    description: "production needs a second pair of eyes",
    actions: ["assignment.apply"],
    selector: "env=prod",
    approvals_required: 1,
    approvers: ["operator:bob", "role:admin"],
  },
  200,
);

const alice = await stack.newPage();
await signInWithLink(alice.page, stack, requesterKey);

const h1 = (page: typeof alice.page, name: string | RegExp) =>
  page.getByRole("heading", { level: 1, name }).waitFor({ timeout: waitMs(15_000) });

let requestId = "";
t.test("the requester's Apply is held: a notice links to the change request, nothing is written", async (t) => {
  const page = alice.page;
  await page.goto("/assignments/prod-conf");
  await h1(page, "prod-conf");
  await page.getByRole("button", { name: "Apply", exact: true }).click();
  await page
    .getByRole("dialog")
    .getByRole("button", { name: /^Apply to / })
    .click();
  const notice = page.getByTestId("apply-held");
  await notice.waitFor();
  t.match(await notice.textContent(), /An approval policy holds this apply: nothing was applied/);
  t.equal(new URL(page.url()).pathname, "/assignments/prod-conf", "stays on the assignment, not the run");
  const link = notice.getByRole("link", { name: /^change request / });
  requestId = ((await link.getAttribute("href")) ?? "").replace("/requests/", "");
  t.match(requestId, /^[0-9A-Z]{26}$/, "links to the request");
  const cr = await must("GET", `/api/v1/change-requests/${requestId}`, undefined, 200);
  t.equal(cr.status, "pending");
  t.equal(cr.requester.name, "alice");
  t.notOk(existsSync(join(dir, "conf-1.txt")), "nothing applied");
  await expectNoA11yViolations(t, page, "assignment (apply held)");
  t.equal((await shoot(page, "approvals-apply-held", { scrollTo: notice })).length, 4);
  alice.guard.check(t, "apply held");
});

t.test("the requester cannot approve their own request", async (t) => {
  const page = alice.page;
  await page
    .getByTestId("apply-held")
    .getByRole("link", { name: /^change request / })
    .click();
  await page.waitForURL((u) => u.pathname === `/requests/${requestId}`);
  await h1(page, /^Change request/);
  await page.getByRole("button", { name: "Approve", exact: true }).click();
  const problem = page.getByTestId("decision-problem");
  await problem.waitFor();
  t.match(await problem.textContent(), /may not approve their own change request/);
  t.match(await problem.textContent(), /own_change_request/);
  t.equal(await problem.getAttribute("role"), "alert");
  t.equal(((await page.getByTestId("request-status").textContent()) ?? "").trim(), "pending", "still pending");
  t.ok(await page.getByRole("button", { name: "Cancel request" }).isVisible(), "the requester may cancel");
  await page.goto("/requests?mine=true");
  await page.getByTestId("request-row").first().waitFor();
  t.equal(await page.getByTestId("request-row").count(), 1, "Mine lists alice's request");
  await page.goto("/requests?to_approve=true");
  await page.getByText("Nothing waits for your approval.").waitFor();
  t.pass("nothing for alice to approve");
  alice.guard.check(t, "own request");
});

const bob = await stack.newPage();
await signInWithLink(bob.page, stack, approverKey);

t.test("the approver finds it under To approve and reads each agent's diff", async (t) => {
  const page = bob.page;
  await page.goto("/assignments");
  const link = page.getByTestId("requests-link");
  await eventually(async () => /Change requests\s*1/.test((await link.textContent()) ?? ""), 15_000);
  await link.click();
  await page.waitForURL((u) => u.pathname === "/requests" && u.searchParams.get("to_approve") === "true");
  await h1(page, "Change requests");
  t.equal(
    await page
      .getByRole("navigation", { name: "Main" })
      .getByRole("link", { name: "Assignments" })
      .getAttribute("aria-current"),
    "page",
    "Requests belong with Assignments in the nav",
  );
  t.equal(
    await page.getByRole("link", { name: /^To approve/ }).getAttribute("aria-current"),
    "page",
    "the To approve tab is shown",
  );
  const row = page.getByTestId("request-row");
  await row.first().waitFor();
  t.equal(await row.count(), 1);
  const text = (await row.textContent()) ?? "";
  t.match(text, /assignment\.apply/);
  t.match(text, /prod-conf/);
  t.match(text, /alice/);
  t.match(text, /pending/);
  t.match(text, /0\/1/);
  await page.waitForLoadState("networkidle");
  await expectNoA11yViolations(t, page, "requests");
  t.equal((await shoot(page, "approvals-requests")).length, 4);

  await row.getByRole("link", { name: "assignment.apply" }).click();
  await page.waitForURL((u) => u.pathname === `/requests/${requestId}`);
  await h1(page, /^Change request/);
  const targets = page.getByTestId("request-target");
  await eventually(async () => (await targets.count()) === 2, 15_000);
  for (const name of ["prod-1", "prod-2"]) {
    const region = page.getByRole("region", { name, exact: true });
    await eventually(async () => (await region.locator(".d2h-ins").count()) > 0, 60_000, 250);
    t.match((await region.locator(".d2h-ins").allTextContents()).join("\n"), /approved line/, `${name}'s diff`);
  }
  t.match(await page.locator(".request-content pre").textContent(), /"plan_run_id"/, "the frozen content");
  await page.waitForLoadState("networkidle");
  await expectNoA11yViolations(t, page, "change request (pending)");
  t.equal((await shoot(page, "approvals-request-pending")).length, 4);
  const diffSection = page.getByRole("region", { name: "What it would change" });
  t.equal((await shoot(page, "approvals-request-diff", { scrollTo: diffSection })).length, 4);
  bob.guard.check(t, "request pending");
});

t.test("the approver approves: executed, and the files are written", async (t) => {
  const page = bob.page;
  await page.getByLabel("Comment").fill("looks right");
  await page.getByRole("button", { name: "Approve", exact: true }).click();
  const status = page.getByTestId("request-status");
  await eventually(async () => ((await status.textContent()) ?? "").trim() === "executed", 30_000, 250);
  t.pass("executed");
  await page.getByTestId("request-decisions").getByText("looks right").waitFor();
  t.match(await page.getByTestId("request-approvals").textContent(), /1\/1/);
  t.equal(await page.getByRole("button", { name: "Approve", exact: true }).count(), 0, "no more decisions");
  await page.getByRole("link", { name: /^apply run / }).waitFor();
  for (const slot of ["1", "2"]) {
    const file = join(dir, `conf-${slot}.txt`);
    await eventually(async () => existsSync(file) && readFileSync(file, "utf8") === "approved line\n", 60_000, 250);
  }
  t.pass("both agents wrote the file");
  await page.waitForLoadState("networkidle");
  await page.evaluate("window.scrollTo(0, 0)");
  await expectNoA11yViolations(t, page, "change request (executed)");
  t.equal((await shoot(page, "approvals-request-executed")).length, 4);
  bob.guard.check(t, "request executed");
});

t.test("an agent apply is held from the agent page; the approver reads its plan and approves", async (t) => {
  await must(
    "PUT",
    "/api/v1/approval-policies/prod-agent-applies",
    { actions: ["agent.apply"], selector: "env=prod", approvals_required: 1, approvers: ["operator:bob"] },
    200,
  );
  const agentConf = ["name: agent-conf", "resources:", "  - id: conf", "    type: file"];
  const file = join(dir, "agent-conf.txt");
  await must(
    "POST",
    "/api/v1/modules",
    {
      name: "agent-conf",
      content: [...agentConf, `    path: "${file}"`, '    content: "agent line\\n"', ""].join("\n"),
    },
    201,
  );
  const page = alice.page;
  await page.goto(`/agents/${n1}`);
  await h1(page, "prod-1");
  const form = page.getByRole("form", { name: "Apply or plan modules" });
  await form.getByLabel("agent-conf").check();
  await form.getByRole("button", { name: "Apply", exact: true }).click();
  const notice = page.getByTestId("agent-apply-held");
  await notice.waitFor({ timeout: waitMs(30_000) });
  t.match(await notice.textContent(), /An approval policy holds this apply: nothing was applied/);
  const link = notice.getByRole("link", { name: /^change request / });
  const id = ((await link.getAttribute("href")) ?? "").replace("/requests/", "");
  t.match(id, /^[0-9A-Z]{26}$/, "links to the request");
  t.notOk(existsSync(file), "nothing applied");
  await expectNoA11yViolations(t, page, "agent (apply held)");
  t.equal((await shoot(page, "approvals-agent-apply-held", { scrollTo: notice })).length, 4);
  alice.guard.check(t, "agent apply held");

  const approver = bob.page;
  await approver.goto(`/requests/${id}`);
  await h1(approver, /^Change request/);
  const region = approver.getByRole("region", { name: "prod-1", exact: true });
  await eventually(async () => (await region.locator(".d2h-ins").count()) > 0, 60_000, 250);
  t.match((await region.locator(".d2h-ins").allTextContents()).join("\n"), /agent line/, "the agent's diff");
  await approver.waitForLoadState("networkidle");
  await expectNoA11yViolations(t, approver, "change request (agent apply)");
  t.equal((await shoot(approver, "approvals-agent-request")).length, 4);
  await approver.getByRole("button", { name: "Approve", exact: true }).click();
  const status = approver.getByTestId("request-status");
  await eventually(async () => ((await status.textContent()) ?? "").trim() === "executed", 30_000, 250);
  await approver.getByRole("link", { name: /^apply [0-9A-Z]{26}$/ }).waitFor();
  await eventually(async () => existsSync(file) && readFileSync(file, "utf8") === "agent line\n", 60_000, 250);
  t.pass("executed: the agent wrote the file");
  bob.guard.check(t, "agent request executed");
});

t.test("an admin edits approval policies from the Requests page", async (t) => {
  const admin = await stack.newPage();
  t.teardown(() => admin.close());
  const page = admin.page;
  await signInWithLink(page, stack, stack.system.admin);
  await page.goto("/requests");
  await page.getByRole("link", { name: "Approval policies" }).click();
  await h1(page, "Approval policies");
  await page.getByRole("link", { name: "prod-applies" }).waitFor();
  await page.getByRole("button", { name: "Add policy" }).click();
  const form = page.getByRole("form", { name: "New approval policy" });
  await form.getByLabel("Name").fill("secrets");
  await form.getByLabel("assignment.apply").uncheck();
  await form.getByLabel("access.request").check();
  await form.getByLabel("Longest access (hours)").fill("2");
  await form.getByLabel("Approvers").fill("role:admin\noperator:bob");
  await form.getByLabel("Approvals required").fill("2");
  await form.getByRole("button", { name: "Add policy" }).click();
  await page.getByRole("status").filter({ hasText: "Added approval policy secrets" }).waitFor();
  const p = await must("GET", "/api/v1/approval-policies/secrets", undefined, 200);
  t.same(p.actions, ["access.request"]);
  t.equal(p.max_access_seconds, 7200, "the longest access, shown for access.request only");
  t.same(p.approvers, ["role:admin", "operator:bob"]);
  t.equal(p.approvals_required, 2);
  t.equal(p.selector, "*");
  t.equal(p.expires_after_seconds, 86400);
  // A refusal shows by its field.
  await page
    .getByRole("region", { name: "Approval policies" })
    .getByRole("link", { name: "secrets", exact: true })
    .click();
  await h1(page, "Approval policy secrets");
  await page.getByLabel("Approvers").fill("operator:nobody");
  await page.getByRole("button", { name: "Save" }).click();
  await page
    .getByText(/nobody/)
    .nth(1)
    .waitFor();
  await page.waitForLoadState("networkidle");
  await expectNoA11yViolations(t, page, "approval policy");
  t.equal((await shoot(page, "approvals-policy")).length, 4);
  await page.goto("/approval-policies");
  await page
    .getByRole("region", { name: "Approval policies" })
    .getByRole("link", { name: "secrets", exact: true })
    .waitFor();
  await expectNoA11yViolations(t, page, "approval policies");
  t.equal((await shoot(page, "approvals-policies")).length, 4);
  admin.guard.check(t, "policies");
});
