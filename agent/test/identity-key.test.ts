import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { createPrivateKey, createPublicKey, verify } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { nodeIdFromPublicKey } from "@orch/contracts";
import { KEY_FILE, loadOrCreateIdentity } from "../src/identity.js";
import { createAgentLogger } from "../src/log.js";

const lines: string[] = [];
const log = createAgentLogger("debug", (l) => void lines.push(l));

t.test("first start creates a 0600 PKCS#8 Ed25519 key; restarts keep the node id", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "orch-agent-id-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const a = loadOrCreateIdentity(join(dir, "nested"), log);
  const path = join(dir, "nested", KEY_FILE);
  t.equal(statSync(path).mode & 0o777, 0o600, "private key is owner-only");
  t.equal(statSync(join(dir, "nested")).mode & 0o777, 0o700, "data dir is owner-only");
  const pem = readFileSync(path, "utf8");
  t.match(pem, /^-----BEGIN PRIVATE KEY-----/, "PKCS#8 PEM");
  const priv = createPrivateKey(pem);
  t.equal(priv.asymmetricKeyType, "ed25519");

  const raw = Buffer.from(a.publicKeyHex, "hex");
  t.equal(a.nodeId, nodeIdFromPublicKey(raw), "node id derives from the public key");
  const sig = a.sign(Buffer.from("nonce"));
  t.ok(verify(null, Buffer.from("nonce"), createPublicKey(priv), sig), "signs with that key");

  const b = loadOrCreateIdentity(join(dir, "nested"), log);
  t.equal(b.nodeId, a.nodeId, "same node id after a restart");
  t.equal(readFileSync(path, "utf8"), pem, "the key file is not rewritten");
});

t.test("a key readable by others is tightened, a foreign key type is refused", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "orch-agent-id-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const a = loadOrCreateIdentity(dir, log);
  chmodSync(join(dir, KEY_FILE), 0o644);
  const b = loadOrCreateIdentity(dir, log);
  t.equal(b.nodeId, a.nodeId);
  t.equal(statSync(join(dir, KEY_FILE)).mode & 0o777, 0o600);
  t.ok(
    lines.some((l) => l.includes("readable by others")),
    "and says so",
  );

  const other = mkdtempSync(join(tmpdir(), "orch-agent-id-"));
  t.teardown(() => rmSync(other, { recursive: true, force: true }));
  const { generateKeyPairSync } = await import("node:crypto");
  const { writeFileSync } = await import("node:fs");
  writeFileSync(
    join(other, KEY_FILE),
    generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "pem", type: "pkcs8" }),
    { mode: 0o600 },
  );
  t.throws(() => loadOrCreateIdentity(other, log), /not an Ed25519 private key/);
});

t.test("two agents get different identities", async (t) => {
  const d1 = mkdtempSync(join(tmpdir(), "orch-agent-id-"));
  const d2 = mkdtempSync(join(tmpdir(), "orch-agent-id-"));
  t.teardown(() => {
    rmSync(d1, { recursive: true, force: true });
    rmSync(d2, { recursive: true, force: true });
  });
  t.not(loadOrCreateIdentity(d1, log).nodeId, loadOrCreateIdentity(d2, log).nodeId);
});
