// Barrier tests in the style of Vault's (vault/barrier_aes_gcm_test.go): what is stored is not the
// plaintext, every write is fresh, any tampering or relocation fails, and keys rotate.
import { randomBytes } from "node:crypto";
import t, { type Test } from "tap";
import { KeyringError, parseKeyring, type Sealed } from "../src/keyring.js";

const key = () => randomBytes(32).toString("base64");
const k1 = key();
const k2 = key();

const flip = (b: Buffer, i: number) => {
  const c = Buffer.from(b);
  c[i % c.length]! ^= 0x01;
  return c;
};
const failsWith = (t: Test, fn: () => unknown, reason: string) => {
  try {
    fn();
    t.fail("expected a KeyringError");
  } catch (err) {
    t.ok(err instanceof KeyringError, "KeyringError");
    t.equal((err as KeyringError).reason, reason);
  }
};

t.test("ciphertext is not the plaintext, and round-trips", async (t) => {
  const ring = parseKeyring(`a:${k1}`);
  const plain = "correct horse battery staple";
  const s = ring.seal("db.password", plain);
  t.equal(s.keyId, "a");
  t.equal(s.nonce.length, 12, "96-bit nonce");
  t.equal(s.tag.length, 16, "128-bit tag");
  t.notOk(s.ciphertext.includes(Buffer.from(plain)), "plaintext bytes absent from the ciphertext");
  t.notOk(s.ciphertext.toString("latin1").includes(plain));
  t.equal(ring.open("db.password", s), plain);
});

t.test("two writes of the same value differ (fresh nonce each time)", async (t) => {
  const ring = parseKeyring(`a:${k1}`);
  const a = ring.seal("x", "same");
  const b = ring.seal("x", "same");
  t.not(a.nonce.toString("hex"), b.nonce.toString("hex"));
  t.not(a.ciphertext.toString("hex") + a.tag.toString("hex"), b.ciphertext.toString("hex") + b.tag.toString("hex"));
  t.equal(ring.open("x", a), "same");
  t.equal(ring.open("x", b), "same");
});

t.test("a flipped bit anywhere fails to decrypt", async (t) => {
  const ring = parseKeyring(`a:${k1}`);
  const s = ring.seal("x", "some secret value");
  for (let i = 0; i < s.ciphertext.length; i++)
    failsWith(t, () => ring.open("x", { ...s, ciphertext: flip(s.ciphertext, i) }), "decrypt_failed");
  for (let i = 0; i < 12; i++) failsWith(t, () => ring.open("x", { ...s, nonce: flip(s.nonce, i) }), "decrypt_failed");
  for (let i = 0; i < 16; i++) failsWith(t, () => ring.open("x", { ...s, tag: flip(s.tag, i) }), "decrypt_failed");
  failsWith(t, () => ring.open("x", { ...s, tag: s.tag.subarray(0, 12) }), "decrypt_failed");
  failsWith(t, () => ring.open("x", { ...s, ciphertext: s.ciphertext.subarray(1) }), "decrypt_failed");
});

t.test("a ciphertext moved to another name fails (the name is the additional data)", async (t) => {
  const ring = parseKeyring(`a:${k1}`);
  const s = ring.seal("prod.db", "p4ss");
  failsWith(t, () => ring.open("staging.db", s), "decrypt_failed");
  failsWith(t, () => ring.open("prod.db ", s), "decrypt_failed");
  t.equal(ring.open("prod.db", s), "p4ss");
});

t.test(
  "rotation: a new active key first keeps old secrets readable; the old key alone cannot read new ones",
  async (t) => {
    const old = parseKeyring(`a:${k1}`);
    const sealedOld = old.seal("x", "v1");
    const rotated = parseKeyring(`b:${k2},a:${k1}`);
    t.equal(rotated.active, "b");
    t.same(rotated.ids, ["b", "a"]);
    t.equal(rotated.open("x", sealedOld), "v1", "old secret still reads");
    const sealedNew = rotated.seal("x", "v2");
    t.equal(sealedNew.keyId, "b", "new writes use the active key");
    failsWith(t, () => old.open("x", sealedNew), "unknown_key");
    // Re-encryption then removal of the old key:
    const moved: Sealed = rotated.seal("x", rotated.open("x", sealedOld));
    const onlyNew = parseKeyring(`b:${k2}`);
    t.equal(onlyNew.open("x", moved), "v1");
    failsWith(t, () => onlyNew.open("x", sealedOld), "unknown_key");
  },
);

t.test("a key id pointing at other key material fails to decrypt", async (t) => {
  const s = parseKeyring(`a:${k1}`).seal("x", "v");
  failsWith(t, () => parseKeyring(`a:${k2}`).open("x", s), "decrypt_failed");
});

t.test("values up to 64 KiB and multi-byte text round-trip", async (t) => {
  const ring = parseKeyring(`a:${k1}`);
  const big = "é".repeat(32 * 1024);
  t.equal(ring.open("big", ring.seal("big", big)), big);
  t.equal(ring.open("u", ring.seal("u", "🔑 ключ")), "🔑 ключ");
});

t.test("keyring parsing fails with clear messages that never contain key material", async (t) => {
  const short = randomBytes(16).toString("base64");
  const cases: Array<[string, RegExp]> = [
    ["", /no encryption key configured: set ORCH_SECRETS_KEYS/],
    [" , ", /no encryption key configured/],
    [k1, /key entry 1: expected 'id:base64key'/],
    [`a:${short}`, /key 'a': the key must be 32 bytes/],
    [`a:not base64!`, /key 'a': the key must be 32 bytes/],
    [`a:${k1},a:${k2}`, /key entry 2: duplicate key id 'a'/],
    [`bad id:${k1}`, /key entry 1/],
  ];
  for (const [spec, re] of cases) {
    try {
      parseKeyring(spec);
      t.fail(`accepted ${JSON.stringify(spec)}`);
    } catch (err) {
      const msg = (err as Error).message;
      t.match(msg, re);
      for (const secret of [k1, k2, short]) t.notOk(msg.includes(secret), "message omits the key");
    }
  }
  t.equal(
    parseKeyring(` a:${k1} , b:${Buffer.from(k2, "base64").toString("base64url")} `).ids.length,
    2,
    "spaces and URL-safe base64 accepted",
  );
});

t.test("a keyring serialises and inspects without key material", async (t) => {
  const ring = parseKeyring(`a:${k1},b:${k2}`);
  const json = JSON.stringify({ ring });
  t.same(JSON.parse(json), { ring: { active: "a", ids: ["a", "b"] } });
  const shown = (await import("node:util")).inspect(ring, { depth: 10, showHidden: true });
  for (const k of [k1, k2]) {
    const raw = Buffer.from(k, "base64");
    t.notOk(shown.includes(k) || shown.includes(raw.toString("hex")), "inspect shows no key");
  }
});
