import t, { type Test } from "tap";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestRepo, ed25519, eventually, startGitHttpServer, waitMs } from "@orch/kit/testing";
import { addOperator, consoleStack, expectNoA11yViolations, shoot, signInWithLink } from "../lib/browser.js";

// Git sources in a real browser against the real stack: a real repository served over git's smart
// HTTP protocol, registered and synced through the API. The Sources list and a source's page show
// the commit in force; the module and assignment it manages say so and offer no edit or delete
// (an unmanaged one still does); a bad commit synced with "Sync now" shows the file, line and code
// while the previous commit stays in force; an operator sees the pages without "Sync now"; the
// webhook secret never reaches a page.
const stack = await consoleStack(t);
const root = mkdtempSync(join(tmpdir(), "orch-e2e-console-sources-"));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
const repo = await createTestRepo(join(root, "infra"));
const git = await startGitHttpServer(root);
t.teardown(() => git.close());

const must = async (method: string, path: string, body: unknown, status: number) => {
  const r = await stack.api(method, path, body);
  if (r.status !== status) throw new Error(`${method} ${path}: expected ${status}, got ${r.status} ${r.text}`);
  return r.body;
};

await repo.write(
  "modules/web-files.yaml",
  [
    "name: web-files",
    "description: files every web node gets",
    "resources:",
    "  - id: motd",
    "    type: file",
    "    path: /tmp/orch-e2e-console-sources/motd",
    '    content: "from git\\n"',
    "",
  ].join("\n"),
);
await repo.write(
  "assignments/web.yaml",
  ["selector: role=web", "modules:", "  - web-files", "description: the web tier", ""].join("\n"),
);
await repo.write(
  "approval-policies/prod-applies.yaml",
  ["actions: [assignment.apply]", "selector: env=prod", "approvals_required: 1", "approvers: ['role:admin']", ""].join(
    "\n",
  ),
);
const first = await repo.commit("web tier");
// Made by hand: the pages must keep offering edit and delete for it.
await must(
  "POST",
  "/api/v1/modules",
  { name: "hand-made", content: 'name: hand-made\nresources:\n  - id: x\n    type: exec\n    command: "true"\n' },
  201,
);
await must("POST", "/api/v1/assignments", { name: "hand", selector: "role=db", modules: ["hand-made"] }, 201);

const created = await must("POST", "/api/v1/sources", { name: "infra", url: git.url("infra"), branch: "main" }, 201);
const webhookSecret = created.webhook_secret as string;
if (!(webhookSecret?.length >= 16))
  throw new Error(`no webhook secret in the create answer: ${JSON.stringify(created)}`);
const synced = async (commit: string, status: string) =>
  eventually(
    async () => {
      const s = (await stack.api("GET", "/api/v1/sources/infra")).body;
      return s?.status === status && (s.commit === commit || s.attempted_commit === commit);
    },
    30_000,
    250,
  );
await synced(first, "ok");

const { page, guard } = await stack.newPage();
await signInWithLink(page, stack, stack.system.admin);
const h1 = (name: string) =>
  page.getByRole("heading", { level: 1, name, exact: true }).waitFor({ timeout: waitMs(15_000) });
const noSecret = async (t: Test, what: string) =>
  t.notOk((await page.content()).includes(webhookSecret), `${what}: the webhook secret is not on the page`);

t.test("the Sources list: status, branch and the commit in force", async (t) => {
  await page.goto("/");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Sources", exact: true }).click();
  await h1("Sources");
  const row = page.getByTestId("source-row").filter({ hasText: "infra" });
  await row.waitFor();
  t.equal((await row.getByTestId("source-status").textContent())?.trim(), "ok");
  t.equal((await row.getByTestId("source-commit").textContent())?.trim(), first.slice(0, 7), "commit, 7 characters");
  t.equal(await row.getByTestId("source-commit").getAttribute("title"), first, "the full SHA as tooltip");
  t.match(await row.textContent(), /main/, "the branch");
  t.match(await row.textContent(), new RegExp(git.url("infra").replaceAll(".", "\\.")), "the URL");
  await noSecret(t, "sources list");
  await page.waitForLoadState("networkidle");
  await expectNoA11yViolations(t, page, "sources");
  t.equal((await shoot(page, "sources")).length, 4);
  guard.check(t, "sources list");
});

t.test("a source's page lists what it manages", async (t) => {
  await page.getByRole("link", { name: "infra", exact: true }).click();
  await h1("infra");
  const modules = page.getByRole("region", { name: "Modules", exact: true });
  const assignments = page.getByRole("region", { name: "Assignments", exact: true });
  await modules.getByRole("link", { name: "web-files", exact: true }).waitFor();
  await assignments.getByRole("link", { name: "web", exact: true }).waitFor();
  t.equal(await modules.getByRole("link", { name: "hand-made" }).count(), 0, "a hand-made module is not listed");
  t.ok(await page.getByRole("button", { name: "Sync now" }).isVisible(), "admins may sync now");
  t.equal(await page.getByTestId("source-error").count(), 0, "no failure shown while in step");
  await noSecret(t, "source page");
  await page.waitForLoadState("networkidle");
  await expectNoA11yViolations(t, page, "source");
  t.equal((await shoot(page, "source")).length, 4);
  guard.check(t, "source page");
});

t.test("a managed approval policy: read-only, the owner named, no delete", async (t) => {
  await page.goto("/approval-policies");
  await h1("Approval policies");
  const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: "prod-applies", exact: true }) });
  t.match(await row.textContent(), /git: infra/, "the list marks the policy the source manages");
  await row.getByRole("link", { name: "prod-applies", exact: true }).click();
  await h1("Approval policy prod-applies");
  const notice = page.getByTestId("managed-by");
  await notice.waitFor();
  t.match(await notice.textContent(), `Managed by git source infra @ ${first.slice(0, 7)}`);
  t.match(await notice.textContent(), /Change this approval policy in the repository/);
  const view = page.getByTestId("policy-view");
  t.match(await view.textContent(), /assignment\.apply/);
  t.match(await view.textContent(), /1 approval from role:admin/);
  t.equal(await page.getByRole("button", { name: "Save" }).count(), 0, "no form to save");
  t.equal(await page.getByRole("button", { name: "Delete", exact: true }).count(), 0, "no delete");
  await page.waitForLoadState("networkidle");
  await expectNoA11yViolations(t, page, "managed approval policy");
  t.equal((await shoot(page, "approval-policy-managed")).length, 4);
  guard.check(t, "managed approval policy");
  // Back where the next subtest starts: the source's page.
  await page.goto("/sources/infra");
  await h1("infra");
});

t.test("a managed module: the owner is named and there is no upload or delete", async (t) => {
  await page.getByRole("link", { name: "web-files", exact: true }).click();
  await h1("web-files");
  const notice = page.getByTestId("managed-by");
  await notice.waitFor();
  t.match(await notice.textContent(), `Managed by git source infra @ ${first.slice(0, 7)}`);
  t.equal(await page.getByRole("link", { name: "Upload new version" }).count(), 0, "no upload over it");
  t.equal(await page.getByRole("button", { name: "Delete", exact: true }).count(), 0, "no delete");
  await page.waitForLoadState("networkidle");
  await expectNoA11yViolations(t, page, "managed module");
  t.equal((await shoot(page, "module-managed")).length, 4);

  await notice.getByRole("link", { name: "infra" }).click();
  await h1("infra");
  t.pass("the notice links to the source");

  await page.goto("/modules/hand-made");
  await h1("hand-made");
  await page.getByRole("link", { name: "Upload new version" }).waitFor();
  t.equal(await page.getByTestId("managed-by").count(), 0, "an unmanaged module has no notice");
  t.ok(await page.getByRole("button", { name: "Delete", exact: true }).isVisible(), "and keeps its delete");

  await page.goto("/modules");
  await h1("Modules");
  const managedRow = page.getByRole("row").filter({ has: page.getByRole("link", { name: "web-files", exact: true }) });
  t.match(await managedRow.textContent(), /git: infra/, "the list marks the managed module");
  const handRow = page.getByRole("row").filter({ has: page.getByRole("link", { name: "hand-made", exact: true }) });
  t.notMatch(await handRow.textContent(), /git:/, "and not the hand-made one");
  guard.check(t, "managed module");
});

t.test("a managed assignment: no edit or delete, runs still possible", async (t) => {
  await page.goto("/assignments");
  await h1("Assignments");
  const managed = page.getByRole("row").filter({ has: page.getByRole("link", { name: "web", exact: true }) });
  await managed.waitFor();
  t.match(await managed.textContent(), /git: infra/, "the list marks it");
  t.equal(await managed.getByRole("link", { name: "Edit web" }).count(), 0, "no Edit in its row");
  t.equal(await managed.getByRole("button", { name: "Delete web" }).count(), 0, "no Delete in its row");
  const hand = page.getByRole("row").filter({ has: page.getByRole("link", { name: "hand", exact: true }) });
  t.ok(await hand.getByRole("link", { name: "Edit hand" }).isVisible(), "the hand-made one keeps Edit");
  t.ok(await hand.getByRole("button", { name: "Delete hand" }).isVisible(), "and Delete");
  await expectNoA11yViolations(t, page, "assignments");

  await managed.getByRole("link", { name: "web", exact: true }).click();
  await h1("web");
  const notice = page.getByTestId("managed-by");
  await notice.waitFor();
  t.match(await notice.textContent(), `Managed by git source infra @ ${first.slice(0, 7)}`);
  t.equal(await page.getByRole("link", { name: "Edit", exact: true }).count(), 0, "no Edit");
  t.equal(await page.getByRole("button", { name: "Delete", exact: true }).count(), 0, "no Delete");
  t.ok(await page.getByRole("button", { name: "Plan", exact: true }).isVisible(), "Plan stays");
  t.match(await page.getByTestId("assignment-apply-on-sync").textContent(), /^off/, "apply on sync is shown");
  await page.waitForLoadState("networkidle");
  await expectNoA11yViolations(t, page, "managed assignment");
  t.equal((await shoot(page, "assignment-managed")).length, 4);
  guard.check(t, "managed assignment");
});

let broken = "";
t.test("Sync now with a bad commit: file, line and code shown; the previous commit stays", async (t) => {
  // Line 1's selector does not parse: the whole tree is refused.
  await repo.write(
    "assignments/web.yaml",
    ["selector: role in (web", "modules:", "  - web-files", "description: the web tier", ""].join("\n"),
  );
  broken = await repo.commit("a broken selector");
  await page.goto("/sources/infra");
  await h1("infra");
  await page.getByRole("button", { name: "Sync now" }).click();
  await page.getByTestId("sync-result").waitFor({ timeout: waitMs(60_000) });
  const failure = page.getByTestId("source-error");
  await failure.waitFor();
  t.equal((await page.getByTestId("source-status").first().textContent())?.trim(), "error");
  t.match(await failure.textContent(), `commit ${first.slice(0, 7)} stays in force`, "the previous commit in force");
  t.match(await failure.textContent(), `Commit ${broken.slice(0, 7)} was refused`, "names the refused commit");
  t.match(await failure.textContent(), /assignments\/web\.yaml/, "the reason names the file");
  const rows = page.getByTestId("file-error");
  t.ok((await rows.count()) >= 1, "per-file errors listed");
  const row = rows.filter({ hasText: "assignments/web.yaml" }).first();
  t.match(await row.textContent(), /invalid_selector/, "the code");
  t.match((await row.locator("td").nth(1).textContent()) ?? "", /^1(:\d+)?$/, "the line");
  t.equal(
    (await page.getByTestId("source-commit").first().textContent())?.trim(),
    first.slice(0, 7),
    "the page shows the commit still in force",
  );
  const api = await must("GET", "/api/v1/assignments/web", undefined, 200);
  t.equal(api.selector, "role=web", "nothing changed in the catalog");
  await noSecret(t, "failed source page");
  await page.waitForLoadState("networkidle");
  await expectNoA11yViolations(t, page, "source (failed)");
  const section = page.getByRole("region", { name: "Last sync failed", exact: true });
  t.equal((await shoot(page, "source-error", { scrollTo: section })).length, 4);

  await page.goto("/sources");
  await h1("Sources");
  const listRow = page.getByTestId("source-row").filter({ hasText: "infra" });
  t.equal((await listRow.getByTestId("source-status").textContent())?.trim(), "error", "the list says error");
  t.ok(((await listRow.textContent()) ?? "").length > 0);
  t.equal((await listRow.getByTestId("source-commit").textContent())?.trim(), first.slice(0, 7));
  guard.check(t, "failed sync");
});

t.test("fixed in git: Sync now brings the source back to ok", async (t) => {
  await repo.write(
    "assignments/web.yaml",
    ["selector: role in (web, app)", "modules:", "  - web-files", ""].join("\n"),
  );
  const fixed = await repo.commit("fix the selector");
  await page.goto("/sources/infra");
  await h1("infra");
  await page.getByRole("button", { name: "Sync now" }).click();
  await page.getByTestId("sync-result").waitFor({ timeout: waitMs(60_000) });
  await page.getByTestId("source-error").waitFor({ state: "detached" });
  t.equal((await page.getByTestId("source-status").first().textContent())?.trim(), "ok");
  t.equal((await page.getByTestId("source-commit").first().textContent())?.trim(), fixed.slice(0, 7));
  await page.goto("/assignments/web");
  await h1("web");
  t.match(await page.getByTestId("managed-by").textContent(), `@ ${fixed.slice(0, 7)}`, "the new commit");
  guard.check(t, "fixed sync");
});

t.test("an operator sees sources but cannot sync", async (t) => {
  const key = ed25519();
  await addOperator(stack, "sources-op", "operator", key);
  const op = await stack.newPage();
  await signInWithLink(op.page, stack, key);
  await op.page.goto("/sources/infra");
  await op.page.getByRole("heading", { level: 1, name: "infra", exact: true }).waitFor({ timeout: waitMs(15_000) });
  await op.page.getByTestId("source-status").first().waitFor();
  t.equal(await op.page.getByRole("button", { name: "Sync now" }).count(), 0, "no Sync now for operators");
  await op.page.goto("/sources");
  await op.page.getByTestId("source-row").first().waitFor();
  t.pass("the list is readable");
  op.guard.check(t, "operator pages");
  await op.close();
});
