import { generateKeyPairSync } from "node:crypto";
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import {
  loadReleasePublicKey,
  loadReleaseSigningKey,
  readReleaseCatalog,
  releasePublicKeyPem,
  signManifest,
  signReleaseDir,
  verifyManifest,
} from "../src/index.js";

const manifest = (version: string, extra: Record<string, unknown> = {}) =>
  `${JSON.stringify(
    {
      schema: 1,
      name: "orch-agent",
      version,
      node_version: "v24.11.1",
      created_at: "2026-11-24T12:00:00.000Z",
      packages: [
        {
          file: `orch-agent-${version}-linux-amd64.tar.gz`,
          kind: "tar",
          arch: "amd64",
          sha256: "a".repeat(64),
          size: 10,
        },
      ],
      ...extra,
    },
    null,
    2,
  )}\n`;

t.test("readReleaseCatalog reads valid versions, skips junk, picks the latest", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "releases-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // The signature's content is the gateway's business; here only that there is one.
  const put = async (name: string, text?: string, sig = "c2ln\n") => {
    await mkdir(join(dir, name), { recursive: true });
    if (text !== undefined) await writeFile(join(dir, name, "manifest.json"), text);
    if (sig) await writeFile(join(dir, name, "manifest.json.sig"), sig);
  };
  await put("0.1.0", manifest("0.1.0"));
  await put("0.10.0", manifest("0.10.0"));
  await put("0.9.0", manifest("0.9.0"));
  await put("1.0.0-rc.1", manifest("1.0.0-rc.1"));
  await put("0.11.0", manifest("0.12.0")); // name ≠ version
  await put("0.13.0", "{not json");
  await put("0.14.0"); // no manifest
  await put("0.15.0", manifest("0.15.0", { schema: 2 }));
  await put("0.20.0", manifest("0.20.0"), ""); // not signed: not published
  await put("0.21.0", manifest("0.21.0"), "x".repeat(2000)); // not a signature
  await put("latest", manifest("0.16.0"));
  await put("..hidden", manifest("0.17.0"));
  await writeFile(join(dir, "0.18.0"), "a file, not a directory");
  const unreadable = join(dir, "0.19.0");
  await put("0.19.0", manifest("0.19.0"));
  await chmod(join(unreadable, "manifest.json"), 0);

  const cat = await readReleaseCatalog(dir);
  const expected = ["0.1.0", "0.10.0", "0.9.0", "1.0.0-rc.1"];
  // root reads a mode-0 file anyway: then 0.19.0 is a valid release too.
  if (cat.versions.has("0.19.0")) expected.push("0.19.0");
  t.same([...cat.versions.keys()].sort(), expected.sort());
  t.equal(cat.latest, "1.0.0-rc.1", "by compareVersions, not by name");
  const e = cat.versions.get("0.10.0")!;
  t.equal(e.dir, join(dir, "0.10.0"));
  t.equal(e.bytes.toString(), manifest("0.10.0"), "bytes as on disk");
  t.equal(e.sig, "c2ln", "the stored signature, trimmed");
  t.equal(e.manifest.packages[0]!.file, "orch-agent-0.10.0-linux-amd64.tar.gz");
});

t.test("readReleaseCatalog: missing or unset dir is empty", async (t) => {
  for (const d of ["", "/nonexistent/orch-releases"]) {
    const cat = await readReleaseCatalog(d);
    t.equal(cat.versions.size, 0);
    t.equal(cat.latest, undefined);
  }
});

t.test("sign and verify manifests; loadReleaseSigningKey refuses what is not Ed25519 PKCS#8", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "release-key-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { privateKey } = generateKeyPairSync("ed25519");
  const file = join(dir, "release.key");
  await writeFile(file, privateKey.export({ type: "pkcs8", format: "pem" }));
  const key = await loadReleaseSigningKey(file);
  const pub = releasePublicKeyPem(key);
  t.match(pub, /^-----BEGIN PUBLIC KEY-----\n/);

  const bytes = Buffer.from(manifest("0.1.0"));
  const sig = signManifest(bytes, key);
  t.equal(Buffer.from(sig, "base64").length, 64);
  t.ok(verifyManifest(bytes, sig, pub), "valid");
  t.ok(verifyManifest(bytes, `${sig}\n`, pub), "trailing newline tolerated");
  const tampered = Buffer.from(bytes);
  tampered[10] = (tampered[10] ?? 0) ^ 1;
  t.notOk(verifyManifest(tampered, sig, pub), "tampered bytes");
  const other = releasePublicKeyPem(generateKeyPairSync("ed25519").privateKey);
  t.notOk(verifyManifest(bytes, sig, other), "other key");
  t.notOk(verifyManifest(bytes, "not base64 !!", pub), "junk signature");
  t.notOk(verifyManifest(bytes, sig, "not a pem"), "junk key");
  const rsaPub = generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey.export({ type: "spki", format: "pem" });
  t.notOk(verifyManifest(bytes, sig, rsaPub.toString()), "not an Ed25519 key");

  await t.rejects(loadReleaseSigningKey(join(dir, "missing.key")), /cannot read/);
  await writeFile(join(dir, "junk.key"), "hello");
  await t.rejects(loadReleaseSigningKey(join(dir, "junk.key")), /not a PEM private key/);
  const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey;
  await writeFile(join(dir, "rsa.key"), rsa.export({ type: "pkcs8", format: "pem" }));
  await t.rejects(loadReleaseSigningKey(join(dir, "rsa.key")), /rsa key, expected Ed25519/);
});

t.test(
  "signReleaseDir writes the signature beside the manifest; loadReleasePublicKey refuses a private key",
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), "release-sign-"));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const vdir = join(dir, "0.1.0");
    await mkdir(vdir);
    await writeFile(join(vdir, "manifest.json"), manifest("0.1.0"));
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const sig = await signReleaseDir(vdir, privateKey);
    t.equal(await readFile(join(vdir, "manifest.json.sig"), "utf8"), `${sig}\n`);
    t.same((await readdir(vdir)).sort(), ["manifest.json", "manifest.json.sig"], "no temporary file left");
    const pubPem = publicKey.export({ type: "spki", format: "pem" }).toString();
    t.ok(verifyManifest(Buffer.from(manifest("0.1.0")), sig, pubPem));
    // Rotation: signing again with a new key replaces the signature.
    const next = generateKeyPairSync("ed25519");
    const sig2 = await signReleaseDir(vdir, next.privateKey);
    t.not(sig2, sig);
    t.equal((await readReleaseCatalog(dir)).versions.get("0.1.0")?.sig, sig2);

    const pubFile = join(dir, "release.pub");
    await writeFile(pubFile, pubPem);
    t.equal(await loadReleasePublicKey(pubFile), pubPem);
    const keyFile = join(dir, "release.key");
    await writeFile(keyFile, privateKey.export({ type: "pkcs8", format: "pem" }));
    await t.rejects(loadReleasePublicKey(keyFile), /this is a PRIVATE key; give the public key only/);
    await t.rejects(loadReleasePublicKey(join(dir, "missing.pub")), /cannot read/);
    await writeFile(join(dir, "junk.pub"), "hello");
    await t.rejects(loadReleasePublicKey(join(dir, "junk.pub")), /not a PEM public key/);
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey.export({ type: "spki", format: "pem" });
    await writeFile(join(dir, "rsa.pub"), rsa);
    await t.rejects(loadReleasePublicKey(join(dir, "rsa.pub")), /rsa key, expected Ed25519/);
  },
);
