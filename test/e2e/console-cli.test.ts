import t from "tap";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, startNats, startSystem } from "@orch/kit/testing";
import { cli } from "../../cli/test/helpers/cli.js";

// `orchctl console` against the real auth and gateway processes, the public URL a host name as
// deployed: the printed link names the console's origin and its code opens exactly one session.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const system = await startSystem({ owner: t, nats, db, services: ["auth", "gateway"], publicHost: "localhost" });
const dir = mkdtempSync(join(tmpdir(), "orch-console-cli-"));
const adminPem = join(dir, "admin.pem");
writeFileSync(adminPem, system.admin.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
const env = { ORCHCTL_HOME: join(dir, "home"), HOME: dir };
const orchctl = (...args: string[]) => cli(args, env);
const login = await orchctl("--server", system.url, "login", "--key", adminPem);
if (login.code !== 0) throw new Error(login.stderr);

const exchange = (code: string, origin: string) =>
  fetch(`${system.url}/api/v1/auth/console/exchange`, {
    method: "POST",
    headers: { "content-type": "application/json", origin },
    body: JSON.stringify({ code }),
    signal: AbortSignal.timeout(10_000),
  });

t.test("the printed link signs in once, from the console's origin only", async (t) => {
  const r = await orchctl("console", "--no-open");
  t.equal(r.code, 0, r.stderr);
  const [url, limits] = r.stdout.trimEnd().split("\n") as [string, string];
  t.match(url, new RegExp(`^${system.url.replace(/[.]/g, "\\.")}/login#code=\\S+$`), "the public URL's /login page");
  t.match(limits, /valid for 60 s, single use/);
  const code = decodeURIComponent(new URL(url).hash.slice("#code=".length));

  const foreign = await exchange(code, "https://evil.example");
  t.equal(foreign.status, 403, "another site cannot spend the code");
  t.equal(((await foreign.json()) as { code: string }).code, "origin_not_allowed");

  const first = await exchange(code, new URL(system.url).origin);
  t.equal(first.status, 200, "exchanged");
  const body = (await first.json()) as { operator: { role: string }; csrf_token: string };
  t.equal(body.operator.role, "admin", "the operator that asked");
  t.ok(body.csrf_token, "a console session");
  t.match(first.headers.get("set-cookie") ?? "", /orch_session=/);

  const again = await exchange(code, new URL(system.url).origin);
  t.equal(again.status, 401, "single use");
  t.equal(((await again.json()) as { code: string }).code, "invalid_login_code");
});

t.test("--json prints {url, expires_at} only", async (t) => {
  const r = await orchctl("--json", "console", "--no-open");
  t.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout) as { url: string; expires_at: string };
  t.same(Object.keys(doc).sort(), ["expires_at", "url"]);
  t.match(doc.url, /\/login#code=/);
  t.ok(Date.parse(doc.expires_at) > Date.now(), "not yet expired");
});
