import t from "tap";
import pg from "pg";
import { ed25519, eventually, waitMs } from "@orch/kit/testing";
import {
  addOperator,
  consoleStack,
  csrfOf,
  loginLinkFor,
  pageFetch,
  signInWithLink,
  virtualAuthenticator,
} from "../lib/browser.js";

// Signing in to the console and what keeps a session honest, with real processes and a real
// browser: one-time links (single use, 60 s), passkeys through Chromium's virtual authenticator,
// revocation on removing the operator (the broadcast; documented within 2 s, a figure printed here),
// CSRF on cookie requests, bearer tokens unchanged, roles, and an expired session sending the
// browser to /login and back.
const stack = await consoleStack(t, {
  services: ["auth", "agents", "notify", "audit", "gateway"],
  // A cached session goes stale only after an hour: a refusal soon after a revocation is the broadcast's.
  env: { ORCH_GATEWAY_TOKEN_CACHE_TTL_MS: String(3_600_000) },
});
const sql = new pg.Client({ connectionString: stack.db.url });
await sql.connect();
t.teardown(() => sql.end());
const alertText = async (page: import("playwright-core").Page) => {
  const alert = page.getByRole("alert").first();
  await alert.waitFor({ timeout: waitMs(15_000) });
  return (await alert.textContent()) ?? "";
};

t.test("a login link works once; reused it is refused with a clear message", async (t) => {
  const url = await loginLinkFor(stack, stack.system.admin);
  const first = await stack.newPage();
  await first.page.goto(url);
  await first.page.waitForURL((u) => u.pathname === "/", { timeout: waitMs(15_000) });
  t.equal((await pageFetch(first.page, "GET", "/api/v1/auth/whoami")).body.name, "admin", "signed in");

  const second = await stack.newPage();
  await second.page.goto(url);
  await second.page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
  t.match(await alertText(second.page), /invalid_login_code/, "the API's code is shown");
  t.equal(new URL(second.page.url()).pathname, "/login", "still on the sign-in page");
  t.equal((await pageFetch(second.page, "GET", "/api/v1/auth/whoami")).status, 401, "no session");
  first.guard.check(t, "first tab");
  second.guard.check(t, "second tab");
  await first.close();
  await second.close();
});

t.test("a login link older than 60 s is refused", async (t) => {
  const url = await loginLinkFor(stack, stack.system.admin);
  const aged = await sql.query(
    "UPDATE auth.login_codes SET created_at = created_at - 61000, expires_at = expires_at - 61000",
  );
  t.equal(aged.rowCount, 1, "the one unused code is now 61 s old");
  const { page, guard, close } = await stack.newPage();
  await page.goto(url);
  t.match(await alertText(page), /login_code_expired/);
  t.equal((await pageFetch(page, "GET", "/api/v1/auth/whoami")).status, 401);
  guard.check(t);
  await close();
});

t.test(
  "passkey: register on Account, sign out, sign in with it; removing the operator ends it within 2 s",
  async (t) => {
    const key = ed25519();
    const id = await addOperator(stack, "pk-op", "operator", key);
    const { page, guard, close } = await stack.newPage();
    const authenticator = await virtualAuthenticator(page);
    await signInWithLink(page, stack, key);
    await page.goto("/account");
    await page.getByRole("heading", { level: 1, name: "Account" }).waitFor();
    await page.getByLabel("Passkey name", { exact: true }).fill("laptop");
    await page.getByRole("button", { name: "Register a passkey", exact: true }).click();
    await page
      .getByText("laptop", { exact: true })
      .first()
      .waitFor({ timeout: waitMs(15_000) });
    t.equal((await authenticator.credentials()).length, 1, "the authenticator holds one resident credential");
    const mine = await pageFetch(page, "GET", "/api/v1/auth/passkeys");
    t.match(mine.body.passkeys, [{ name: "laptop", last_used_at: null }]);

    await page.getByRole("button", { name: "Sign out", exact: true }).first().click();
    await page.waitForURL((u) => u.pathname === "/login", { timeout: waitMs(10_000) });
    t.equal((await pageFetch(page, "GET", "/api/v1/auth/whoami")).status, 401, "signed out");

    await page.getByRole("button", { name: "Sign in with a passkey", exact: true }).click();
    await page.waitForURL((u) => u.pathname !== "/login", { timeout: waitMs(15_000) });
    t.match((await pageFetch(page, "GET", "/api/v1/auth/whoami")).body, { id, name: "pk-op" }, "signed in by passkey");
    t.ok((await authenticator.credentials())[0]!.signCount > 0, "the authenticator signed");

    const removed = await stack.api("DELETE", `/api/v1/operators/${id}`);
    t.equal(removed.status, 204);
    const t0 = performance.now();
    // Only the revocation broadcast can drop the gateway's cached session (the cache TTL is an hour here).
    await eventually(async () => (await pageFetch(page, "GET", "/api/v1/auth/whoami")).status === 401, 2000, 20);
    const ms = performance.now() - t0;
    t.comment(`console session refused ${ms.toFixed(0)} ms after the operator's removal`);
    t.pass("the console session is refused after the operator's removal");
    guard.check(t);
    await close();
  },
);

t.test("cookie requests need the CSRF header; bearer tokens work as before", async (t) => {
  const { page, context, guard, close } = await stack.newPage();
  await signInWithLink(page, stack, stack.system.admin);
  const without = await pageFetch(page, "POST", "/api/v1/auth/login-codes", { body: {} });
  t.equal(without.status, 403);
  t.equal(without.body.code, "csrf_token_invalid");
  const wrong = await pageFetch(page, "POST", "/api/v1/auth/login-codes", {
    body: {},
    headers: { "x-orch-csrf": "not-the-value" },
  });
  t.equal(wrong.body.code, "csrf_token_invalid", "a wrong value is no better");
  const csrf = await csrfOf(context);
  t.ok(csrf, "the readable CSRF cookie");
  const withHeader = await pageFetch(page, "POST", "/api/v1/auth/login-codes", {
    body: {},
    headers: { "x-orch-csrf": csrf! },
  });
  t.equal(withHeader.status, 201, "with the header it goes through");
  t.equal((await pageFetch(page, "GET", "/api/v1/agents")).status, 200, "GET needs no header");

  const bearer = await stack.api("POST", "/api/v1/auth/login-codes", {});
  t.equal(bearer.status, 201, "a bearer request needs no CSRF header");
  const session = (await context.cookies()).find((c) => c.name === "orch_session")!;
  const both = await stack.system.api("POST", "/api/v1/auth/login-codes", {
    token: stack.token,
    body: {},
    headers: { cookie: `orch_session=${session.value}` },
  });
  t.equal(both.status, 201, "bearer wins over a cookie sent along");
  t.equal((await stack.api("GET", "/api/v1/auth/whoami")).body.name, "admin");
  guard.check(t);
  await close();
});

t.test("an operator sees no admin controls and is refused admin routes", async (t) => {
  const key = ed25519();
  await addOperator(stack, "plain-op", "operator", key);
  const { page, context, guard, close } = await stack.newPage();
  await signInWithLink(page, stack, key);
  const nav = page.getByRole("navigation", { name: "Main" });
  await nav.getByRole("link", { name: "Fleet", exact: true }).waitFor();
  t.equal(await nav.getByRole("link", { name: "Operators", exact: true }).count(), 0, "no Operators link");
  await page.goto("/operators");
  await page.getByRole("heading", { level: 1, name: "Operators" }).waitFor();
  await page
    .getByText("plain-op")
    .first()
    .waitFor({ timeout: waitMs(10_000) });
  t.equal(await page.getByRole("button", { name: "Remove", exact: true }).count(), 0, "no Remove buttons");
  t.equal(await page.getByRole("button", { name: "Add operator" }).count(), 0, "no Add operator form");
  t.equal(await page.getByLabel("Public key").count(), 0);
  const csrf = (await csrfOf(context))!;
  const add = await pageFetch(page, "POST", "/api/v1/operators", {
    body: { name: "sneaky", public_key: ed25519().publicKeyHex },
    headers: { "x-orch-csrf": csrf },
  });
  t.equal(add.status, 403, `admin route refused: ${JSON.stringify(add.body)}`);
  guard.check(t);
  await close();
});

t.test("an expired session goes to /login?next=…, and signing in restores the page", async (t) => {
  const { page, context, guard, close } = await stack.newPage();
  await signInWithLink(page, stack, stack.system.admin);
  // The session ends elsewhere (its token logged out as a bearer from another client).
  const session = (await context.cookies()).find((c) => c.name === "orch_session")!;
  t.equal((await stack.api("POST", "/api/v1/auth/logout", {}, session.value)).status, 204);
  const target = "/audit?event_type=agent.approved";
  await page.goto(target);
  await page.waitForURL((u) => u.pathname === "/login", { timeout: waitMs(15_000) });
  const next = new URL(page.url()).searchParams.get("next");
  t.equal(next, target, "next carries path and query");

  const link = new URL(await loginLinkFor(stack, stack.system.admin));
  // Leave the document first: a URL differing only in its fragment would not load the page again.
  await page.goto("about:blank");
  await page.goto(`${stack.url}/login?next=${encodeURIComponent(next!)}${link.hash}`);
  await page.waitForURL((u) => u.pathname === "/audit", { timeout: waitMs(15_000) });
  t.equal(new URL(page.url()).searchParams.get("event_type"), "agent.approved", "the query is restored too");
  await page.getByRole("heading", { level: 1, name: "Audit" }).waitFor();
  guard.check(t);
  await close();
});
