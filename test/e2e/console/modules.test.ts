import t, { type Test } from "tap";
import type { Page } from "playwright-core";
import { ed25519, eventually, waitMs } from "@orch/kit/testing";
import { addOperator, consoleStack, expectNoA11yViolations, shoot, signInWithLink } from "../lib/browser.js";

// Modules and assignments in a real browser against the real stack: upload through the CodeMirror
// editor (a module rendering a restricted secret), a refused upload marks the line the API named
// and stores nothing, a new version shows in the history; assignments with a live "matches N
// agents", an unparsable selector disabling Create, edit and delete; an operator sees it all.
const stack = await consoleStack(t, { agents: 1 });
const [nodeId] = stack.nodeIds as [string];
await eventually(async () => (await stack.api("GET", `/api/v1/agents/${nodeId}`)).body?.connected === true, 30_000);
const approved = await stack.api("POST", `/api/v1/agents/${nodeId}`, { status: "approved", name: "web-1" });
if (approved.status !== 200) throw new Error(`approving ${nodeId}: ${approved.text}`);
await stack.api("PUT", `/api/v1/agents/${nodeId}/tags/role`, { value: "web" });
const secret = await stack.api("POST", "/api/v1/secrets", {
  name: "db_password",
  value: "s3cr3t-h2-value",
  restriction: { node_ids: [nodeId] },
});
if (secret.status !== 201) throw new Error(`creating the secret: ${secret.text}`);

const MODULE_V1 = `name: web-files
description: files for web nodes
resources:
  - id: app-config
    type: file
    path: /tmp/orch-e2e-modules/app.conf
    content: "password={{ secrets.db_password }}\\n"
    mode: "0600"
`;
const MODULE_V2 = `${MODULE_V1}  - id: motd
    type: file
    path: /tmp/orch-e2e-modules/motd
    content: "managed\\n"
`;
// Line 7 misspells `content`: the API refuses it as invalid_module at that line.
const UNKNOWN_FIELD = `name: web-files-bad
resources:
  - id: app-config
    type: file
    path: /tmp/orch-e2e-modules/app.conf
    mode: "0600"
    conent: "x"
`;
// Not YAML at all: a mapping value where none may be (line 4).
const NOT_YAML = `name: broken
resources:
  - id: a
    type: file: x: y
`;

const { page, guard } = await stack.newPage();
await signInWithLink(page, stack, stack.system.admin);

async function heading(p: Page, name: string) {
  await p.getByRole("heading", { level: 1, name, exact: true }).waitFor({ timeout: waitMs(15_000) });
}

/** Replaces the editor's whole text the way a person would: select all, then type (insertText). */
async function typeYaml(p: Page, text: string) {
  const editor = p.getByRole("textbox", { name: "Module YAML" });
  await editor.click();
  await p.keyboard.press("ControlOrMeta+a");
  await p.keyboard.insertText(text);
}

const editorText = (p: Page) =>
  p.evaluate("Array.from(document.querySelectorAll('.cm-content .cm-line')).map((l) => l.textContent).join('\\n')");

async function moduleNames(): Promise<string[]> {
  const r = await stack.api("GET", "/api/v1/modules");
  return (r.body.modules as Array<{ name: string }>).map((m) => m.name);
}

async function settle(t: Test, p: Page, name: string) {
  await p.waitForLoadState("networkidle").catch(() => {});
  await expectNoA11yViolations(t, p, name);
  t.equal((await shoot(p, name)).length, 4, `${name}: four screenshots`);
}

t.test("modules: empty list, then the upload page with its editor", async (t) => {
  await page.goto("/modules");
  await heading(page, "Modules");
  await page.getByText("No modules yet.").waitFor();
  await settle(t, page, "modules");
  await page.getByRole("link", { name: "Upload module" }).click();
  await page.waitForURL((u) => u.pathname === "/modules/new");
  await heading(page, "Upload module");
  await page.getByRole("textbox", { name: "Module YAML" }).waitFor();
  await settle(t, page, "module-upload");
  guard.check(t, "upload page");
});

t.test("invalid YAML: the line the API reported is marked, nothing is uploaded", async (t) => {
  for (const [what, text, expectedCode] of [
    ["an unknown field", UNKNOWN_FIELD, "invalid_module"],
    ["broken YAML", NOT_YAML, "invalid_yaml"],
  ] as const) {
    await page.goto("/modules/new");
    await heading(page, "Upload module");
    await typeYaml(page, text);
    t.equal(await editorText(page), text, `${what}: the editor holds what was typed`);
    const answer = page.waitForResponse((r) => r.url().endsWith("/api/v1/modules") && r.request().method() === "POST");
    await page.getByRole("button", { name: "Upload" }).click();
    const res = await answer;
    t.equal(res.status(), 400, `${what}: refused`);
    const problem = await res.json();
    t.equal(problem.code, expectedCode, `${what}: ${problem.detail}`);
    t.ok(Number.isInteger(problem.line) && problem.line > 1, `${what}: the API names a line (${problem.line})`);
    if (expectedCode === "invalid_module") t.equal(problem.line, 7, "the misspelt field's line");

    const lineMark = page.getByTestId("yaml-error-line");
    await lineMark.waitFor();
    t.equal(await lineMark.textContent(), String(problem.line), `${what}: the page names the API's line`);
    const alert = page.getByRole("alert").filter({ has: lineMark });
    t.match(await alert.textContent(), problem.detail, `${what}: the API's detail in an alert`);
    // CodeMirror's own lint marks: the range on that line and the gutter marker.
    const line = page.locator(".cm-content .cm-line").nth(problem.line - 1);
    await line.locator(".cm-lintRange-error").first().waitFor();
    t.equal(await page.locator(".cm-lint-marker-error").count(), 1, `${what}: one gutter marker`);
    t.equal(new URL(page.url()).pathname, "/modules/new", `${what}: still on the upload page`);
    if (expectedCode === "invalid_module") await settle(t, page, "module-upload-error");
  }
  t.same(await moduleNames(), [], "GET /api/v1/modules: nothing was uploaded");
  guard.check(t, "refused uploads");
});

t.test("upload a module rendering a restricted secret; the module page shows it with line numbers", async (t) => {
  await page.goto("/modules/new");
  await heading(page, "Upload module");
  await typeYaml(page, MODULE_V1);
  await page.getByRole("button", { name: "Upload" }).click();
  await page.waitForURL((u) => u.pathname === "/modules/web-files");
  await heading(page, "web-files");
  const api = await stack.api("GET", "/api/v1/modules/web-files");
  t.equal(api.body.content, MODULE_V1, "the API holds exactly what was typed");

  const view = page.getByRole("textbox", { name: "web-files YAML" });
  await view.waitFor();
  t.equal(await view.getAttribute("contenteditable"), "false", "read-only");
  t.equal(await editorText(page), MODULE_V1, "the YAML shown is the module's");
  const numbers = await page.locator(".cm-lineNumbers .cm-gutterElement").allTextContents();
  for (let n = 1; n <= MODULE_V1.trimEnd().split("\n").length; n++)
    t.ok(numbers.includes(String(n)), `line ${n} numbered`);
  t.ok((await page.locator(".cm-content span[class]").count()) > 5, "highlighted (tokens carry classes)");

  const history = page.getByRole("region", { name: "Version history" });
  await eventually(async () => (await history.getByRole("row").count()) === 2, 15_000);
  t.match(await history.getByRole("row").nth(1).textContent(), /current/, "the one upload is current");
  t.match(await history.textContent(), api.body.sha256.slice(0, 12), "named by its SHA-256");
  await settle(t, page, "module");
  guard.check(t, "module page");
});

t.test("a new version: prefilled editor, then two entries in the history", async (t) => {
  await page.goto("/modules");
  await page.getByRole("link", { name: "web-files" }).click();
  await heading(page, "web-files");
  await page.getByRole("link", { name: "Upload new version" }).click();
  await page.waitForURL((u) => u.pathname === "/modules/web-files/upload");
  await heading(page, "Upload module");
  await eventually(async () => (await editorText(page)) === MODULE_V1, 10_000);
  await typeYaml(page, MODULE_V2);
  await page.getByRole("button", { name: "Upload" }).click();
  await page.waitForURL((u) => u.pathname === "/modules/web-files");
  const api = await stack.api("GET", "/api/v1/modules/web-files");
  t.equal(api.body.resource_count, 2, "the new version is stored");
  const history = page.getByRole("region", { name: "Version history" });
  await eventually(async () => (await history.getByRole("row").count()) === 3, 15_000);
  const rows = await history.getByRole("row").allTextContents();
  t.match(rows[1], /^2.*current/, "version 2 is current");
  t.match(rows[1], api.body.sha256.slice(0, 12));
  t.match(rows[2], /^1/, "version 1 below it");
  t.match(rows[1], /admin/, "who uploaded it");
  guard.check(t, "new version");
});

t.test("assignments: create with a live match count; an unparsable selector disables Create", async (t) => {
  await page.goto("/assignments");
  await heading(page, "Assignments");
  await page.getByText("No assignments yet.").waitFor();
  await settle(t, page, "assignments");
  await page.getByRole("link", { name: "New assignment" }).click();
  await page.waitForURL((u) => u.pathname === "/assignments/new");
  await heading(page, "New assignment");

  await page.getByLabel("Name", { exact: true }).fill("web");
  const selector = page.getByLabel("Selector", { exact: true });
  const matches = page.getByTestId("selector-matches");
  const create = page.getByRole("button", { name: "Create" });
  await selector.fill("role=db");
  await eventually(async () => (await matches.textContent().catch(() => "")) === "matches 0 agents", 10_000);
  await selector.fill("role=web");
  await eventually(async () => (await matches.textContent().catch(() => "")) === "matches 1 agent", 10_000);
  t.pass("role=web matches the one agent");
  await page.getByRole("group", { name: "Modules" }).getByRole("checkbox", { name: "web-files" }).check();
  await page.getByLabel("Description").fill("the web tier");
  await settle(t, page, "assignment-new");

  await selector.fill("role=web,,");
  const error = page.getByRole("alert").filter({ hasText: "position" });
  await error.waitFor();
  t.match(await error.textContent(), /at position 9/, "the parser's message with the position");
  t.equal(
    await page.getByTestId("selector-error-at").locator("mark").textContent(),
    ",",
    "the offending character marked",
  );
  t.equal(await selector.getAttribute("aria-invalid"), "true");
  t.ok(await create.isDisabled(), "Create is disabled");
  t.equal(await matches.count(), 0, "no count for a selector that does not parse");

  await selector.fill("role=web");
  await eventually(async () => (await matches.textContent().catch(() => "")) === "matches 1 agent", 10_000);
  t.ok(await create.isEnabled(), "Create is enabled again");
  await create.click();
  await page.waitForURL((u) => u.pathname === "/assignments/web");
  const a = await stack.api("GET", "/api/v1/assignments/web");
  t.equal(a.status, 200);
  t.same(
    { selector: a.body.selector, modules: a.body.modules, description: a.body.description },
    { selector: "role=web", modules: ["web-files"], description: "the web tier" },
    "created as typed",
  );
  guard.check(t, "assignment created");
});

t.test("edit: Save changes the selector", async (t) => {
  await page.goto("/assignments");
  await page.getByRole("link", { name: "Edit web" }).click();
  await page.waitForURL((u) => u.pathname === "/assignments/web/edit");
  await heading(page, "Edit web");
  const selector = page.getByLabel("Selector", { exact: true });
  t.equal(await selector.inputValue(), "role=web", "the current selector");
  t.ok(await page.getByRole("checkbox", { name: "web-files" }).isChecked(), "its module is ticked");
  await settle(t, page, "assignment-edit");
  await selector.fill("role in (web,db)");
  await eventually(
    async () =>
      (await page
        .getByTestId("selector-matches")
        .textContent()
        .catch(() => "")) === "matches 1 agent",
    10_000,
  );
  await page.getByRole("button", { name: "Save" }).click();
  await page.waitForURL((u) => u.pathname === "/assignments/web");
  const a = await stack.api("GET", "/api/v1/assignments/web");
  t.equal(a.body.selector, "role in (web,db)", "saved");
  guard.check(t, "assignment edited");
});

t.test("an operator sees the module and assignment pages", async (t) => {
  const key = ed25519();
  await addOperator(stack, "h2-op", "operator", key);
  const op = await stack.newPage();
  await signInWithLink(op.page, stack, key);
  for (const [path, h1] of [
    ["/modules", "Modules"],
    ["/modules/web-files", "web-files"],
    ["/modules/new", "Upload module"],
    ["/assignments", "Assignments"],
    ["/assignments/web/edit", "Edit web"],
  ] as const) {
    await op.page.goto(path);
    await heading(op.page, h1);
  }
  await op.page.goto("/modules/web-files");
  await heading(op.page, "web-files");
  await op.page.getByRole("button", { name: "Delete" }).waitFor();
  t.pass("operators may delete modules (the API allows it)");
  await op.page.goto("/assignments");
  await op.page.getByRole("link", { name: "web", exact: true }).waitFor();
  t.ok(await op.page.getByRole("link", { name: "New assignment" }).isVisible());
  op.guard.check(t, "operator pages");
  await op.close();
});

t.test("delete: a module in use is refused with the API's reason; the assignment, then the module", async (t) => {
  await page.goto("/modules/web-files");
  await heading(page, "web-files");
  await page.getByRole("button", { name: "Delete" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
  const refusal = page.getByRole("alert").filter({ hasText: "module_in_use" });
  await refusal.waitFor();
  t.pass("409 module_in_use shown");
  t.equal((await stack.api("GET", "/api/v1/modules/web-files")).status, 200, "still there");

  await page.goto("/assignments");
  await page.getByRole("button", { name: "Delete web" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
  await page.getByText("No assignments yet.").waitFor();
  t.equal((await stack.api("GET", "/api/v1/assignments/web")).status, 404, "the assignment is gone");

  await page.goto("/modules/web-files");
  await heading(page, "web-files");
  await page.getByRole("button", { name: "Delete" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
  await page.waitForURL((u) => u.pathname === "/modules");
  t.same(await moduleNames(), [], "the module is gone");
  guard.check(t, "deletes");
});
