import { createPublicKey, randomBytes, verify } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import t from "tap";
import { loadSigner } from "../src/keys/index.js";
import { parseOpenSshPrivateKey } from "../src/keys/openssh.js";
import { rawFromOpenSshPubLine, sshKeygen } from "./helpers/cli.js";

const SPKI = Buffer.from("302a300506032b6570032100", "hex");
const pubKeyObject = (raw: Buffer) => createPublicKey({ key: Buffer.concat([SPKI, raw]), format: "der", type: "spki" });

t.test("ssh-keygen ed25519 key: parse, sign 32 random bytes, verify against the .pub file", async (t) => {
  const dir = t.testdir();
  const key = await sshKeygen(join(dir, "id_ed25519"), { comment: "alice@laptop" });
  const pub = rawFromOpenSshPubLine(await readFile(`${key}.pub`, "utf8"));

  const parsed = parseOpenSshPrivateKey(await readFile(key, "utf8"));
  t.equal(parsed.encrypted, false);
  t.equal(parsed.comment, "alice@laptop");
  t.equal(parsed.seed?.length, 32);
  t.same(parsed.publicKey, pub, "public key from the private section matches the .pub file");

  const signer = await loadSigner({ key, env: {} });
  t.equal(signer.publicKeyHex, pub.toString("hex"), "publicKeyHex is the raw 32 bytes in hex");
  for (let i = 0; i < 3; i++) {
    const data = randomBytes(32);
    const sig = await signer.sign(data);
    t.equal(sig.length, 64);
    t.ok(verify(null, data, pubKeyObject(pub), sig), "node:crypto verifies the signature with the .pub key");
    const tampered = Buffer.from(data);
    tampered[0]! ^= 1;
    t.notOk(verify(null, tampered, pubKeyObject(pub), sig), "and rejects it for other data");
  }
});

t.test("encrypted OpenSSH key: clear error pointing at ssh-agent", async (t) => {
  const dir = t.testdir();
  const key = await sshKeygen(join(dir, "id_ed25519"), { passphrase: "correct horse" });
  const parsed = parseOpenSshPrivateKey(await readFile(key, "utf8"));
  t.equal(parsed.encrypted, true);
  t.equal(parsed.seed, undefined);
  await t.rejects(loadSigner({ key, env: {} }), {
    code: "key_encrypted",
    message: /passphrase.*ssh-add.*--ssh-agent/s,
  });
});

t.test("non-Ed25519 OpenSSH key is refused", async (t) => {
  const dir = t.testdir();
  const key = await sshKeygen(join(dir, "id_rsa"), { type: "rsa" });
  await t.rejects(loadSigner({ key, env: {} }), { code: "unsupported_key", message: /only Ed25519.*ssh-rsa/ });
});

t.test("corrupted OpenSSH key is detected", async (t) => {
  const dir = t.testdir();
  const key = await sshKeygen(join(dir, "id_ed25519"));
  const text = await readFile(key, "utf8");
  const lines = text.trim().split("\n");
  const body = Buffer.from(lines.slice(1, -1).join(""), "base64");
  body[body.length - 40]! ^= 0xff; // inside the private section
  const broken = `${lines[0]}\n${body.toString("base64")}\n${lines.at(-1)}\n`;
  t.throws(() => parseOpenSshPrivateKey(broken), { code: "bad_key" });
  t.throws(
    () => parseOpenSshPrivateKey("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n"),
    { code: "bad_key" },
  );
});
