import { createPublicKey, randomBytes, verify } from "node:crypto";
import { chmod, copyFile, readFile } from "node:fs/promises";
import { join } from "node:path";
import t from "tap";
import { agentSign, listAgentIdentities } from "../src/keys/agent.js";
import { loadSigner, loadSigners } from "../src/keys/index.js";
import { ed25519Blob } from "../src/keys/openssh.js";
import { execFileP, rawFromOpenSshPubLine, sshKeygen, startAgent } from "./helpers/cli.js";

const SPKI = Buffer.from("302a300506032b6570032100", "hex");
const nodeVerify = (raw: Buffer, data: Buffer, sig: Uint8Array) =>
  verify(null, data, createPublicKey({ key: Buffer.concat([SPKI, raw]), format: "der", type: "spki" }), sig);

t.test("signing through a real ssh-agent", async (t) => {
  const agent = await startAgent();
  t.teardown(() => agent.stop());
  const dir = t.testdir();
  const keyA = await sshKeygen(join(dir, "a"), { comment: "key-a" });
  const keyB = await sshKeygen(join(dir, "b"), { passphrase: "pw-b", comment: "key-b" });
  const rsa = await sshKeygen(join(dir, "r"), { type: "rsa", comment: "key-rsa" });
  const pubA = rawFromOpenSshPubLine(await readFile(`${keyA}.pub`, "utf8"));
  const pubB = rawFromOpenSshPubLine(await readFile(`${keyB}.pub`, "utf8"));
  const env = { SSH_AUTH_SOCK: agent.sock };

  await t.rejects(
    loadSigner({ sshAgent: true, env }),
    { code: "agent_key_missing", message: /holds no Ed25519 keys/ },
    "empty agent",
  );

  await agent.add(rsa);
  await agent.add(keyA);
  const ids = await listAgentIdentities(agent.sock);
  t.same(
    ids.map((i) => [i.type, i.comment]).sort(),
    [
      ["ssh-ed25519", "key-a"],
      ["ssh-rsa", "key-rsa"],
    ].sort(),
  );

  await t.test("protocol level: sign request returns a plain Ed25519 signature of the data", async (t) => {
    const data = randomBytes(32);
    const sig = await agentSign(agent.sock, ed25519Blob(pubA), data);
    t.equal(sig.length, 64);
    t.ok(nodeVerify(pubA, data, sig));
    await t.rejects(
      agentSign(agent.sock, ed25519Blob(randomBytes(32)), data),
      { code: "agent_refused" },
      "unknown key → agent failure",
    );
  });

  await t.test("loadSigner --ssh-agent with one ed25519 identity", async (t) => {
    const signer = await loadSigner({ sshAgent: true, env });
    t.equal(signer.publicKeyHex, pubA.toString("hex"));
    t.match(signer.source, /ssh-agent \(key-a\)/);
    const data = randomBytes(32);
    t.ok(nodeVerify(pubA, data, await signer.sign(data)));
  });

  // A passphrase-protected key is usable once it is in the agent; ssh-add needs the passphrase,
  // so add an unencrypted copy of the same key (same public key) instead.
  const keyBPlain = join(dir, "b-plain");
  await copyFile(keyB, keyBPlain);
  await chmod(keyBPlain, 0o600);
  await execFileP("ssh-keygen", ["-p", "-P", "pw-b", "-N", "", "-f", keyBPlain]);
  await agent.add(keyBPlain);

  await t.test("several ed25519 identities: loadSigner lists them, loadSigners returns all", async (t) => {
    await t.rejects(loadSigner({ sshAgent: true, env }), {
      code: "ambiguous_key",
      message: new RegExp(`${pubA.toString("hex")}[\\s\\S]*${pubB.toString("hex")}`),
    });
    const all = await loadSigners({ sshAgent: true, env });
    t.same(all.map((s) => s.publicKeyHex).sort(), [pubA.toString("hex"), pubB.toString("hex")].sort());
  });

  await t.test("--key <file.pub> picks the identity", async (t) => {
    for (const [pubFile, raw] of [
      [`${keyB}.pub`, pubB],
      [`${keyA}.pub`, pubA],
    ] as const) {
      const s = await loadSigner({ key: pubFile, env });
      t.equal(s.publicKeyHex, raw.toString("hex"), `${pubFile} without --ssh-agent`);
      const s2 = await loadSigner({ key: pubFile, sshAgent: true, env });
      t.equal(s2.publicKeyHex, raw.toString("hex"), `${pubFile} with --ssh-agent`);
      const data = randomBytes(32);
      t.ok(nodeVerify(raw, data, await s.sign(data)));
    }
  });

  await t.test("--ssh-agent --key <encrypted private key> uses its public header", async (t) => {
    const s = await loadSigner({ key: keyB, sshAgent: true, env });
    t.equal(s.publicKeyHex, pubB.toString("hex"));
  });

  await t.test("default ~/.ssh/id_ed25519 that is encrypted falls back to the agent", async (t) => {
    const home = t.testdir({ ".ssh": {} });
    await copyFile(keyB, join(home, ".ssh", "id_ed25519"));
    const s = await loadSigner({ env: { ...env, HOME: home }, home: join(home, "orchctl") });
    t.equal(s.publicKeyHex, pubB.toString("hex"));
    t.match(s.source, /ssh-agent/);
  });

  await t.test("explicit encrypted key without --ssh-agent still errors", async (t) => {
    await t.rejects(loadSigner({ key: keyB, env }), { code: "key_encrypted" });
  });

  await t.test("a .pub whose key is not in the agent", async (t) => {
    const other = await sshKeygen(join(dir, "other"));
    await t.rejects(loadSigner({ key: `${other}.pub`, env }), { code: "agent_key_missing" });
  });

  await t.test("no agent: public key without SSH_AUTH_SOCK, dead socket", async (t) => {
    await t.rejects(loadSigner({ key: `${keyA}.pub`, env: {} }), {
      code: "agent_unavailable",
      message: /SSH_AUTH_SOCK is not set/,
    });
    await t.rejects(loadSigner({ sshAgent: true, env: { SSH_AUTH_SOCK: join(dir, "nope.sock") } }), {
      code: "agent_unavailable",
    });
  });
});
