// A secret read back through an encoding: the masking rule shared by the agent and the state
// service redacts a secret's value and its common encodings, wherever it sits in the output.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import t from "tap";
import { MIN_VARIANT_CHARS, SECRET_MASK, secretMasker, secretVariants } from "../src/secret-mask.js";

const SECRET = "Tr0ub4dor&3 horse/battery?";
const mask = secretMasker([SECRET]);
const b = Buffer.from(SECRET, "utf8");

t.test("the value and each common encoding is redacted", async (t) => {
  const forms: Record<string, string> = {
    plain: SECRET,
    base64: b.toString("base64"),
    "base64 unpadded": b.toString("base64").replace(/=+$/, ""),
    base64url: b.toString("base64url"),
    "base64url padded": b.toString("base64url") + "=".repeat((4 - (b.toString("base64url").length % 4)) % 4),
    "hex lower": b.toString("hex"),
    "hex upper": b.toString("hex").toUpperCase(),
    "url-encoded": encodeURIComponent(SECRET),
    "url-encoded lower-case escapes": encodeURIComponent(SECRET).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()),
    "form-encoded": encodeURIComponent(SECRET).replace(/%20/g, "+"),
    reversed: [...SECRET].reverse().join(""),
    "upper case": SECRET.toUpperCase(),
    "lower case": SECRET.toLowerCase(),
    rot13: "Ge0ho4qbe&3 ubefr/onggrel?",
    // `printf %s "$S" | base32`, the coreutils encoder (RFC 4648).
    base32: execFileSync("base32", ["-w0"], { input: b }).toString(),
    "base32 unpadded": execFileSync("base32", ["-w0"], { input: b }).toString().replace(/=+$/, ""),
    "base32 lower case": execFileSync("base32", ["-w0"], { input: b }).toString().toLowerCase(),
  };
  for (const [name, form] of Object.entries(forms)) {
    t.not(form, SECRET.slice(0, 0), name);
    const out = mask(`before ${form} after\n`);
    t.equal(out, `before ${SECRET_MASK} after\n`, name);
  }
});

t.test("base64 of the secret inside a longer text is redacted at any alignment", async (t) => {
  for (const prefix of ["", "x", "xy", "key=", "password: "]) {
    for (const suffix of ["", "\n", "!", "ab"]) {
      const enc = Buffer.from(`${prefix}${SECRET}${suffix}`).toString("base64");
      const out = mask(enc);
      t.ok(out.includes(SECRET_MASK), `${JSON.stringify(prefix)}…${JSON.stringify(suffix)} masked`);
      // What survives is at most the few characters that also encode the neighbouring bytes.
      const rest = out.replace(SECRET_MASK, "");
      t.ok(rest.length <= Math.ceil(((prefix.length + suffix.length) * 4) / 3) + 8, `only neighbours survive: ${out}`);
      t.notOk(Buffer.from(rest, "base64").toString("latin1").includes("horse"), "the value is not recoverable");
    }
  }
});

t.test("values shorter than the threshold are masked only as written", async (t) => {
  const short = "a".repeat(MIN_VARIANT_CHARS - 1);
  t.same(secretVariants(short), [short]);
  t.equal(secretMasker(["abc"])("YWJj cba abc"), `YWJj cba ${SECRET_MASK}`, "base64/reversed of 'abc' left alone");
  const atThreshold = "abcdefgh".slice(0, MIN_VARIANT_CHARS);
  t.ok(secretVariants(atThreshold).length > 5, "at the threshold the encodings are included");
  t.same(secretVariants(""), [], "empty masks nothing");
  t.equal(secretMasker([""])("unchanged"), "unchanged");
});

t.test("multi-line values are masked line by line; longest form first", async (t) => {
  const pem = "-----BEGIN KEY-----\nMIIBVwIBADANBgkqhkiG9w0BAQEFAASCAUEw\n-----END KEY-----";
  const diff = `+${pem.split("\n").join("\n+")}\n`;
  const out = secretMasker([pem])(diff);
  t.notOk(out.includes("MIIBVwIBADANBgkqhkiG9w0BAQEFAASCAUEw"));
  t.equal(secretMasker(["abcdef", "abcdefgh"])("xabcdefghx"), `x${SECRET_MASK}x`);
  const padded = b.toString("base64");
  t.equal(mask(padded), SECRET_MASK, "padded base64 replaced whole, no '=' left over");
});

t.test("ordinary output stays readable", async (t) => {
  const text = `Reading package lists... Done\nsha256 ${createHash("sha256").update("x").digest("hex")}\n`;
  t.equal(mask(text), text);
});
