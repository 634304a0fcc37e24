import t from "tap";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { ed25519, eventually, waitMs } from "@orch/kit/testing";
import { consoleStack, expectNoA11yViolations, shoot, signInWithLink } from "../lib/browser.js";

// An agent's own values edited in the console's YAML editor (the highest layer: the merged view
// then names "this agent's own values" and its line as the origin), invalid YAML refused at its
// line with nothing stored, a scoped operator saving for an agent in reach and shown the refusal
// for one that left its scope; and a module uploaded as a bundle (a tar.gz made with tar) showing
// its files. Real services, NATS, Postgres, orch-agent and Chromium.
const stack = await consoleStack(t, { agents: 1 });
const [nodeId] = stack.nodeIds as [string];
const must = async (method: string, path: string, body: unknown, status: number, as?: string) => {
  const r = await stack.api(method, path, body, as);
  if (r.status !== status) throw new Error(`${method} ${path}: expected ${status}, got ${r.status} ${r.text}`);
  return r.body;
};
await eventually(async () => (await stack.api("GET", `/api/v1/agents/${nodeId}`)).body?.connected === true, 30_000);
await must("POST", `/api/v1/agents/${nodeId}`, { status: "approved", name: "web-1" }, 200);
await must("PUT", `/api/v1/agents/${nodeId}/tags`, { tags: { env: "prod" } }, 200);
await must("PUT", "/api/v1/values/defaults", { content: "port: 8080\nlog: info\n" }, 200);
const ownContent = async () => (await must("GET", `/api/v1/agents/${nodeId}/values`, undefined, 200)).own_content;

const tmp = mkdtempSync(join(tmpdir(), "orch-e2e-console-values-bundles-"));
t.teardown(() => rmSync(tmp, { recursive: true, force: true }));

const { page, context, guard } = await stack.newPage();
await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: stack.url });
await signInWithLink(page, stack, stack.system.admin);

const EDITOR = "This agent's values (YAML)";
const h1 = (p: Page, name: string) =>
  p.getByRole("heading", { level: 1, name, exact: true }).waitFor({ timeout: waitMs(15_000) });
const form = (p: Page) => p.getByRole("form", { name: "Edit this agent's values" });
const editorText = (p: Page) =>
  form(p)
    .locator(".cm-content .cm-line")
    .allTextContents()
    .then((l) => l.join("\n"));
const valuesSection = (p: Page) => p.getByRole("region", { name: "Values", exact: true });
const valueRow = (p: Page, key: string) =>
  p
    .getByRole("region", { name: "Values and their origins" })
    .getByRole("row")
    .filter({ has: p.getByRole("cell", { name: key, exact: true }) });

/** Opens the editor and replaces its text the way a person would: select all, then type. */
async function editOwnValues(p: Page, text: string) {
  await p.getByRole("button", { name: "Edit this agent's values" }).click();
  const editor = form(p).getByRole("textbox", { name: EDITOR });
  await editor.click();
  await p.keyboard.press("ControlOrMeta+a");
  await p.keyboard.insertText(text);
}

async function save(p: Page): Promise<number> {
  const put = p.waitForResponse(
    (r) => r.url().endsWith(`/api/v1/agents/${nodeId}/values`) && r.request().method() === "PUT",
  );
  await form(p).getByRole("button", { name: "Save", exact: true }).click();
  return (await put).status();
}

const OWN = "# pinned for web-1\nport: 9090\nfeature:\n  beta: true\n";

t.test("an agent's own values are edited in the YAML editor; the merged view names them", async (t) => {
  await page.goto(`/agents/${nodeId}`);
  await h1(page, "web-1");
  await valueRow(page, "port").waitFor();
  t.match(await valueRow(page, "port").textContent(), /8080.*defaults, line 1/, "before: port from defaults");

  await editOwnValues(page, OWN);
  t.equal(await editorText(page), OWN, "the editor holds what was typed");
  await shoot(page, "agent-own-values-editing", { scrollTo: valuesSection(page) });
  t.equal(await save(page), 200);
  await page.getByText("Saved this agent's values.").waitFor();
  t.equal(await form(page).count(), 0, "the editor closes");
  t.equal(
    await page.evaluate("document.activeElement?.textContent"),
    "Edit this agent's values",
    "focus is back on the button that opened it",
  );
  t.match(
    await valueRow(page, "port").textContent(),
    /9090.*this agent's own values, line 2.*defaults, line 1/,
    "port now from this agent's own values (line 2), over defaults'",
  );
  t.match(await valueRow(page, "feature.beta").textContent(), /true.*this agent's own values, line 4/);
  t.match(await valueRow(page, "log").textContent(), /info.*defaults, line 2/, "a key it does not set stays");
  t.match(await valuesSection(page).textContent(), /Layers, lowest first: defaults, then this agent's own values\./);
  t.equal(await ownContent(), OWN, "stored as typed, comment and all");
  const merged = await must("GET", `/api/v1/agents/${nodeId}/values`, undefined, 200);
  t.same(merged.values, { port: 9090, log: "info", feature: { beta: true } });
  t.equal(merged.origins.find((o: { path: string }) => o.path === "port").origin.layer, "agent");

  await page.waitForLoadState("networkidle").catch(() => {});
  await expectNoA11yViolations(t, page, "agent with own values");
  await shoot(page, "agent-own-values", { scrollTo: valuesSection(page) });
  guard.check(t, "own values saved");
});

t.test("invalid YAML is refused at its line, beside the editor; nothing is stored", async (t) => {
  await page.getByRole("button", { name: "Edit this agent's values" }).click();
  await form(page).getByRole("textbox", { name: EDITOR }).waitFor();
  t.equal(await editorText(page), OWN, "prefilled with the agent's own values as stored");

  const bad = "# pinned for web-1\nport: [9090\nfeature: {beta: true\n";
  const editor = form(page).getByRole("textbox", { name: EDITOR });
  await editor.click();
  await page.keyboard.press("ControlOrMeta+a");
  await page.keyboard.insertText(bad);
  t.equal(await save(page), 400);
  const alert = form(page).getByRole("alert");
  await alert.waitFor();
  const line = Number(await alert.getAttribute("data-line"));
  t.ok(line >= 2 && line <= 4, `names a line of the text (${line})`);
  const text = (await alert.textContent()) ?? "";
  t.match(text, /invalid YAML/i, "says why, as the API phrased it");
  t.match(text, new RegExp(`line ${line}\\b`, "i"), "and the line");
  t.notMatch(text, new RegExp(`line ${line}\\b.*line ${line}\\b`, "i"), "once");
  t.match(text, /invalid_values/, "with the API's code");
  // CodeMirror's own lint mark, on the line the API named.
  await form(page)
    .locator(".cm-content .cm-line")
    .nth(line - 1)
    .locator(".cm-lintRange-error")
    .first()
    .waitFor();
  t.equal(
    await editor.getAttribute("aria-describedby"),
    await alert.evaluate((e) => (e as unknown as { parentElement: { id: string } }).parentElement.id),
    "the editor is described by the message",
  );
  t.equal(await editorText(page), bad, "what was typed stays");
  t.equal(await ownContent(), OWN, "nothing stored");
  t.equal(
    await form(page).getByRole("button", { name: "Save", exact: true }).isEnabled(),
    true,
    "save is enabled again once the refusal is in",
  );
  await page.waitForLoadState("networkidle").catch(() => {});
  await expectNoA11yViolations(t, page, "agent values refused");
  await shoot(page, "agent-own-values-refused", { scrollTo: valuesSection(page) });

  await form(page).getByRole("button", { name: "Cancel", exact: true }).click();
  t.equal(await form(page).count(), 0, "cancel closes the editor");
  t.match(await valueRow(page, "port").textContent(), /9090.*this agent's own values, line 2/, "unchanged");
  guard.check(t, "refused values");
});

t.test("a scoped operator saves for an agent in reach, and sees the refusal once it is not", async (t) => {
  const key = ed25519();
  const scoped = await must(
    "POST",
    "/api/v1/operators",
    { name: "wendy", public_key: key.publicKeyHex, role: "operator", agent_selector: "env=prod" },
    201,
  );
  const wendy = await stack.newPage();
  t.teardown(() => wendy.close());
  await signInWithLink(wendy.page, stack, key);
  await wendy.page.goto(`/agents/${nodeId}`);
  await h1(wendy.page, "web-1");
  await editOwnValues(wendy.page, "port: 9191\n");
  t.equal(await save(wendy.page), 200, "a scoped operator may set the own values of an agent in its scope");
  await wendy.page.getByText("Saved this agent's values.").waitFor();
  t.match(await valueRow(wendy.page, "port").textContent(), /9191.*this agent's own values, line 1/);

  // The agent leaves wendy's scope while her editor is open: the save is answered as if the agent
  // did not exist (docs/access.md), and the page says so instead of failing.
  await editOwnValues(wendy.page, "port: 9292\n");
  await must("PATCH", `/api/v1/operators/${scoped.id}`, { agent_selector: "env=stage" }, 200);
  t.equal(await save(wendy.page), 404);
  const alert = form(wendy.page).getByRole("alert");
  await alert.waitFor();
  t.match(await alert.textContent(), /agent_not_found/, "the API's code is shown");
  t.equal(await alert.getAttribute("data-line"), null, "not pinned on a line");
  t.equal(await ownContent(), "port: 9191\n", "nothing stored");
  await shoot(wendy.page, "agent-own-values-out-of-scope", { scrollTo: valuesSection(wendy.page) });
  wendy.guard.check(t, "scoped operator");
});

t.test("a module uploaded as a bundle lists its files; a YAML module lists none", async (t) => {
  const root = join(tmp, "site");
  mkdirSync(join(root, "files", "conf"), { recursive: true });
  const yaml = [
    "name: site",
    "description: a bundle with files",
    "resources:",
    "  - id: x",
    "    type: file",
    `    path: ${tmp}/out/x`,
    "    source: files/x",
    "  - id: conf",
    "    type: file",
    `    path: ${tmp}/out/app.conf`,
    "    source: files/conf/app.conf",
    "",
  ].join("\n");
  const x = Buffer.alloc(3 * 1024 + 512, 0x78);
  const conf = Buffer.from("listen 8080\n");
  writeFileSync(join(root, "module.yaml"), yaml);
  writeFileSync(join(root, "files", "x"), x);
  writeFileSync(join(root, "files", "conf", "app.conf"), conf);
  const archive = join(tmp, "site.tar.gz");
  execFileSync("tar", ["czf", archive, "-C", root, "module.yaml", "files"]);
  const res = await fetch(new URL("/api/v1/modules/site/bundle", stack.url), {
    method: "PUT",
    headers: { authorization: `Bearer ${stack.token}`, "content-type": "application/octet-stream" },
    body: readFileSync(archive),
  });
  t.equal(res.status, 201, "the bundle is stored");
  const digest = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
  await must("POST", "/api/v1/modules", { name: "plain", content: "name: plain\nresources: []\n" }, 201);

  await page.goto("/modules/site");
  await h1(page, "site");
  const files = page.getByRole("region", { name: "Bundle files" });
  await files.waitFor();
  const rows = files.getByRole("row").filter({ has: page.getByRole("cell") });
  t.same(
    (await rows.allTextContents()).map((r) => r.replace(/Copy.*$/, "").trim()),
    [`files/conf/app.conf12 Bsha256:${digest(conf).slice(7, 19)}…`, `files/x3.5 KiBsha256:${digest(x).slice(7, 19)}…`],
    "path, size in human units, digest shortened",
  );
  const xRow = rows.filter({ hasText: "files/x" });
  t.equal(
    await xRow.getByTitle(digest(x), { exact: true }).textContent(),
    `sha256:${digest(x).slice(7, 19)}…`,
    "the full digest is the shortened one's tooltip",
  );
  t.equal(await xRow.getByRole("cell").nth(1).getAttribute("title"), `${x.length} bytes`);
  await xRow.getByRole("button", { name: "Copy the digest of files/x" }).click();
  await xRow.getByText("Copied").waitFor();
  t.equal(await page.evaluate("navigator.clipboard.readText()"), digest(x), "Copy puts the full digest there");
  t.match(
    await page.getByRole("region", { name: "Files", exact: true }).textContent(),
    /2 files, 3\.5 KiB, from the bundle/,
  );
  await page.waitForLoadState("networkidle").catch(() => {});
  await expectNoA11yViolations(t, page, "bundle module");
  await shoot(page, "module-bundle-files", { scrollTo: page.getByRole("region", { name: "Files", exact: true }) });

  await page.goto("/modules/plain");
  await h1(page, "plain");
  await page.getByRole("region", { name: "YAML", exact: true }).waitFor();
  await page.getByRole("region", { name: "Version history", exact: true }).waitFor();
  t.equal(await page.getByRole("region", { name: "Files", exact: true }).count(), 0, "no Files section");
  guard.check(t, "bundle files");
});
