import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import t from "tap";
import { loadSigner, verifyEd25519 } from "../src/keys/index.js";
import { generateKeyFiles } from "../src/keys/keygen.js";
import { execFileP } from "./helpers/cli.js";

/** Raw public key via openssl alone: the last 32 bytes of the SPKI DER. */
async function opensslRawPub(keyPem: string): Promise<Buffer> {
  const { stdout } = await execFileP("openssl", ["pkey", "-in", keyPem, "-pubout", "-outform", "DER"], {
    encoding: "buffer",
  });
  return Buffer.from(stdout).subarray(-32);
}

t.test("openssl genpkey key: openssl signatures verify with our code, ours with openssl", async (t) => {
  const dir = t.testdir();
  const key = join(dir, "k.pem");
  const pubPem = join(dir, "pub.pem");
  const nonce = join(dir, "nonce.bin");
  const sigFile = join(dir, "sig.bin");
  await execFileP("openssl", ["genpkey", "-algorithm", "ed25519", "-out", key]);
  await execFileP("openssl", ["pkey", "-in", key, "-pubout", "-out", pubPem]);
  const data = randomBytes(32);
  await writeFile(nonce, data);

  const signer = await loadSigner({ key, env: {} });
  const raw = await opensslRawPub(key);
  t.equal(signer.publicKeyHex, raw.toString("hex"), "our public key hex equals openssl's");

  // openssl signs, we verify
  const { stdout: osig } = await execFileP("openssl", ["pkeyutl", "-sign", "-rawin", "-inkey", key, "-in", nonce], {
    encoding: "buffer",
  });
  t.equal(osig.length, 64);
  t.ok(verifyEd25519(signer.publicKeyHex, data, osig), "openssl's signature verifies with verifyEd25519");
  t.notOk(verifyEd25519(signer.publicKeyHex, randomBytes(32), osig), "but not over other data");

  // we sign, openssl verifies
  const ours = await signer.sign(data);
  t.same(Buffer.from(ours), Buffer.from(osig), "Ed25519 is deterministic: same signature as openssl");
  await writeFile(sigFile, ours);
  const { stdout } = await execFileP("openssl", [
    "pkeyutl",
    "-verify",
    "-rawin",
    "-pubin",
    "-inkey",
    pubPem,
    "-in",
    nonce,
    "-sigfile",
    sigFile,
  ]);
  t.match(stdout, /Signature Verified Successfully/);

  // and openssl rejects a wrong signature (so the check above can fail)
  const bad = Buffer.from(ours);
  bad[10]! ^= 1;
  await writeFile(sigFile, bad);
  await t.rejects(
    execFileP("openssl", [
      "pkeyutl",
      "-verify",
      "-rawin",
      "-pubin",
      "-inkey",
      pubPem,
      "-in",
      nonce,
      "-sigfile",
      sigFile,
    ]),
  );
});

t.test("orchctl keygen output is a PKCS#8 key openssl reads and signs with", async (t) => {
  const dir = t.testdir();
  const k = await generateKeyFiles(join(dir, "id_ed25519"));
  const pem = await readFile(k.privateKeyPath, "utf8");
  t.match(pem, /^-----BEGIN PRIVATE KEY-----\n[A-Za-z0-9+/=\n]+-----END PRIVATE KEY-----\n$/);
  t.equal(
    (await opensslRawPub(k.privateKeyPath)).toString("hex"),
    k.publicKeyHex,
    "openssl derives the same public key",
  );
  t.equal(await readFile(k.publicKeyPath, "utf8"), `${k.publicKeyHex}\n`);

  const data = randomBytes(32);
  const nonce = join(dir, "nonce.bin");
  await writeFile(nonce, data);
  const { stdout: osig } = await execFileP(
    "openssl",
    ["pkeyutl", "-sign", "-rawin", "-inkey", k.privateKeyPath, "-in", nonce],
    { encoding: "buffer" },
  );
  t.ok(verifyEd25519(k.publicKeyHex, data, osig));
});

t.test("encrypted PKCS#8 and non-Ed25519 PEM keys are refused clearly", async (t) => {
  const dir = t.testdir();
  const enc = join(dir, "enc.pem");
  await execFileP("openssl", ["genpkey", "-algorithm", "ed25519", "-aes-256-cbc", "-pass", "pass:secret", "-out", enc]);
  await t.rejects(loadSigner({ key: enc, env: {} }), { code: "key_encrypted" });
  const ec = join(dir, "ec.pem");
  await execFileP("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", ec]);
  await t.rejects(loadSigner({ key: ec, env: {} }), { code: "unsupported_key", message: /only Ed25519/ });
});
