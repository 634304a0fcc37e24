import t from "tap";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ed25519, eventually, waitMs } from "@orch/kit/testing";
import { cli } from "../../../cli/test/helpers/cli.js";
import { consoleStack } from "../lib/browser.js";

// The console's acceptance walk with real processes and a real browser: three real orch-agents,
// sign-in with the link `orchctl console` prints, approving them on Pending (an invalid name first),
// Fleet's counts, a tag on one agent, the audit page's Live feed, and the inbox badge.
const stack = await consoleStack(t, { agents: 3 });
const dir = mkdtempSync(join(tmpdir(), "orch-e2e-console-cli-"));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const adminPem = join(dir, "admin.pem");
writeFileSync(adminPem, stack.system.admin.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
const env = { ORCHCTL_HOME: join(dir, "home"), HOME: dir };
const login = await cli(["--server", stack.url, "login", "--key", adminPem], env);
if (login.code !== 0) throw new Error(`orchctl login: ${login.stderr}`);

const { context, page, guard } = await stack.newPage();
const [a0, a1, a2] = stack.nodeIds as [string, string, string];
const agent = async (id: string) => (await stack.api("GET", `/api/v1/agents/${id}`)).body;
const textOf = async (testId: string, p = page) => (await p.getByTestId(testId).textContent())?.trim() ?? "";
const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true });
/** The row (table row or list item) of the pending agent `id`, found by its name input. */
const pendingRow = (id: string) =>
  page
    .getByRole("row")
    .or(page.getByRole("listitem"))
    .filter({ has: page.getByLabel(`Name for ${id}`, { exact: true }) })
    .last();

for (const id of stack.nodeIds) await eventually(async () => (await agent(id))?.connected === true, 30_000);

t.test("orchctl console prints a one-time link that signs this browser in", async (t) => {
  const r = await cli(["console", "--no-open"], env);
  t.equal(r.code, 0, r.stderr);
  const url = /(https?:\/\/\S+\/login#code=\S+)/.exec(`${r.stdout}\n${r.stderr}`)?.[1];
  t.ok(url, `a login link in: ${r.stdout}`);
  t.match(url, new RegExp(`^${stack.url}/login#code=`), "on the public URL (http://localhost:PORT)");
  await page.goto(url!);
  await page.waitForURL((u) => u.pathname === "/", { timeout: waitMs(15_000) });
  await page.getByRole("heading", { level: 1, name: "Fleet" }).waitFor();
  t.notOk(new URL(page.url()).hash.includes("code="), "the code left the address bar");
  t.ok(
    (await context.cookies()).some((c) => c.name === "orch_session" && c.httpOnly && c.sameSite === "Strict"),
    "an HttpOnly SameSite=Strict session cookie",
  );
  guard.check(t, "sign-in");
});

// A second tab, Audit with Live on, opened before anything happens: what it shows later came live.
const audit = await context.newPage();
t.test("audit with Live on is open in a second tab", async (t) => {
  await audit.goto("/audit");
  await audit.getByRole("heading", { level: 1, name: "Audit" }).waitFor();
  await audit.getByLabel("Live", { exact: true }).check();
  t.ok(await audit.getByLabel("Live", { exact: true }).isChecked());
  t.match(new URL(audit.url()).search, /live/i, "Live is in the query string");
  await audit.evaluate("window.__sameDocument = true");
});

t.test("Pending: an invalid name is refused next to its field and changes nothing", async (t) => {
  await nav("Pending").click();
  await page.getByRole("heading", { level: 1, name: "Pending approvals" }).waitFor();
  for (const id of stack.nodeIds) await page.getByLabel(`Name for ${id}`, { exact: true }).waitFor();
  const name = page.getByLabel(`Name for ${a0}`, { exact: true });
  await name.fill("Not A Valid Name!");
  await pendingRow(a0).getByRole("button", { name: "Approve", exact: true }).click();
  const alert = pendingRow(a0).getByRole("alert").or(page.getByRole("alert")).first();
  await alert.waitFor({ timeout: waitMs(10_000) });
  t.ok(((await alert.textContent()) ?? "").trim().length > 0, `a field error: ${await alert.textContent()}`);
  t.equal(await name.inputValue(), "Not A Valid Name!", "the typed value is kept");
  t.match(await agent(a0), { status: "pending", name: null }, "nothing changed");
  guard.check(t, "pending (invalid name)");
});

t.test("Pending: approve one by its row and two together with their names", async (t) => {
  await page.getByLabel(`Name for ${a0}`, { exact: true }).fill("web-1");
  await pendingRow(a0).getByRole("button", { name: "Approve", exact: true }).click();
  await eventually(async () => (await agent(a0)).status === "approved", 10_000);
  await page.getByLabel(`Name for ${a1}`, { exact: true }).fill("web-2");
  await page.getByLabel(`Name for ${a2}`, { exact: true }).fill("db-1");
  await page.getByLabel(`Select ${a1}`, { exact: true }).check();
  await page.getByLabel(`Select ${a2}`, { exact: true }).check();
  await page.getByRole("button", { name: "Approve selected", exact: true }).click();
  for (const [id, n] of [
    [a0, "web-1"],
    [a1, "web-2"],
    [a2, "db-1"],
  ] as const)
    t.match(await eventually(async () => ((await agent(id)).status === "approved" ? agent(id) : undefined)), {
      status: "approved",
      name: n,
    });
  await eventually(async () => (await page.getByLabel(`Name for ${a2}`, { exact: true }).count()) === 0, 10_000);
  t.pass("the approved agents left the pending list");
  guard.check(t, "pending");
});

t.test("Fleet counts them connected; one agent's page takes a tag", async (t) => {
  await nav("Fleet").click();
  await page.getByRole("heading", { level: 1, name: "Fleet" }).waitFor();
  await eventually(
    async () => (await textOf("count-connected")) === "3" && (await textOf("count-pending")) === "0",
    15_000,
  );
  t.equal(await textOf("count-connected"), "3");
  t.equal(await textOf("count-disconnected"), "0");
  t.equal(await textOf("count-pending"), "0");
  await page.getByRole("link", { name: "web-1", exact: true }).click();
  await page.waitForURL((u) => u.pathname === `/agents/${a0}`);
  await page.getByRole("heading", { level: 1, name: "web-1" }).waitFor();
  await page.getByLabel("Tag key", { exact: true }).fill("env");
  await page.getByLabel("Tag value", { exact: true }).fill("prod");
  await page.getByRole("button", { name: "Add tag", exact: true }).click();
  await page.getByRole("button", { name: "Remove tag env", exact: true }).waitFor({ timeout: waitMs(10_000) });
  t.same((await agent(a0)).tags, { env: "prod" }, "stored");
  guard.check(t, "fleet and agent");
});

t.test("the Live audit tab showed the approvals and the tag as they happened", async (t) => {
  for (const type of ["agent.approved", "agent.tags.updated"])
    await audit
      .getByText(type, { exact: false })
      .first()
      .waitFor({ timeout: waitMs(15_000) });
  t.equal(await audit.evaluate("window.__sameDocument === true"), true, "no reload: the events came live");
  t.ok((await audit.getByText("agent.approved").count()) >= 3, "one per approved agent");
  const show = audit.getByRole("button", { name: "Show JSON" }).first();
  await show.click();
  t.match(await audit.locator("pre").first().textContent(), /"event_type"/, "the event's JSON inline");
  guard.check(t, "audit live");
});

t.test("the inbox badge counts a new notification", async (t) => {
  const badge = page.getByTestId("inbox-badge");
  await badge.waitFor();
  const before = Number(
    await eventually(async () => /^\d+$/.test(await textOf("inbox-badge")) && textOf("inbox-badge")),
  );
  // A real warning from the real auth service: an operator's first failed login notifies the admins.
  const key = ed25519();
  t.equal(
    (await stack.api("POST", "/api/v1/operators", { name: "failing-1", public_key: key.publicKeyHex })).status,
    201,
  );
  const ch = await stack.api("POST", "/api/v1/auth/challenge", { public_key: key.publicKeyHex });
  const v = await stack.api("POST", "/api/v1/auth/verify", {
    public_key: key.publicKeyHex,
    nonce: ch.body.nonce,
    signature: "00".repeat(64),
  });
  t.equal(v.status, 401);
  // Refreshed every 15 s and on focus: give it two rounds.
  const after = await eventually(
    async () => {
      const n = Number(await textOf("inbox-badge"));
      return n > before ? n : undefined;
    },
    35_000,
    250,
  );
  t.ok(after > before, `badge ${before} → ${after}`);
  await nav("Inbox").click();
  await page.getByRole("heading", { level: 1, name: "Inbox" }).waitFor();
  await page.getByRole("button", { name: "Mark all read", exact: true }).click();
  await eventually(async () => (await textOf("inbox-badge")) === "0", 10_000);
  t.pass("mark all read → 0");
  guard.check(t, "inbox");
});
