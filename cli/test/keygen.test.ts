import { createPrivateKey, createPublicKey } from "node:crypto";
import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import t from "tap";
import { cli } from "./helpers/cli.js";

const mode = async (p: string) => (await stat(p)).mode & 0o777;

t.test("keygen writes a 0600 PKCS#8 key and a hex .pub in a 0700 home", async (t) => {
  const root = t.testdir();
  const home = join(root, "orchctl-home");
  const r = await cli(["keygen"], { HOME: root, ORCHCTL_HOME: home });
  t.equal(r.code, 0, r.stderr);
  const priv = join(home, "id_ed25519");
  t.equal(await mode(priv), 0o600, "private key mode 0600");
  t.equal(await mode(home), 0o700, "created home is 0700");

  const pubText = await readFile(`${priv}.pub`, "utf8");
  t.match(pubText, /^[0-9a-f]{64}\n$/, ".pub is hex + newline");
  const hex = pubText.trim();
  // the .pub must be the public half of the private key (checked with node:crypto directly)
  const der = createPublicKey(createPrivateKey(await readFile(priv, "utf8"))).export({ format: "der", type: "spki" });
  t.equal(der.subarray(-32).toString("hex"), hex);

  t.match(r.stdout, hex, "prints the public key");
  t.match(r.stdout, `orchctl operators add <name> --public-key ${hex}`, "prints the admin command");
});

t.test("keygen refuses to overwrite unless --force, --out chooses the path", async (t) => {
  const dir = t.testdir();
  const out = join(dir, "keys", "mine");
  const first = await cli(["keygen", "--out", out, "--json"], { HOME: dir });
  t.equal(first.code, 0, first.stderr);
  const j = JSON.parse(first.stdout);
  t.equal(j.private_key_path, out);
  t.equal(j.public_key_path, `${out}.pub`);
  t.equal(`${j.public_key}\n`, await readFile(`${out}.pub`, "utf8"));

  const before = await readFile(out, "utf8");
  const again = await cli(["keygen", "--out", out], { HOME: dir });
  t.equal(again.code, 1);
  t.match(again.stderr, /already exists; pass --force/);
  t.equal(await readFile(out, "utf8"), before, "key untouched");

  // a stale world-readable file is replaced by a 0600 one
  await writeFile(out, "old", { mode: 0o644 });
  const forced = await cli(["keygen", "--out", out, "--force"], { HOME: dir });
  t.equal(forced.code, 0, forced.stderr);
  t.not(await readFile(out, "utf8"), before);
  t.equal(await mode(out), 0o600);
});

t.test("an existing .pub alone also blocks keygen", async (t) => {
  const dir = t.testdir({ "k.pub": "abc\n" });
  const r = await cli(["keygen", "--out", join(dir, "k")], { HOME: dir });
  t.equal(r.code, 1);
  t.match(r.stderr, /k\.pub already exists/);
});
