import { readFile, writeFile } from "node:fs/promises";
import type { ServerResponse } from "node:http";
import { join } from "node:path";
import t from "tap";
import { run } from "../src/program.js";
import { cli } from "./helpers/cli.js";
import { loggedIn, world } from "./helpers/setup.js";
import type { TestServer } from "./helpers/server.js";

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": status < 400 ? "application/json" : "application/problem+json" });
  res.end(JSON.stringify(body));
};
const operator = {
  id: "01J",
  name: "ann",
  role: "operator",
  public_key: "",
  active: true,
  created_at: "2025-01-01T00:00:00Z",
  created_by: "sso",
  agent_selector: "env=prod",
};
const providers = (s: TestServer, list: { name: string; display_name: string; device_flow: boolean }[]) =>
  s.overrides.set("GET /api/v1/auth/sso/providers", (_q, res) => json(res, 200, { providers: list }));
const sessionOf = async (home: string) => JSON.parse(await readFile(join(home, "session.json"), "utf8"));

/** Runs orchctl with a stderr that calls `onErr` with everything written so far. */
async function cliWatching(args: string[], env: Record<string, string>, onErr: (text: string) => void) {
  let stdout = "";
  let stderr = "";
  const code = await run(args, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: {
      write: (s: string) => {
        stderr += s;
        onErr(stderr);
      },
    },
    env,
  });
  return { code, stdout, stderr };
}

t.test("login --sso: the device flow prints the URL and code, polls until complete, stores the session", async (t) => {
  const w = await world(t);
  providers(w.server, [{ name: "corp", display_name: "Corp", device_flow: true }]);
  w.server.overrides.set("POST /api/v1/auth/sso/corp/device", (_q, res) =>
    json(res, 200, {
      device_id: "dev-1",
      user_code: "ABCD-EFGH",
      verification_uri: "http://idp.test/device",
      verification_uri_complete: "http://idp.test/device?user_code=ABCD-EFGH",
      interval: 1,
      expires_at: new Date(Date.now() + 600_000).toISOString(),
    }),
  );
  let polls = 0;
  w.server.overrides.set("POST /api/v1/auth/sso/device/token", (_q, res) =>
    ++polls < 2
      ? json(res, 200, { status: "pending", interval: 1 })
      : json(res, 200, { status: "complete", token: "tok-sso", expires_at: "2099-01-01T00:00:00.000Z", operator }),
  );
  const r = await cli(["login", "--sso", "--server", w.server.url], w.env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /open http:\/\/idp\.test\/device\?user_code=ABCD-EFGH\nand confirm the code ABCD-EFGH/);
  t.match(r.stdout, /^Logged in to .* as ann \(operator/);
  t.equal(polls, 2);
  t.match(
    w.server.requests.filter((q) => q.path === "/api/v1/auth/sso/device/token").map((q) => q.body),
    [{ device_id: "dev-1" }, { device_id: "dev-1" }],
  );
  t.match(await sessionOf(w.home), { server: w.server.url, token: "tok-sso", operator: { name: "ann" } });

  polls = 0;
  const j = await cli(["--json", "login", "--sso", "corp", "--server", w.server.url], w.env);
  t.equal(j.code, 0, j.stderr);
  const line = JSON.parse(j.stderr.trim().split("\n")[0]!);
  t.match(line, { provider: "corp", user_code: "ABCD-EFGH", verification_uri: "http://idp.test/device" });
  t.match(JSON.parse(j.stdout), { server: w.server.url, operator: { name: "ann" } });
  t.notOk(j.stdout.includes("tok-sso"), "the token is not printed");
});

t.test("login --sso: an expired device code ends the wait with the server's problem", async (t) => {
  const w = await world(t);
  providers(w.server, [{ name: "corp", display_name: "Corp", device_flow: true }]);
  w.server.overrides.set("POST /api/v1/auth/sso/corp/device", (_q, res) =>
    json(res, 200, {
      device_id: "d",
      user_code: "C",
      verification_uri: "http://idp.test/d",
      verification_uri_complete: null,
      interval: 1,
      expires_at: new Date(Date.now() + 60_000).toISOString(),
    }),
  );
  w.server.overrides.set("POST /api/v1/auth/sso/device/token", (_q, res) =>
    json(res, 409, {
      type: "about:blank",
      title: "conflict",
      status: 409,
      detail: "The device code expired",
      code: "sso_device_expired",
    }),
  );
  const r = await cli(["login", "--sso", "--server", w.server.url], w.env);
  t.equal(r.code, 1);
  t.match(r.stderr, /The device code expired/);
  t.match(r.stderr, /sso_device_expired/);
});

t.test("login --sso without the device flow: a loopback redirect to 127.0.0.1 (RFC 8252)", async (t) => {
  const w = await world(t);
  providers(w.server, [{ name: "corp", display_name: "Corp", device_flow: false }]);
  let redirectUri = "";
  w.server.overrides.set("POST /api/v1/auth/sso/corp/authorize", (_q, res) => {
    redirectUri = (w.server.requests.at(-1)!.body as { redirect_uri: string }).redirect_uri;
    json(res, 200, {
      authorization_url: `http://idp.test/auth?state=st-1&redirect_uri=${encodeURIComponent(redirectUri)}`,
      state: "st-1",
    });
  });
  w.server.overrides.set("POST /api/v1/auth/sso/token", (_q, res) =>
    json(res, 200, { token: "tok-loop", expires_at: "2099-01-01T00:00:00.000Z", operator }),
  );
  let browser: Promise<{ wrong: number; right: number; page: string }> | undefined;
  const r = await cliWatching(["login", "--sso", "--server", w.server.url], w.env, (err) => {
    if (browser || !err.includes("http://idp.test/auth")) return;
    // The user's browser: a stray request is turned away, the provider's redirect signs in.
    browser = (async () => {
      const wrong = (await fetch(`${redirectUri}?code=x&state=forged`)).status;
      const ok = await fetch(`${redirectUri}?code=c-1&state=st-1`);
      return { wrong, right: ok.status, page: await ok.text() };
    })();
  });
  t.equal(r.code, 0, r.stderr);
  t.match(redirectUri, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
  t.match(r.stderr, /open this URL in a browser on this machine:\nhttp:\/\/idp\.test\/auth\?state=st-1/);
  const b = await browser!;
  t.equal(b.wrong, 404, "a redirect with another state is not this sign-in");
  t.equal(b.right, 200);
  t.match(b.page, /you can close this tab/);
  const token = w.server.requests.find((q) => q.path === "/api/v1/auth/sso/token");
  t.same(token?.body, { callback_url: `${redirectUri}?code=c-1&state=st-1` });
  t.match(await sessionOf(w.home), { token: "tok-loop", operator: { name: "ann" } });
});

t.test("login --sso chooses the only provider, else asks which", async (t) => {
  const w = await world(t);
  providers(w.server, [
    { name: "corp", display_name: "Corp", device_flow: true },
    { name: "lab", display_name: "Lab", device_flow: false },
  ]);
  const many = await cli(["login", "--sso", "--server", w.server.url], w.env);
  t.equal(many.code, 1);
  t.match(many.stderr, /2 identity providers; choose one: orchctl login --sso <provider> \(corp, lab\)/);
  const unknown = await cli(["login", "--sso", "nope", "--server", w.server.url], w.env);
  t.match(unknown.stderr, /no enabled identity provider named "nope" \(enabled: corp, lab\)/);
  const both = await cli(["login", "--sso", "--key", "x", "--server", w.server.url], w.env);
  t.match(both.stderr, /--sso signs in without a key/);
  providers(w.server, []);
  const none = await cli(["login", "--sso", "--server", w.server.url], w.env);
  t.match(none.stderr, /has no enabled identity provider/);
});

const provider = {
  id: "01P",
  name: "corp",
  display_name: "Corp",
  issuer: "https://idp.example",
  client_id: "orch",
  has_client_secret: true,
  scopes: ["openid", "email"],
  groups_claim: "groups",
  allowed_domains: [],
  rules: [{ name: "ops", groups: ["ops"], email: null, domains: [], role: "operator", agent_selector: "env=prod" }],
  refresh_interval_seconds: 300,
  enabled: true,
  device_flow: true,
  created_at: "2025-01-01T00:00:00.000Z",
  updated_at: "2025-01-01T00:00:00.000Z",
};

t.test("identity-providers put takes a file and the secret from a file or the environment, never a flag", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set("PUT /api/v1/identity-providers/corp", (_q, res) => json(res, 200, provider));
  w.server.overrides.set("GET /api/v1/identity-providers", (_q, res) => json(res, 200, { providers: [provider] }));
  const file = join(w.env.HOME, "corp.yaml");
  await writeFile(
    file,
    "display_name: Corp\nissuer: https://idp.example\nclient_id: orch\nrules:\n  - name: ops\n    groups: [ops]\n    role: operator\n    agent_selector: env=prod\n",
  );
  const r = await cli(["identity-providers", "put", "corp", "-f", file, "--refresh-interval", "2"], {
    ...w.env,
    ORCH_SSO_CLIENT_SECRET: "s3cret",
  });
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /Saved identity provider corp \(enabled\)/);
  t.match(r.stdout, /0\. ops: groups ops → operator, scope env=prod/);
  t.notOk(r.stdout.includes("s3cret"));
  t.same(w.server.requests.at(-1)?.body, {
    display_name: "Corp",
    issuer: "https://idp.example",
    client_id: "orch",
    rules: [{ name: "ops", groups: ["ops"], role: "operator", agent_selector: "env=prod" }],
    refresh_interval_seconds: 2,
    client_secret: "s3cret",
  });

  const secretFile = join(w.env.HOME, "secret");
  await writeFile(secretFile, "from-file\n");
  t.equal(
    (await cli(["identity-providers", "put", "corp", "-f", file, "--client-secret-file", secretFile], w.env)).code,
    0,
  );
  t.match(w.server.requests.at(-1)?.body, { client_secret: "from-file" });

  await writeFile(file, "issuer: https://idp.example\nclient_id: orch\nclient_secret: oops\n");
  const leaked = await cli(["identity-providers", "put", "corp", "-f", file], w.env);
  t.equal(leaked.code, 1);
  t.match(leaked.stderr, /keep secrets out of files/);

  const list = await cli(["identity-providers", "list"], w.env);
  t.match(
    list.stdout,
    /NAME\s+DISPLAY NAME\s+ISSUER\s+ENABLED\s+DEVICE FLOW\s+RULES\ncorp\s+Corp\s+https:\/\/idp\.example\s+yes\s+yes\s+1/,
  );
});

t.test("identity-providers put with flags alone changes the stored provider", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set("GET /api/v1/identity-providers/corp", (_q, res) => json(res, 200, provider));
  w.server.overrides.set("PUT /api/v1/identity-providers/corp", (_q, res) =>
    json(res, 200, { ...provider, enabled: false }),
  );
  const r = await cli(["identity-providers", "put", "corp", "--disable"], w.env);
  t.equal(r.code, 0, r.stderr);
  const body = w.server.requests.at(-1)?.body as Record<string, unknown>;
  t.match(body, { issuer: "https://idp.example", client_id: "orch", enabled: false, rules: [{ name: "ops" }] });
  t.notOk("client_secret" in body, "the stored secret is kept (absent)");
});

t.test("sso test-mapping prints the rule that matched, or why none did", async (t) => {
  const w = await loggedIn(t);
  const claims = join(w.env.HOME, "claims.json");
  await writeFile(claims, JSON.stringify({ sub: "u1", email: "ann@example.com", groups: ["ops"] }));
  w.server.overrides.set("POST /api/v1/identity-providers/corp/test-mapping", (_q, res) =>
    json(res, 200, {
      matched: true,
      rule_index: 0,
      rule_name: "ops",
      role: "operator",
      agent_selector: "env=prod",
      reason: null,
      operator_name: "ann",
    }),
  );
  const r = await cli(["sso", "test-mapping", "--provider", "corp", "--claims", claims], w.env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /Matched ops \(rule 0\) of corp\noperator: ann\nrole:\s+operator\nscope:\s+env=prod/);
  t.same(w.server.requests.at(-1)?.body, { claims: { sub: "u1", email: "ann@example.com", groups: ["ops"] } });

  w.server.overrides.set("POST /api/v1/identity-providers/corp/test-mapping", (_q, res) =>
    json(res, 200, {
      matched: false,
      rule_index: null,
      rule_name: null,
      role: null,
      agent_selector: null,
      reason: "no rule matches groups [dev]",
      operator_name: "ann",
    }),
  );
  const none = await cli(["sso", "test-mapping", "--provider", "corp", "--claims", claims], w.env);
  t.match(none.stdout, /No rule of corp matches: no rule matches groups \[dev\]\nSign-in would be refused\./);
  const j = await cli(["--json", "sso", "test-mapping", "--provider", "corp", "--claims", claims], w.env);
  t.match(JSON.parse(j.stdout), { matched: false, reason: /dev/ });
});
