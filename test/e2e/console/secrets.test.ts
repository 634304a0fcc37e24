import t from "tap";
import { randomUUID } from "node:crypto";
import type { Page } from "playwright-core";
import { eventually } from "@orch/kit/testing";
import { consoleStack, expectNoA11yViolations, shoot, signInWithLink } from "../lib/browser.js";

// Secrets in the browser: a value typed into the form travels in the one POST that creates the secret
// and nowhere else — not in a later response, the DOM, web storage or the console. Every request and
// (text/JSON) response body of the page is recorded; finding the value in the POST is the positive
// control that the recorder sees what it should.
const stack = await consoleStack(t, { agents: 1 });
const [nodeId] = stack.nodeIds as [string];
await eventually(async () => (await stack.api("GET", `/api/v1/agents/${nodeId}`)).body?.connected === true, 30_000);
const approved = await stack.api("POST", `/api/v1/agents/${nodeId}`, { status: "approved", name: "db-1" });
if (approved.status !== 200) throw new Error(`approving ${nodeId}: ${approved.text}`);

const { page, guard } = await stack.newPage();

interface Seen {
  where: string;
  text: string;
}
const requests: Seen[] = [];
const responses: Seen[] = [];
const snapshots: Seen[] = [];
const consoleLines: string[] = [];
const pendingBodies: Promise<void>[] = [];
page.on("request", (r) => {
  requests.push({ where: `${r.method()} ${r.url()}`, text: `${r.url()}\n${r.postData() ?? ""}` });
});
page.on("response", (r) => {
  const type = r.headers()["content-type"] ?? "";
  if (!/json|text\//.test(type)) return;
  pendingBodies.push(
    r
      .text()
      .then((text) => void responses.push({ where: `${r.request().method()} ${r.url()} → ${r.status()}`, text }))
      .catch(() => {}),
  );
});
page.on("console", (m) => void consoleLines.push(m.text()));
const snapshot = async (step: string, p: Page = page) => {
  snapshots.push({ where: step, text: await p.content() });
  const storage = (await p.evaluate(
    "JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage } })",
  )) as string;
  snapshots.push({ where: `${step} (web storage)`, text: storage });
};

const NAME = "db-password";
const VALUE = `v4lue-${randomUUID()}`;
const row = () => page.getByRole("row").filter({ has: page.getByRole("cell", { name: NAME, exact: true }) });

t.test("the secrets page: empty list, axe, screenshots", async (t) => {
  await signInWithLink(page, stack, stack.system.admin);
  await page.goto("/secrets");
  await page.getByRole("heading", { level: 1, name: "Secrets" }).waitFor();
  await page.getByText("No secrets yet.").waitFor();
  await snapshot("empty list");
  await page.getByRole("button", { name: "New secret" }).click();
  await page.getByRole("form", { name: "New secret" }).waitFor();
  t.match(new URL(page.url()).search, /new=1/, "the open form is in the URL");
  const value = page.getByLabel("Value", { exact: true });
  t.equal(await value.getAttribute("type"), "password");
  t.equal(await value.getAttribute("autocomplete"), "off");
  await page.waitForLoadState("networkidle").catch(() => {});
  await expectNoA11yViolations(t, page, "secrets (new secret form)");
  guard.check(t, "secrets page");
});

t.test("create a secret restricted to a picked agent and a tag; the value is never kept", async (t) => {
  await page.getByLabel("Name", { exact: true }).fill(NAME);
  await page.getByLabel("Value", { exact: true }).fill(VALUE);
  await page.getByLabel("Description", { exact: true }).fill("primary database");
  const agents = page.getByRole("group", { name: "Agents" });
  await agents.getByLabel("db-1", { exact: true }).check();
  await page.getByLabel("Tags", { exact: true }).fill("env=prod");
  const d = new Date(Date.now() + 7 * 24 * 3600_000);
  const pad = (n: number) => String(n).padStart(2, "0");
  const local = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
  await page.getByLabel("Expires", { exact: true }).fill(local);
  const created = page.waitForResponse((r) => r.url().endsWith("/api/v1/secrets") && r.request().method() === "POST");
  await page.getByRole("button", { name: "Create", exact: true }).click();
  t.equal((await created).status(), 201);
  await row().waitFor();
  await page.getByText(`Created secret ${NAME}.`).waitFor();
  t.notMatch(new URL(page.url()).search, /new=1/, "the form closed");
  await snapshot("after create");

  const restriction = row().getByRole("list", { name: "Restriction" });
  t.match(await restriction.textContent(), /db-1/, "the picked agent, by name");
  t.equal(await restriction.getByText("db-1").getAttribute("title"), nodeId, "its node id as tooltip");
  t.match(await restriction.textContent(), /env=prod/);
  const stored = await stack.api("GET", `/api/v1/secrets/${NAME}`);
  t.same(stored.body.restriction, { node_ids: [nodeId], tags: { env: "prod" } }, "the API has the restriction");
  t.ok(stored.body.expires_at, "and the expiry");

  // The form again: the value field is empty.
  await page.getByRole("button", { name: "New secret" }).click();
  t.equal(await page.getByLabel("Value", { exact: true }).inputValue(), "", "a new form starts empty");
  await snapshot("form reopened");
  await page.getByRole("button", { name: "Cancel" }).click();

  await page.reload();
  await row().waitFor();
  await snapshot("after reload");
  await page.waitForLoadState("networkidle").catch(() => {});
  await expectNoA11yViolations(t, page, "secrets");
  t.equal((await shoot(page, "secrets")).length, 4);
  guard.check(t, "create");
});

t.test("a refused create shows the API's detail and keeps no value either", async (t) => {
  await page.getByRole("button", { name: "New secret" }).click();
  await page.getByLabel("Name", { exact: true }).fill(NAME);
  await page.getByLabel("Value", { exact: true }).fill(`${VALUE}-again`);
  await page.getByRole("button", { name: "Create", exact: true }).click();
  const alert = page.getByRole("form", { name: "New secret" }).getByRole("alert");
  await alert.first().waitFor();
  t.match(await alert.first().textContent(), /secret_exists/, "the API's code");
  t.equal(await page.getByLabel("Value", { exact: true }).inputValue(), "", "the field was emptied on submit");
  await snapshot("refused create");
  await page.getByRole("button", { name: "Cancel" }).click();
  guard.check(t, "refused create");
});

t.test("delete asks first, then removes the row", async (t) => {
  await row().getByRole("button", { name: "Delete" }).click();
  const dialog = page.getByRole("dialog", { name: `Delete secret ${NAME}?` });
  await dialog.waitFor();
  await dialog.getByRole("button", { name: "Delete" }).click();
  await row().waitFor({ state: "detached" });
  await page.getByText(`Deleted secret ${NAME}.`).waitFor();
  t.equal((await stack.api("GET", `/api/v1/secrets/${NAME}`)).status, 404);
  await snapshot("after delete");
  guard.check(t, "delete");
});

t.test("the value appears only in the POST that created it", async (t) => {
  await Promise.all(pendingBodies);
  t.ok(responses.length > 5, `recorded ${responses.length} response bodies`);
  const carrying = requests.filter((r) => r.text.includes(VALUE));
  t.equal(carrying.length, 2, "positive control: the recorder saw the value in the two POSTs that sent it");
  t.ok(
    carrying.every((r) => r.where.startsWith("POST ") && r.where.endsWith("/api/v1/secrets")),
    carrying.map((r) => r.where).join(", "),
  );
  const firstPost = requests.findIndex((r) => r.text.includes(VALUE));
  t.match(requests[firstPost]?.text, `"value":"${VALUE}"`, "in the body, as the value field");
  t.same(
    requests.filter((r) => !r.where.startsWith("POST ") && r.text.includes(VALUE)).map((r) => r.where),
    [],
    "no URL carries it",
  );
  t.same(
    responses.filter((r) => r.text.includes(VALUE)).map((r) => r.where),
    [],
    "no response carries it",
  );
  t.ok(snapshots.length >= 10, `${snapshots.length} DOM and storage snapshots`);
  t.same(
    snapshots.filter((s) => s.text.includes(VALUE)).map((s) => s.where),
    [],
    "no DOM snapshot or web storage holds it",
  );
  t.same(
    consoleLines.filter((l) => l.includes(VALUE)),
    [],
    "nothing logged it",
  );
});
