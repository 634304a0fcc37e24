import t from "tap";
import { eventually, waitMs } from "@orch/kit/testing";
import { consoleStack, expectNoA11yViolations, shoot, signInWithLink } from "../lib/browser.js";

// Every console page in a real browser against the real stack: no serious/critical axe findings,
// screenshots in light/dark × desktop/phone (test-results/console/), the console CSP on the document,
// no CSP violations or page errors; and the gateway-down banner while the gateway is killed.
const stack = await consoleStack(t, { agents: 1 });
const [nodeId] = stack.nodeIds as [string];
await eventually(async () => (await stack.api("GET", `/api/v1/agents/${nodeId}`)).body?.connected === true, 30_000);
const approved = await stack.api("POST", `/api/v1/agents/${nodeId}`, { status: "approved", name: "web-1" });
if (approved.status !== 200) throw new Error(`approving ${nodeId}: ${approved.text}`);
await stack.api("PUT", `/api/v1/agents/${nodeId}/tags/env`, { value: "prod" });

const CSP =
  "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
  "font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; " +
  "form-action 'self'; frame-ancestors 'none'";

const pages: Array<{ name: string; path: string; h1: string }> = [
  { name: "fleet", path: "/", h1: "Fleet" },
  { name: "pending", path: "/agents/pending", h1: "Pending approvals" },
  { name: "agent", path: `/agents/${nodeId}`, h1: "web-1" },
  { name: "audit", path: "/audit", h1: "Audit" },
  { name: "inbox", path: "/inbox", h1: "Inbox" },
  { name: "operators", path: "/operators", h1: "Operators" },
  { name: "account", path: "/account", h1: "Account" },
];

t.test("login page (signed out)", async (t) => {
  const { page, guard, close } = await stack.newPage();
  const res = await page.goto("/login");
  t.equal(res?.status(), 200);
  t.equal(res?.headers()["content-security-policy"], CSP, "the console CSP on the document");
  await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
  t.equal(await page.getByRole("heading", { level: 1 }).count(), 1, "one h1");
  await page.waitForLoadState("networkidle");
  await expectNoA11yViolations(t, page, "login");
  t.equal((await shoot(page, "login")).length, 4);
  guard.check(t, "login");
  await close();
});

const { page, guard } = await stack.newPage();
await signInWithLink(page, stack, stack.system.admin);

for (const p of pages) {
  t.test(`${p.name} page (${p.path})`, async (t) => {
    const res = await page.goto(p.path);
    t.equal(res?.status(), 200);
    const h = res?.headers() ?? {};
    t.equal(h["content-security-policy"], CSP, "the console CSP on the document");
    t.equal(h["x-content-type-options"], "nosniff");
    t.equal(h["x-frame-options"], "DENY");
    t.equal(h["cache-control"], "no-cache", "index.html is revalidated");
    await page.getByRole("heading", { level: 1, name: p.h1 }).waitFor({ timeout: waitMs(15_000) });
    t.equal(await page.getByRole("heading", { level: 1 }).count(), 1, "one h1");
    await page.getByTestId("inbox-badge").waitFor();
    await page.waitForLoadState("networkidle").catch(() => {});
    await expectNoA11yViolations(t, page, p.name);
    t.equal((await shoot(page, p.name)).length, 4);
    guard.check(t, p.name);
  });
}

t.test("assets are immutable, the SPA fallback is not cached, /api stays problem+json", async (t) => {
  const html = await stack.system.api("GET", "/no/such/page", { headers: { accept: "text/html" } });
  t.equal(html.status, 200);
  t.match(html.text, /<div id="root">/, "index.html for a console path");
  t.equal(html.headers.get("content-security-policy"), CSP);
  const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html.text)?.[1];
  const a = await stack.system.api("GET", asset!);
  t.equal(a.status, 200);
  t.equal(a.headers.get("cache-control"), "public, max-age=31536000, immutable");
  const api = await stack.system.api("GET", "/api/v1/nope", { headers: { accept: "text/html" } });
  t.equal(api.status, 404);
  t.match(api.headers.get("content-type"), /problem\+json/);
});

t.test("gateway down: the banner comes and goes, a half-typed field keeps its value", async (t) => {
  await page.goto("/");
  await page.getByRole("heading", { level: 1, name: "Fleet" }).waitFor();
  const selector = page.getByLabel("Selector", { exact: true });
  await selector.fill("env=pro");
  const banner = page.getByTestId("gateway-banner");
  t.equal(await banner.isVisible(), false, "no banner while the gateway answers");
  // Refused connections and 5xx are what this test causes; the page logs them as network errors.
  guard.allow(/net::ERR_|Failed to load resource/);
  await stack.system.kill("gateway");
  await banner.waitFor({ state: "visible", timeout: waitMs(30_000) });
  t.match(await banner.textContent(), /Gateway unavailable/);
  t.equal(await banner.getAttribute("role"), "status");

  await stack.system.start("gateway");
  await eventually(
    async () => (await stack.system.api("GET", "/api/v1/status").catch(() => undefined))?.status === 200,
    30_000,
  );
  await banner.waitFor({ state: "hidden", timeout: waitMs(30_000) });
  t.pass("the banner went away once the gateway answered");
  t.equal(await selector.inputValue(), "env=pro", "the half-typed field kept its value");
  t.equal(new URL(page.url()).pathname, "/", "still on the page (no sign-in needed: the session survived)");
  guard.check(t, "gateway restart");
});
