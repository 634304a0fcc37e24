import t from "tap";
import { randomBytes } from "node:crypto";
import { ed25519, eventually, freePort } from "@orch/kit/testing";
import { startReceiver } from "../../../services/notify/test/harness.js";
import {
  addOperator,
  consoleStack,
  csrfOf,
  expectNoA11yViolations,
  pageFetch,
  shoot,
  signInWithLink,
} from "../lib/browser.js";

// Channels and maintenance windows in the browser against a real HTTP receiver on 127.0.0.1 (allowed
// by notify.allow_private_targets, as in test/e2e/notify.test.ts): create a webhook channel, its
// credential masked after a reload, "Test" showing the receiver's status or the refusal, deliveries;
// an operator sees no admin controls and is refused by the API; a maintenance window's banner on every
// page until "End now".
const rx = await startReceiver();
t.teardown(() => rx.close());
rx.respond = (_n, req) => (req.url === "/fail" ? { status: 500, body: "receiver is down" } : { status: 204 });
const stack = await consoleStack(t, { env: { ORCH_NOTIFY_ALLOW_PRIVATE_TARGETS: "true" } });
const SECRET = `whsec_${randomBytes(32).toString("base64")}`;

const { page, guard } = await stack.newPage();
await signInWithLink(page, stack, stack.system.admin);
let channelId = "";

t.test("create a webhook channel in the browser; its secret stays masked", async (t) => {
  await page.goto("/channels");
  await page.getByRole("heading", { level: 1, name: "Channels" }).waitFor();
  await page.getByText("No channels yet.").waitFor();
  await page.getByRole("button", { name: "New channel" }).click();
  const form = page.getByRole("form", { name: "New channel" });
  await form.getByLabel("Name", { exact: true }).fill("ops-hook");
  await form.getByLabel("Type", { exact: true }).selectOption("webhook");
  await form.getByLabel("URL", { exact: true }).fill(`${rx.url}/hook`);
  await form.getByLabel("Signing secret", { exact: true }).fill(SECRET);
  await form.getByLabel("Minimum severity", { exact: true }).selectOption("info");
  await form.getByLabel("Event types", { exact: true }).fill("channel");
  await page.waitForLoadState("networkidle").catch(() => {});
  await expectNoA11yViolations(t, page, "channels (new channel form)");
  await form.getByRole("button", { name: "Create", exact: true }).click();
  await page.getByText("Created channel").waitFor();
  t.notOk(await page.getByText("shown this once").isVisible(), "a secret we chose is not echoed");
  const list = await stack.api("GET", "/api/v1/channels");
  channelId = list.body.channels.find((c: { name: string }) => c.name === "ops-hook")?.id;
  t.ok(channelId, "the API has it");
  await page.getByRole("cell", { name: "ops-hook" }).waitFor();
  await page.waitForLoadState("networkidle").catch(() => {});
  await expectNoA11yViolations(t, page, "channels");
  t.equal((await shoot(page, "channels")).length, 4);

  await page.getByRole("cell", { name: "ops-hook" }).getByRole("link", { name: "ops-hook" }).click();
  await page.getByRole("heading", { level: 1, name: "ops-hook" }).waitFor();
  t.equal(new URL(page.url()).pathname, `/channels/${channelId}`);
  await page.reload();
  await page.getByRole("heading", { level: 1, name: "ops-hook" }).waitFor();
  const config = page.getByRole("region", { name: "Configuration" });
  await config.getByText("whsec_********").waitFor();
  t.notOk((await page.content()).includes(SECRET), "the secret is nowhere in the page");
  t.equal(await page.getByLabel("Signing secret", { exact: true }).inputValue(), "", "the edit field starts blank");
  guard.check(t, "create channel");
});

t.test("an edit that does not touch the secret keeps it: the receiver still gets valid signatures", async (t) => {
  const form = page.getByRole("form", { name: "Edit channel" });
  await form.getByLabel("Event types", { exact: true }).fill("channel, maintenance");
  const put = page.waitForRequest((r) => r.method() === "PUT" && r.url().endsWith(`/api/v1/channels/${channelId}`));
  await form.getByRole("button", { name: "Save" }).click();
  const body = JSON.parse((await put).postData() ?? "{}");
  t.notOk("secret" in body.config, "no secret sent (neither the mask nor a value)");
  t.same(body.config.event_types, ["channel", "maintenance"]);
  await page.getByText("Saved.").waitFor();
  const stored = await stack.api("GET", `/api/v1/channels/${channelId}`);
  t.equal(stored.body.config.secret, "whsec_********", "still a stored secret");
  guard.check(t, "edit channel");
});

t.test("Test shows the receiver's status; the delivery of the test event is listed", async (t) => {
  const before = rx.got.length;
  await page.getByRole("button", { name: "Test", exact: true }).click();
  const result = page.getByTestId("channel-test-result");
  await result.waitFor();
  t.match(await result.textContent(), /Delivered: the receiver answered 204/);
  const sent = rx.got.slice(before).find((r) => r.url === "/hook");
  t.ok(sent?.headers["webhook-signature"], "signed with the stored secret");
  // channel.tested (info) is itself an event the channel wants: a real delivery follows.
  const deliveries = page.getByRole("region", { name: "Deliveries" });
  const tested = deliveries.getByRole("row").filter({ has: page.getByRole("cell", { name: "channel.tested" }) });
  // Deliveries refresh every 10 s; the worker sends within a poll or two.
  const text = await eventually(async () => {
    const rowText = (await tested.count()) > 0 ? await tested.first().textContent() : "";
    return rowText?.includes("delivered") ? rowText : undefined;
  }, 40_000);
  t.match(text, /204/, "delivered, with the receiver's status");
  await page.getByLabel("Status").selectOption("failed");
  t.match(new URL(page.url()).search, /status=failed/, "the filter is in the URL");
  await deliveries.getByText("No deliveries yet.").waitFor();
  await page.goBack();
  await deliveries.getByRole("cell", { name: "channel.tested" }).first().waitFor();
  await page.waitForLoadState("networkidle").catch(() => {});
  await expectNoA11yViolations(t, page, "channel");
  t.equal((await shoot(page, "channel")).length, 4);
  guard.check(t, "test channel");
});

t.test("Test shows the refusal: a receiver answering 500, and one that is not listening", async (t) => {
  const closed = await freePort();
  for (const [name, url, expect] of [
    ["failing-hook", `${rx.url}/fail`, /Not delivered: the receiver answered 500 — HTTP 500/],
    ["nobody-home", `http://127.0.0.1:${closed}/x`, /Not delivered: no answer — .+/],
  ] as const) {
    const r = await stack.api("POST", "/api/v1/channels", { name, channel_type: "webhook", config: { url } });
    t.equal(r.status, 201);
    await page.goto(`/channels/${r.body.id}`);
    await page.getByRole("heading", { level: 1, name }).waitFor();
    await page.getByRole("button", { name: "Test", exact: true }).click();
    const result = page.getByTestId("channel-test-result");
    await result.waitFor();
    t.match(await result.textContent(), expect, name);
    t.equal(await result.getByRole("alert").count(), 1, "announced as an error");
  }
  guard.check(t, "refusals");
});

const opKey = ed25519();
await addOperator(stack, "viewer", "operator", opKey);
const op = await stack.newPage();
await signInWithLink(op.page, stack, opKey);

t.test("an operator sees channels without admin controls; the API refuses them", async (t) => {
  await op.page.goto("/channels");
  await op.page.getByRole("cell", { name: "ops-hook" }).waitFor();
  t.equal(await op.page.getByRole("button", { name: "New channel" }).count(), 0, "no New channel");
  await op.page.goto(`/channels/${channelId}`);
  await op.page.getByRole("heading", { level: 1, name: "ops-hook" }).waitFor();
  await op.page
    .getByRole("region", { name: "Deliveries" })
    .getByRole("cell", { name: "channel.tested" })
    .first()
    .waitFor();
  for (const name of ["Test", "Save", "Delete", "Create"]) {
    t.equal(await op.page.getByRole("button", { name, exact: true }).count(), 0, `no ${name}`);
  }
  await op.page.getByText("whsec_********").waitFor();
  const csrf = await csrfOf(op.context);
  t.ok(csrf, "the operator's page has a CSRF value");
  const headers = { "x-orch-csrf": csrf ?? "" };
  const test = await pageFetch(op.page, "POST", `/api/v1/channels/${channelId}/test`, { headers });
  t.equal(test.status, 403, "Test is refused");
  const del = await pageFetch(op.page, "DELETE", `/api/v1/channels/${channelId}`, { headers });
  t.equal(del.status, 403, "Delete is refused");
  const win = await pageFetch(op.page, "POST", "/api/v1/maintenance-windows", {
    headers,
    body: { starts_at: Math.floor(Date.now() / 1000), ends_at: Math.floor(Date.now() / 1000) + 60, reason: "x" },
  });
  t.equal(win.status, 403, "creating a maintenance window is refused");
  await op.page.goto("/maintenance");
  await op.page.getByRole("heading", { level: 1, name: "Maintenance windows" }).waitFor();
  t.equal(await op.page.getByRole("form", { name: "New window" }).count(), 0, "no New window form");
  op.guard.check(t, "operator");
});

t.test("a maintenance window: the banner on every page until End now", async (t) => {
  await page.goto("/maintenance");
  await page.getByRole("heading", { level: 1, name: "Maintenance windows" }).waitFor();
  await page.getByText("No maintenance windows.").waitFor();
  const banner = page.getByTestId("maintenance-banner");
  t.equal(await banner.count(), 0, "no banner without a window");
  const form = page.getByRole("form", { name: "New window" });
  await form.getByLabel("Reason", { exact: true }).fill("database upgrade");
  await form.getByRole("button", { name: "Create" }).click();
  await banner.waitFor();
  t.match(await banner.textContent(), /Maintenance window active.*database upgrade/);
  for (const [path, h1] of [
    ["/", "Fleet"],
    ["/secrets", "Secrets"],
    ["/audit", "Audit"],
  ] as const) {
    await page.goto(path);
    await page.getByRole("heading", { level: 1, name: h1 }).waitFor();
    await banner.waitFor();
    t.pass(`the banner on ${path}`);
  }
  await op.page.reload();
  await op.page.getByTestId("maintenance-banner").waitFor();
  t.equal(await op.page.getByRole("button", { name: "End now" }).count(), 0, "operators cannot end it");
  op.guard.check(t, "operator banner");

  await page.goto("/maintenance");
  const row = page.getByRole("row").filter({ has: page.getByRole("cell", { name: "database upgrade" }) });
  await row.getByText("active", { exact: true }).waitFor();
  await banner.waitFor();
  await page.waitForLoadState("networkidle").catch(() => {});
  await expectNoA11yViolations(t, page, "maintenance (with banner)");
  t.equal((await shoot(page, "maintenance")).length, 4);

  await row.getByRole("button", { name: "End now" }).click();
  await banner.waitFor({ state: "detached" });
  await row.getByText("ended", { exact: true }).waitFor();
  const w = (await stack.api("GET", "/api/v1/maintenance-windows")).body.windows[0];
  t.equal(w.active, false, "the API says it ended");
  await page.goto("/");
  await page.getByRole("heading", { level: 1, name: "Fleet" }).waitFor();
  await page.waitForLoadState("networkidle").catch(() => {});
  t.equal(await banner.count(), 0, "no banner after End now");
  guard.check(t, "maintenance");
});
