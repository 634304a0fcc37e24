import t from "tap";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, startNats, startSystem } from "@orch/kit/testing";
import { cli, sshKeygen, startAgent } from "../../cli/test/helpers/cli.js";

// orchctl against the real gateway and auth processes, with every supported key source.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const system = await startSystem({ owner: t, nats, db, services: ["auth", "gateway"] });

const dir = mkdtempSync(join(tmpdir(), "orch-login-"));
const adminPem = join(dir, "admin.pem");
writeFileSync(adminPem, system.admin.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
const adminHome = join(dir, "admin-home");
const as = (home: string, args: string[], env: Record<string, string> = {}) =>
  cli(["--server", system.url, ...args], { ORCHCTL_HOME: home, HOME: dir, ...env });

t.test("the bootstrap admin logs in with a PKCS#8 key file", async (t) => {
  const r = await as(adminHome, ["login", "--key", adminPem]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /Logged in to .* as admin \(admin\)/);
  const who = await as(adminHome, ["--json", "whoami"]);
  t.equal(JSON.parse(who.stdout).role, "admin");
  const st = await as(adminHome, ["--json", "status"]);
  t.equal(JSON.parse(st.stdout).services.auth, "ok");
});

t.test("orchctl keygen + admin adds the operator + login", async (t) => {
  const home = join(dir, "alice");
  const kg = await as(home, ["keygen", "--out", join(dir, "alice.key")]);
  t.equal(kg.code, 0, kg.stderr);
  const add = await as(adminHome, ["--json", "operators", "add", "alice", "--public-key", join(dir, "alice.key.pub")]);
  t.equal(add.code, 0, add.stderr);
  t.equal(JSON.parse(add.stdout).role, "operator");
  const r = await as(home, ["login", "--key", join(dir, "alice.key")]);
  t.equal(r.code, 0, r.stderr);
  const who = await as(home, ["--json", "whoami"]);
  t.equal(JSON.parse(who.stdout).name, "alice");
  // An operator is refused on an admin command, with the API's problem code.
  const denied = await as(home, ["operators", "add", "mallory", "--public-key", join(dir, "alice.key.pub")]);
  t.equal(denied.code, 1);
  t.match(denied.stderr, /admin_required/);
});

t.test("a key made by ssh-keygen -t ed25519, directly and through ssh-agent", async (t) => {
  const key = await sshKeygen(join(dir, "id_ed25519"), { comment: "bob@laptop" });
  const add = await as(adminHome, ["operators", "add", "bob", "--public-key", `${key}.pub`]);
  t.equal(add.code, 0, add.stderr);
  const home = join(dir, "bob");
  const direct = await as(home, ["login", "--key", key]);
  t.equal(direct.code, 0, direct.stderr);
  t.match(direct.stdout, /as bob/);

  const agent = await startAgent();
  t.teardown(() => agent.stop());
  await agent.add(key);
  const viaAgent = await as(join(dir, "bob-agent"), ["login", "--ssh-agent"], { SSH_AUTH_SOCK: agent.sock });
  t.equal(viaAgent.code, 0, viaAgent.stderr);
  t.match(viaAgent.stdout, /as bob/);
});

t.test("a key pair from openssl genpkey, and a signature from openssl pkeyutl -rawin", async (t) => {
  const pem = join(dir, "carol.pem");
  execFileSync("openssl", ["genpkey", "-algorithm", "ed25519", "-out", pem]);
  const der = execFileSync("openssl", ["pkey", "-in", pem, "-pubout", "-outform", "DER"]);
  const pubHex = der.subarray(der.length - 32).toString("hex");
  t.equal((await as(adminHome, ["operators", "add", "carol", "--public-key", pubHex])).code, 0);
  const viaCli = await as(join(dir, "carol"), ["login", "--key", pem]);
  t.equal(viaCli.code, 0, viaCli.stderr);

  // The raw HTTP flow with openssl doing the signing: nothing of ours touches the key.
  const ch = await system.api("POST", "/api/v1/auth/challenge", { body: { public_key: pubHex } });
  t.equal(ch.status, 200);
  const nonceFile = join(dir, "nonce.bin");
  writeFileSync(nonceFile, Buffer.from(ch.body.nonce, "hex"));
  const sig = execFileSync("openssl", ["pkeyutl", "-sign", "-rawin", "-inkey", pem, "-in", nonceFile]);
  const v = await system.api("POST", "/api/v1/auth/verify", {
    body: { public_key: pubHex, nonce: ch.body.nonce, signature: sig.toString("hex") },
  });
  t.equal(v.status, 200, v.text);
  t.equal(v.body.operator.name, "carol");
  t.match(v.body.token, /^[A-Za-z0-9_-]{40,}$/);
});

t.test("session files are private; logout revokes the token", async (t) => {
  const mode = (await import("node:fs")).statSync(join(adminHome, "session.json")).mode & 0o777;
  t.equal(mode, 0o600);
  const token = JSON.parse(readFileSync(join(adminHome, "session.json"), "utf8")).token as string;
  t.equal((await as(adminHome, ["logout"])).code, 0);
  const after = await system.api("GET", "/api/v1/operators", { token });
  t.equal(after.status, 401);
});
