import t, { type Test } from "tap";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { eventually, startOidcProvider, waitMs, within } from "@orch/kit/testing";
import { openSse, type SseStream } from "../../services/audit/test/sse.js";
import { consoleStack } from "./lib/browser.js";
import { records } from "./lib/process-logs.js";
import { rawAttach, type RawWs } from "./lib/raw-ws.js";

// Single sign-on outside the console, with real processes, a real OpenID Provider (the certified
// `oidc-provider` package on loopback) and Chromium playing the user:
// - `orchctl login --sso` (the built CLI, its own process and HOME) through the device flow, the
//   user approving the code at the provider in the browser; the stored session then works;
// - deprovisioning: with the provider's refresh interval at 2 s, disabling the user at the provider
//   ends their live terminal and audit stream (the time is measured and bounded), and removing a
//   group re-maps the operator (a terminal outside the new scope ends, one inside stays);
// - the CLI's HTTP routes refuse a replayed or forged redirect, and back-channel logout ends a
//   session at once while a forged logout token is refused.
// Needs `npm run build`.
const REFRESH_S = 2;
const stack = await consoleStack(t, {
  services: ["auth", "agents", "terminal", "audit", "gateway"],
  env: {
    ORCH_AUTH_SSO_KEYS: `e2e:${Buffer.alloc(32, 0x56).toString("base64")}`,
    ORCH_TERMINAL_OPEN_TIMEOUT_SECONDS: "10",
  },
});
const op = await startOidcProvider();
t.teardown(() => op.stop());
const work = mkdtempSync(join(tmpdir(), "orch-e2e-sso-"));
t.teardown(() => rmSync(work, { recursive: true, force: true }));

const put = await stack.api("PUT", "/api/v1/identity-providers/corp", {
  display_name: "Corp SSO",
  issuer: op.issuer,
  client_id: op.clientId,
  client_secret: op.clientSecret,
  refresh_interval_seconds: REFRESH_S,
  rules: [
    { name: "ops", groups: ["ops"], role: "operator", agent_selector: "env=prod" },
    { name: "staff", groups: ["staff"], role: "operator", agent_selector: "env=staging" },
  ],
});
if (put.status !== 200) throw new Error(`PUT identity provider: ${put.status} ${put.text}`);
if (put.body.refresh_interval_seconds !== REFRESH_S || "client_secret" in put.body)
  throw new Error(`PUT identity provider answered ${put.text}`);

/** An approved agent named `name` tagged env=`env`, with a real shell. */
async function agent(name: string, env: string): Promise<void> {
  const { nodeId } = await stack.spawnAgent(["--shell", "/bin/sh"]);
  await eventually(async () => (await stack.api("GET", `/api/v1/agents/${nodeId}`)).body?.connected === true);
  const approved = await stack.api("POST", `/api/v1/agents/${nodeId}`, { status: "approved", name });
  if (approved.status !== 200) throw new Error(`approve: ${approved.status} ${approved.text}`);
  const tagged = await stack.api("PUT", `/api/v1/agents/${name}/tags`, { tags: { env } });
  if (tagged.status !== 200) throw new Error(`tags: ${tagged.status} ${tagged.text}`);
}
await agent("prod-1", "prod");
await agent("staging-1", "staging");

const post = (path: string, body: unknown) =>
  fetch(`${stack.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });

/** A CLI sign-in over HTTP (loopback redirect flow): the provider's redirect, then the token. */
async function redirectFor(login: string): Promise<string> {
  const a = await post("/api/v1/auth/sso/corp/authorize", { redirect_uri: "http://127.0.0.1:9/callback" });
  if (a.status !== 200) throw new Error(`authorize: ${a.status} ${await a.text()}`);
  const { authorization_url } = (await a.json()) as { authorization_url: string };
  return op.signInViaHttp(authorization_url, login);
}
async function ssoToken(login: string): Promise<string> {
  const r = await post("/api/v1/auth/sso/token", { callback_url: await redirectFor(login) });
  if (r.status !== 200) throw new Error(`token: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { token: string }).token;
}

let markers = 0;
const marker = () => join(work, `marker-${++markers}`);
const exists = (p: string) => {
  try {
    readFileSync(p);
    return true;
  } catch {
    return false;
  }
};

/** A terminal on `agentName`, proven to run input. */
async function terminal(token: string, agentName: string): Promise<RawWs> {
  const r = await stack.api("POST", `/api/v1/terminal/${agentName}`, undefined, token);
  if (r.status !== 201) throw new Error(`open terminal: ${r.status} ${r.text}`);
  const ws = await rawAttach(r.body.ws_url, token);
  const before = marker();
  ws.sendBinary(`touch ${before}\r`);
  await eventually(() => exists(before), 10_000);
  return ws;
}

async function auditStream(token: string): Promise<SseStream> {
  const s = await openSse(`${stack.url}/api/v1/audit/stream?event_type=terminal.session.opened`, { token });
  if (s.status !== 200) throw new Error(`audit stream: ${s.status} ${JSON.stringify(s.body)}`);
  return s;
}

/** Plays the user at the provider's device pages: confirm the code, log in, consent. */
async function approveDevice(page: Page, url: string, login: string): Promise<void> {
  await page.goto(url);
  for (let step = 0; step < 8; step++) {
    if (await page.getByText("Sign-in Success", { exact: false }).count()) return;
    const user = page.locator('input[name="login"]');
    if (await user.count()) {
      await user.fill(login);
      await page.locator('input[name="password"]').fill("any password");
    }
    await Promise.all([page.waitForNavigation(), page.locator('button[type="submit"]').first().click()]);
  }
  throw new Error(`the provider's device pages did not end in success: ${await page.content()}`);
}

t.test("orchctl login --sso: the device flow, approved in the browser; the session works", async (t) => {
  op.setUser("ann", { email: "ann@example.com", preferredUsername: "ann", groups: ["ops"] });
  const home = join(work, "ann-home");
  const main = fileURLToPath(new URL("../../cli/dist/main.js", import.meta.url));
  const env = { ...process.env, HOME: work, ORCHCTL_HOME: home };
  const child = spawn(process.execPath, [main, "--server", stack.url, "login", "--sso"], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  t.teardown(() => void child.kill("SIGKILL"));
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));

  const url = await eventually(() => /open (http\S+)/.exec(err)?.[1], 20_000);
  const code = /confirm the code (\S+)/.exec(err)?.[1];
  t.ok(url.startsWith(op.issuer), `the provider's verification page: ${url}`);
  t.ok(code, `a user code: ${code}`);
  const { page, close } = await stack.newPage();
  await approveDevice(page, url, "ann");
  await close();

  t.equal(await within(exited, waitMs(30_000), "orchctl login --sso"), 0, err);
  t.match(out, /^Logged in to .* as \S+ \(operator/);
  const session = JSON.parse(readFileSync(join(home, "session.json"), "utf8"));
  t.match(session, { server: stack.url, operator: { role: "operator", agent_selector: "env=prod" } });

  const list = await new Promise<{ code: number | null; out: string }>((resolve) => {
    const c = spawn(process.execPath, [main, "--json", "agents", "list"], {
      env,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let o = "";
    c.stdout.on("data", (d: Buffer) => (o += d.toString()));
    c.on("exit", (code) => resolve({ code, out: o }));
  });
  t.equal(list.code, 0);
  t.same(
    (JSON.parse(list.out).agents as { name: string }[]).map((a) => a.name),
    ["prod-1"],
    "orchctl agents list with the stored session: the env=prod agent only",
  );
});

t.test("disabled at the provider: the live terminal and audit stream end within the refresh interval", async (t) => {
  op.setUser("bob", { email: "bob@example.com", preferredUsername: "bob", groups: ["ops"] });
  const token = await ssoToken("bob");
  const ws = await terminal(token, "prod-1");
  const stream = await auditStream(token);

  const since = Date.now();
  op.disableUser("bob");
  const [close] = await Promise.all([
    within(ws.closeFrame, waitMs(15_000), "terminal close frame"),
    within(stream.ended, waitMs(15_000), "audit stream end"),
  ]).catch((err: unknown) => {
    // What the refresher did meanwhile, for the failure report.
    const auth = stack.system.procs.get("auth");
    const sso = auth ? records(auth).filter((r) => r.msg !== "migration applied") : [];
    throw new Error(
      `${(err as Error).message}; auth's sso log: ${JSON.stringify(sso.slice(-40).map((r) => [r.time, r.operator, r.outcome, r.msg, r.err?.message]))}`,
    );
  });
  const streamAt = Date.now();
  const closedIn = close.at - since;
  t.comment(`terminal closed ${closedIn} ms after disabling the user (close ${close.code} ${close.reason})`);
  t.comment(
    `audit stream ended ≤ ${streamAt - since} ms after disabling the user (${stream.events.at(-1)?.data?.code})`,
  );
  t.ok(closedIn < (REFRESH_S + 3) * 1000, `terminal closed within ${REFRESH_S} s + 3 s (${closedIn} ms)`);
  t.ok(streamAt - since < (REFRESH_S + 3) * 1000, `audit stream ended within ${REFRESH_S} s + 3 s`);
  t.equal(close.code, 4401, "a policy close: the session is gone");
  t.equal(stream.events.at(-1)?.event, "error", "the stream's last event names why it ended");
  const who = await stack.api("GET", "/api/v1/auth/whoami", undefined, token);
  t.equal(who.status, 401, "the token is refused");
  const gone = await eventually(async () => {
    const r = await stack.api("GET", "/api/v1/audit?event_type=operator.deprovisioned&limit=50");
    return r.body.events.length ? r.body.events : undefined;
  });
  t.ok(gone.length >= 1, "an operator.deprovisioned audit event");
});

t.test("a group removed at the provider re-maps the scope: what it no longer covers ends", async (t) => {
  op.setUser("cat", { email: "cat@example.com", preferredUsername: "cat", groups: ["ops", "staff"] });
  const token = await ssoToken("cat");
  const onProd = await terminal(token, "prod-1");
  t.equal(
    (await stack.api("POST", "/api/v1/terminal/staging-1", undefined, token)).status,
    404,
    "staging is out of scope",
  );

  const since = Date.now();
  op.setGroups("cat", ["staff"]);
  const close = await within(onProd.closeFrame, waitMs(15_000), "terminal close frame");
  const ms = close.at - since;
  t.comment(
    `terminal outside the new scope closed ${ms} ms after the group change (close ${close.code} ${close.reason})`,
  );
  t.ok(ms < (REFRESH_S + 3) * 1000, `within ${REFRESH_S} s + 3 s`);
  t.equal(close.code, 4403, "a scope close");
  const me = await eventually(async () => {
    const r = await stack.api("GET", "/api/v1/auth/whoami", undefined, token);
    return r.body?.agent_selector === "env=staging" ? r.body : undefined;
  });
  t.equal(me.agent_selector, "env=staging", "the token stays valid with the new rule's scope");
  const onStaging = await terminal(token, "staging-1");
  onStaging.destroy();
});

t.test("the CLI routes refuse a replayed or forged redirect with a problem code", async (t) => {
  op.setUser("dan", { email: "dan@example.com", preferredUsername: "dan", groups: ["ops"] });
  const back = await redirectFor("dan");
  t.equal((await post("/api/v1/auth/sso/token", { callback_url: back })).status, 200, "redeemed once");
  const replay = await post("/api/v1/auth/sso/token", { callback_url: back });
  t.equal(replay.status, 401);
  t.match(replay.headers.get("content-type"), /application\/problem\+json/);
  t.equal(((await replay.json()) as { code: string }).code, "sso_state_invalid", "the state was spent");

  const forged = new URL(back);
  forged.searchParams.set("state", "forged-state");
  const f = await post("/api/v1/auth/sso/token", { callback_url: forged.toString() });
  t.equal(f.status, 401);
  t.equal(((await f.json()) as { code: string }).code, "sso_state_invalid");

  const notLoopback = await post("/api/v1/auth/sso/corp/authorize", { redirect_uri: "https://evil.example/cb" });
  t.equal(notLoopback.status, 400, "the CLI's redirect must be a loopback address");
});

t.test("the console's redirect is bound to the browser that began it (login CSRF)", async (t) => {
  op.setUser("ida", { email: "ida@example.com", preferredUsername: "ida", groups: ["ops"] });
  const get = (path: string, cookie?: string) =>
    fetch(path.startsWith("http") ? path : `${stack.url}${path}`, {
      redirect: "manual",
      headers: cookie ? { cookie } : {},
      signal: AbortSignal.timeout(30_000),
    });
  const begin = async () => {
    const r = await get("/api/v1/auth/sso/corp/login?return_to=/agents");
    t.equal(r.status, 302);
    const set = r.headers.getSetCookie().find((c) => c.startsWith("orch_sso_state="));
    t.match(set, /HttpOnly/, "the state cookie is HttpOnly");
    t.match(set, /SameSite=Lax/, "and Lax: it must come back with the provider's cross-site redirect");
    const back = await op.signInViaHttp(r.headers.get("location")!, "ida");
    return { back, cookie: set!.split(";")[0]! };
  };
  const signInError = (r: Response) => new URL(r.headers.get("location")!, stack.url).searchParams.get("sso_error");

  // The attacker's redirect, opened in the victim's browser (which holds no state cookie, or its own).
  const attacker = await begin();
  const victim = await get(attacker.back);
  t.equal(signInError(victim), "sso_state_invalid", "no cookie: refused");
  t.notOk(
    victim.headers.getSetCookie().some((c) => /^orch_session=[^;]/.test(c)),
    "no session cookie",
  );
  const other = await begin();
  const mixed = await get(other.back, attacker.cookie);
  t.equal(signInError(mixed), "sso_state_invalid", "another sign-in's cookie: refused");

  const own = await begin();
  const done = await get(own.back, own.cookie);
  t.equal(done.headers.get("location"), `${stack.url}/agents`, "the browser that began it lands where it began");
  const cookies = done.headers.getSetCookie();
  t.ok(
    cookies.some((c) => /^orch_sso_state=;.*Max-Age=0/.test(c)),
    "the state cookie is cleared",
  );
  t.ok(
    cookies.some((c) => /^orch_session=[^;]/.test(c)),
    "a session cookie is set",
  );
  const failed = await eventually(async () => {
    const r = await stack.api("GET", "/api/v1/audit?event_type=auth.sso.login_failed&limit=50");
    const hits = (r.body.events as { metadata: { code?: string } }[]).filter(
      (e) => e.metadata.code === "sso_state_invalid",
    );
    return hits.length >= 2 ? hits : undefined;
  });
  t.ok(failed.length >= 2, "each refusal is audited");
});

t.test("back-channel logout ends the user's sessions at once; a forged token is refused", async (t: Test) => {
  op.setUser("eve", { email: "eve@example.com", preferredUsername: "eve", groups: ["ops"] });
  const token = await ssoToken("eve");
  const logout = (logoutToken: string) =>
    fetch(`${stack.url}/api/v1/auth/sso/corp/backchannel-logout`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ logout_token: logoutToken }).toString(),
    });
  const forged = await logout(op.logoutToken({ sub: "eve" }, { alg: "none" }));
  t.equal(forged.status, 400);
  t.equal(((await forged.json()) as { code: string }).code, "invalid_logout_token");
  t.equal((await stack.api("GET", "/api/v1/auth/whoami", undefined, token)).status, 200, "still signed in");

  const ok = await logout(op.logoutToken({ sub: "eve" }));
  t.equal(ok.status, 200);
  await eventually(async () => (await stack.api("GET", "/api/v1/auth/whoami", undefined, token)).status === 401);
  t.pass("the session ended");
});
