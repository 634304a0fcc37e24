import t from "tap";
import { eventually, waitMs } from "@orch/kit/testing";
import { consoleStack, expectNoA11yViolations, shoot, signInWithLink } from "../lib/browser.js";

// Values in a real browser against the real stack: the sets listed in the order they merge, a set
// created and edited through the form (its YAML kept, so an agent's page can name the line a value
// came from), a refused set showing the API's reason and storing nothing, and an agent's page
// explaining each value's origin and what it overrode.
const stack = await consoleStack(t, { agents: 1 });
const [nodeId] = stack.nodeIds as [string];
const must = async (method: string, path: string, body: unknown, status: number) => {
  const r = await stack.api(method, path, body);
  if (r.status !== status) throw new Error(`${method} ${path}: expected ${status}, got ${r.status} ${r.text}`);
  return r.body;
};
await eventually(async () => (await stack.api("GET", `/api/v1/agents/${nodeId}`)).body?.connected === true, 30_000);
await must("POST", `/api/v1/agents/${nodeId}`, { status: "approved", name: "web-1" }, 200);
await must("PUT", `/api/v1/agents/${nodeId}/tags`, { tags: { env: "prod" } }, 200);
await must("PUT", "/api/v1/values/defaults", { content: "port: 8080\nupstreams:\n  - 10.0.0.1\n  - 10.0.0.2\n" }, 200);

const { page, guard } = await stack.newPage();
await signInWithLink(page, stack, stack.system.admin);
const h1 = (name: string) =>
  page.getByRole("heading", { level: 1, name, exact: true }).waitFor({ timeout: waitMs(15_000) });
const rowNames = async () =>
  page.getByRole("region", { name: "Value sets", exact: true }).locator("tbody tr td:first-child a").allTextContents();

t.test("the values page lists the sets lowest layer first; a set is created through the form", async (t) => {
  await page.goto("/values");
  await h1("Values");
  await page.getByRole("link", { name: "defaults", exact: true }).waitFor();
  t.match(
    await page.getByRole("region", { name: "Value sets", exact: true }).textContent(),
    /every agent \(lowest layer\)/,
  );

  await page.getByRole("button", { name: "New value set" }).click();
  const form = page.getByRole("form", { name: "New value set" });
  await form.waitFor();
  t.match(new URL(page.url()).search, /new=1/, "the open form is in the URL");
  await form.getByLabel("Name", { exact: true }).fill("prod");
  await form.getByLabel("Selector", { exact: true }).fill("env=prod");
  await form.getByLabel("Priority", { exact: true }).fill("10");
  await form.getByLabel("Values (YAML)", { exact: true }).fill("# production\nport: 443\n");
  const saved = page.waitForResponse((r) => r.url().endsWith("/api/v1/values/prod") && r.request().method() === "PUT");
  await form.getByRole("button", { name: "Create", exact: true }).click();
  t.equal((await saved).status(), 200);
  await page.getByText("Saved value set prod.").waitFor();
  await page.getByRole("link", { name: "prod", exact: true }).waitFor();
  t.same(await rowNames(), ["defaults", "prod"], "in the order the layers merge");
  const stored = await must("GET", "/api/v1/values/prod", undefined, 200);
  t.equal(stored.selector, "env=prod");
  t.equal(stored.priority, 10);
  t.equal(stored.content, "# production\nport: 443\n", "the YAML as typed, comments and all");
  await page.waitForLoadState("networkidle").catch(() => {});
  await expectNoA11yViolations(t, page, "values");
  t.equal((await shoot(page, "values")).length, 4);
  guard.check(t, "values page");
});

t.test("a refused set shows the API's reason, next to the field, and stores nothing", async (t) => {
  await page.getByRole("button", { name: "New value set" }).click();
  const form = page.getByRole("form", { name: "New value set" });
  await form.getByLabel("Name", { exact: true }).fill("leaky");
  await form.getByLabel("Selector", { exact: true }).fill("env=prod");
  await form.getByLabel("Values (YAML)", { exact: true }).fill('password: "{{ secrets.db }}"\n');
  await form.getByRole("button", { name: "Create", exact: true }).click();
  const alert = form.getByRole("alert").first();
  await alert.waitFor();
  t.match(await alert.textContent(), /secret/i, "says a secret cannot be copied into values");
  t.equal((await stack.api("GET", "/api/v1/values/leaky")).status, 404, "nothing stored");
  await form.getByRole("button", { name: "Cancel" }).click();
  guard.check(t, "refused set");
});

t.test("a set's page shows its lines; Edit saves new YAML", async (t) => {
  await page.getByRole("link", { name: "prod", exact: true }).click();
  await h1("prod");
  const lines = page.getByRole("list", { name: "prod values, by line" });
  t.same(await lines.getByRole("listitem").allTextContents(), ["# production", "port: 443"]);
  await page.getByRole("button", { name: "Edit", exact: true }).click();
  const form = page.getByRole("form", { name: "Edit value set" });
  t.equal(await form.getByLabel("Name", { exact: true }).getAttribute("readonly"), "", "the name is fixed");
  await form.getByLabel("Values (YAML)", { exact: true }).fill("# production\nport: 443\ntls: true\n");
  await form.getByRole("button", { name: "Save", exact: true }).click();
  await page.getByText("Saved value set prod.").waitFor();
  await lines.getByText("tls: true").waitFor();
  t.same((await must("GET", "/api/v1/values/prod", undefined, 200)).values, { port: 443, tls: true });
  await expectNoA11yViolations(t, page, "value set");
  await shoot(page, "value-set");
  guard.check(t, "value set page");
});

t.test("an agent's page explains each value: the set and line it came from, and what it overrode", async (t) => {
  await page.goto(`/agents/${nodeId}`);
  await h1("web-1");
  const table = page.getByRole("region", { name: "Values and their origins" });
  await table.waitFor();
  const row = (key: string) =>
    table.getByRole("row").filter({ has: page.getByRole("cell", { name: key, exact: true }) });
  t.match(await row("port").textContent(), /443.*prod, line 2.*defaults, line 1/, "prod's port over defaults'");
  t.match(await row("upstreams").textContent(), /\["10\.0\.0\.1","10\.0\.0\.2"\].*defaults, line 2/);
  t.match(await row("tls").textContent(), /true.*prod, line 3/);
  await row("port").getByRole("link", { name: "prod, line 2" }).click();
  await h1("prod");
  t.match(page.url(), /\/values\/prod#L2$/, "the origin links to its line");
  await page.goBack();
  await table.waitFor();
  await shoot(page, "agent-values", { scrollTo: table });
  guard.check(t, "agent values");
});

t.test("delete asks first, then the set is gone", async (t) => {
  await page.goto("/values/prod");
  await h1("prod");
  await page.getByRole("button", { name: "Delete", exact: true }).click();
  const dialog = page.getByRole("dialog", { name: "Delete value set prod?" });
  await dialog.getByRole("button", { name: "Delete", exact: true }).click();
  await h1("Values");
  t.equal((await stack.api("GET", "/api/v1/values/prod")).status, 404);
  t.same(await rowNames(), ["defaults"]);
  guard.check(t, "delete");
});
