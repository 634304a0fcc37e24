import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import t from "tap";
import { cli, rawFromOpenSshPubLine, sshKeygen, startAgent, execFileP } from "./helpers/cli.js";
import { loggedIn, world } from "./helpers/setup.js";
import { TestServer } from "./helpers/server.js";

const mode = async (p: string) => (await stat(p)).mode & 0o777;
const sessionOf = async (home: string) => JSON.parse(await readFile(join(home, "session.json"), "utf8"));

t.test("login with an orchctl keygen key stores a 0600 session; whoami uses it", async (t) => {
  const w = await world(t);
  t.equal((await cli(["keygen"], w.env)).code, 0);
  const hex = (await readFile(join(w.home, "id_ed25519.pub"), "utf8")).trim();
  w.server.addOperator("alice", hex, "admin");

  const r = await cli(["login", "--server", w.server.url], w.env);
  t.equal(r.code, 0, r.stderr);
  t.match(
    r.stdout,
    new RegExp(`^Logged in to ${w.server.url} as alice \\(admin\\), token expires \\d{4}-\\d\\d-\\d\\dT`),
  );

  // the server really verified an Ed25519 signature over the raw nonce bytes
  const verifyReq = w.server.requests.find((q) => q.path === "/api/v1/auth/verify");
  t.match(verifyReq?.body, { public_key: hex, nonce: /^[0-9a-f]{64}$/, signature: /^[0-9a-f]{128}$/ });

  const s = await sessionOf(w.home);
  t.equal(s.server, w.server.url);
  t.type(s.token, "string");
  t.ok(w.server.tokens.has(s.token), "stored token is the one the server issued");
  t.match(s, { expires_at: String, operator: { name: "alice", role: "admin", public_key: hex } });
  t.equal(await mode(join(w.home, "session.json")), 0o600, "session.json is 0600");
  t.equal(await mode(w.home), 0o700, "home is 0700");

  // no --server: the session's server is used, with the bearer token
  const who = await cli(["whoami"], w.env);
  t.equal(who.code, 0, who.stderr);
  t.match(who.stdout, /name:\s+alice/);
  t.match(who.stdout, /role:\s+admin/);
  t.equal(w.server.requests.at(-1)?.authorization, `Bearer ${s.token}`);

  const whoJson = await cli(["whoami", "--json"], w.env);
  t.match(JSON.parse(whoJson.stdout), { name: "alice", role: "admin", public_key: hex });

  const lj = await cli(["--json", "login"], w.env);
  t.equal(lj.code, 0, lj.stderr);
  const doc = JSON.parse(lj.stdout);
  t.match(doc, { server: w.server.url, operator: { name: "alice" } });
  t.notOk("token" in doc, "the token is not printed");
});

t.test("login with an ssh-keygen OpenSSH key and with an openssl PEM key", async (t) => {
  const w = await world(t);
  const ssh = await sshKeygen(join(w.env.HOME, "ssh_key"));
  const sshHex = rawFromOpenSshPubLine(await readFile(`${ssh}.pub`, "utf8")).toString("hex");
  w.server.addOperator("bob", sshHex);
  const r1 = await cli(["login", "--server", w.server.url, "--key", ssh], w.env);
  t.equal(r1.code, 0, r1.stderr);
  t.match(r1.stdout, /as bob \(operator\)/);

  const pem = join(w.env.HOME, "k.pem");
  await execFileP("openssl", ["genpkey", "-algorithm", "ed25519", "-out", pem]);
  const { stdout: der } = await execFileP("openssl", ["pkey", "-in", pem, "-pubout", "-outform", "DER"], {
    encoding: "buffer",
  });
  w.server.addOperator("carol", Buffer.from(der).subarray(-32).toString("hex"));
  const r2 = await cli(["login", "--key", pem], w.env);
  t.equal(r2.code, 0, r2.stderr);
  t.match(r2.stdout, /as carol/);
  t.equal((await sessionOf(w.home)).operator.name, "carol");
});

t.test("default key: ~/.ssh/id_ed25519 when <home>/id_ed25519 is absent; none → clear error", async (t) => {
  const w = await world(t);
  const none = await cli(["login", "--server", w.server.url], w.env);
  t.equal(none.code, 1);
  t.match(none.stderr, /error: no key found .*run orchctl keygen/);

  await mkdir(join(w.env.HOME, ".ssh"), { mode: 0o700 });
  const key = await sshKeygen(join(w.env.HOME, ".ssh", "id_ed25519"));
  const hex = rawFromOpenSshPubLine(await readFile(`${key}.pub`, "utf8")).toString("hex");
  w.server.addOperator("dave", hex);
  const r = await cli(["login", "--server", w.server.url], w.env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /as dave/);
});

t.test("unregistered key: refused at the challenge, the key and the fix printed, exit 1, no session", async (t) => {
  const w = await world(t);
  const key = JSON.parse((await cli(["keygen", "--json"], w.env)).stdout) as {
    public_key: string;
    private_key_path: string;
  };
  const r = await cli(["login", "--server", w.server.url], w.env);
  t.equal(r.code, 1);
  t.equal(
    r.stderr,
    `error: ${w.server.url} has no active operator with the public key ${key.public_key} (${key.private_key_path}); ` +
      `an admin adds one with \`orchctl operators add <name> --public-key ${key.public_key}\` (unknown_operator)\n`,
  );
  t.equal(r.stdout, "");
  await t.rejects(stat(join(w.home, "session.json")));
  t.notOk(
    w.server.requests.some((q) => q.path === "/api/v1/auth/verify"),
    "nothing signed for a refused key",
  );

  const j = await cli(["login", "--server", w.server.url, "--json"], w.env);
  t.equal(j.code, 1);
  t.same(
    JSON.parse(j.stdout),
    {
      type: "https://orch.example/problems/unknown_operator",
      title: "unknown operator",
      status: 401,
      detail: "unknown or inactive operator",
      code: "unknown_operator",
    },
    "--json: the server's problem as sent",
  );
});

t.test("login --ssh-agent tries each Ed25519 identity until the server accepts one", async (t) => {
  const agent = await startAgent();
  t.teardown(() => agent.stop());
  const w = await world(t);
  const env = { ...w.env, SSH_AUTH_SOCK: agent.sock };
  const k1 = await sshKeygen(join(w.env.HOME, "k1"), { comment: "first" });
  const k2 = await sshKeygen(join(w.env.HOME, "k2"), { comment: "second" });
  await agent.add(k1);
  await agent.add(k2);
  const hex1 = rawFromOpenSshPubLine(await readFile(`${k1}.pub`, "utf8")).toString("hex");
  const hex2 = rawFromOpenSshPubLine(await readFile(`${k2}.pub`, "utf8")).toString("hex");

  const rejected = await cli(["login", "--ssh-agent", "--server", w.server.url], env);
  t.equal(rejected.code, 1);
  t.match(rejected.stderr, /accepted none of the 2 Ed25519 keys in ssh-agent/);
  t.match(rejected.stderr, hex1);
  t.match(rejected.stderr, hex2);

  w.server.addOperator("erin", hex2);
  const before = w.server.requests.length;
  const r = await cli(["login", "--ssh-agent", "--server", w.server.url], env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /as erin/);
  const keysTo = (path: string) =>
    w.server.requests
      .slice(before)
      .filter((q) => q.path === path)
      .map((q) => (q.body as { public_key: string }).public_key);
  t.same(keysTo("/api/v1/auth/challenge"), [hex1, hex2], "tried first, then second");
  t.same(keysTo("/api/v1/auth/verify"), [hex2], "the agent signs only for the accepted key");

  // --key <.pub> selects the identity directly
  const before2 = w.server.requests.length;
  const r2 = await cli(["login", "--key", `${k2}.pub`], env);
  t.equal(r2.code, 0, r2.stderr);
  t.equal(w.server.requests.slice(before2).filter((q) => q.path === "/api/v1/auth/verify").length, 1);
});

t.test("server choice: --server > session server > default; tokens stay with their server", async (t) => {
  const w = await loggedIn(t);
  const other = new TestServer();
  await other.start();
  t.teardown(() => other.stop());

  const r = await cli(["whoami", "--server", other.url], w.env);
  t.equal(r.code, 1);
  t.match(r.stderr, `logged in to ${w.server.url}, not ${other.url}`);
  t.equal(other.requests.length, 0, "the token was not sent to another server");

  const viaEnv = await cli(["status"], { ...w.env, ORCH_URL: other.url });
  t.equal(viaEnv.code, 0, viaEnv.stderr);
  t.equal(other.requests.length, 1, "ORCH_URL counts as an explicit server");
  t.equal(other.requests[0]?.authorization, undefined, "and gets no token");

  const status = await cli(["status"], w.env);
  t.equal(status.code, 0);
  t.equal(w.server.requests.at(-1)?.path, "/api/v1/status", "without --server, the session's server");
});

t.test("expired or revoked sessions", async (t) => {
  const w = await loggedIn(t);
  const s = await sessionOf(w.home);

  w.server.tokens.delete(s.token); // revoked server-side
  const r = await cli(["whoami"], w.env);
  t.equal(r.code, 1);
  t.equal(r.stderr, "error: session expired or revoked; run orchctl login (unauthenticated)\n");
  const j = await cli(["whoami", "--json"], w.env);
  t.match(JSON.parse(j.stdout), { status: 401, code: "unauthenticated" });

  // expired locally: no request is made
  await writeFile(join(w.home, "session.json"), JSON.stringify({ ...s, expires_at: "2000-01-01T00:00:00Z" }));
  const n = w.server.requests.length;
  const e = await cli(["operators", "list"], w.env);
  t.equal(e.code, 1);
  t.match(e.stderr, /session expired or revoked; run orchctl login/);
  t.equal(w.server.requests.length, n);
});

t.test("logout revokes the token and deletes session.json", async (t) => {
  const w = await loggedIn(t);
  const s = await sessionOf(w.home);
  const r = await cli(["logout"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, `Logged out of ${w.server.url}`);
  t.notOk(w.server.tokens.has(s.token), "server revoked the token");
  t.equal(w.server.requests.at(-1)?.authorization, `Bearer ${s.token}`);
  await t.rejects(stat(join(w.home, "session.json")), { code: "ENOENT" });

  const who = await cli(["whoami"], w.env);
  t.match(who.stderr, /not logged in; run orchctl login/);
  const again = await cli(["logout", "--json"], w.env);
  t.equal(again.code, 0);
  t.same(JSON.parse(again.stdout), { logged_out: false, reason: "not logged in" });
});

t.test("logout with an already revoked token still clears the session", async (t) => {
  const w = await loggedIn(t);
  w.server.tokens.clear();
  const r = await cli(["logout"], w.env);
  t.equal(r.code, 0, r.stderr);
  await t.rejects(stat(join(w.home, "session.json")));
});
