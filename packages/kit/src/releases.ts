// orch-agent releases on disk and their signatures: shared by `npm run build:agent-package` (signs),
// the gateway (serves, and checks the stored signatures), the agents service (which versions exist)
// and the agent's upgrader (verifies). Only node:* and @orch/contracts imports, so the agent bundle
// that imports it (via "@orch/kit/releases") stays free of pg and NATS.
import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from "node:crypto";
import { readdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { AGENT_VERSION_RE, compareVersions, parseReleaseManifest, type ReleaseManifest } from "@orch/contracts";

/** Beside manifest.json in a version's directory: base64 Ed25519 signature of its bytes, written at build. */
export const RELEASE_SIGNATURE_FILE = "manifest.json.sig";

export interface ReleaseEntry {
  manifest: ReleaseManifest;
  /** manifest.json exactly as on disk: what is signed and served. */
  bytes: Buffer;
  /** manifest.json.sig as on disk, trimmed: not checked here (the gateway does, with the public key). */
  sig: string;
  /** Absolute directory of this version (the listed files are in it). */
  dir: string;
}

export interface ReleaseCatalog {
  versions: Map<string, ReleaseEntry>;
  /** Highest version by compareVersions; undefined when there is none. */
  latest: string | undefined;
}

/** Manifests are small; a bigger file is not one of ours. */
const MAX_MANIFEST_BYTES = 1_048_576;
/** A base64 Ed25519 signature is 88 characters. */
const MAX_SIGNATURE_BYTES = 1024;

/**
 * Reads `<dir>/<version>/manifest.json` and its `manifest.json.sig` for every version directory.
 * Anything that is not a release (bad name, no or invalid manifest, manifest.version ≠ directory
 * name, no signature: a release is published signed or not at all) is skipped, never thrown: a
 * half-copied release must not take the others down. A missing or empty `dir` is an empty catalog.
 */
export async function readReleaseCatalog(dir: string): Promise<ReleaseCatalog> {
  const versions = new Map<string, ReleaseEntry>();
  let names: string[] = [];
  if (dir) {
    try {
      names = (await readdir(dir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
    } catch {
      names = [];
    }
  }
  for (const name of names) {
    if (!AGENT_VERSION_RE.test(name)) continue;
    const vdir = join(dir, name);
    let bytes: Buffer;
    try {
      bytes = await readFile(join(vdir, "manifest.json"));
    } catch {
      continue;
    }
    if (bytes.length > MAX_MANIFEST_BYTES) continue;
    const manifest = parseReleaseManifest(bytes.toString("utf8"));
    if (!manifest || manifest.version !== name) continue;
    let sig: string;
    try {
      const raw = await readFile(join(vdir, RELEASE_SIGNATURE_FILE));
      if (raw.length > MAX_SIGNATURE_BYTES) continue;
      sig = raw.toString("utf8").trim();
    } catch {
      continue;
    }
    versions.set(name, { manifest, bytes, sig, dir: vdir });
  }
  let latest: string | undefined;
  for (const v of versions.keys()) if (latest === undefined || compareVersions(v, latest) > 0) latest = v;
  return { versions, latest };
}

/** The Ed25519 private key (PKCS#8 PEM) that signs manifests; a clear error for anything else. */
export async function loadReleaseSigningKey(file: string): Promise<KeyObject> {
  let pem: string;
  try {
    pem = await readFile(file, "utf8");
  } catch (err) {
    throw new Error(`release signing key ${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: "pem" });
  } catch {
    throw new Error(`release signing key ${file}: not a PEM private key (expected Ed25519 PKCS#8 "BEGIN PRIVATE KEY")`);
  }
  if (key.asymmetricKeyType !== "ed25519")
    throw new Error(`release signing key ${file}: a ${key.asymmetricKeyType} key, expected Ed25519`);
  return key;
}

/** The public half as SPKI PEM: what the install script embeds and /install/release.pub serves. */
export const releasePublicKeyPem = (key: KeyObject): string =>
  createPublicKey(key).export({ type: "spki", format: "pem" }).toString();

/**
 * The release public key (SPKI PEM, `openssl pkey -in release.key -pubout`) as the gateway holds
 * it: re-exported canonically. A private key is refused, not derived from: the gateway must not
 * hold what signs releases.
 */
export async function loadReleasePublicKey(file: string): Promise<string> {
  let pem: string;
  try {
    pem = await readFile(file, "utf8");
  } catch (err) {
    throw new Error(`release public key ${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem))
    throw new Error(
      `release public key ${file}: this is a PRIVATE key; give the public key only (openssl pkey -in release.key -pubout -out release.pub) and keep the private key with the package build`,
    );
  let key: KeyObject;
  try {
    key = createPublicKey({ key: pem, format: "pem" });
  } catch {
    throw new Error(`release public key ${file}: not a PEM public key (expected Ed25519 SPKI "BEGIN PUBLIC KEY")`);
  }
  if (key.asymmetricKeyType !== "ed25519")
    throw new Error(`release public key ${file}: a ${key.asymmetricKeyType} key, expected Ed25519`);
  return key.export({ type: "spki", format: "pem" }).toString();
}

/** Base64 Ed25519 signature of the manifest bytes (`openssl pkeyutl -verify -rawin` checks it). */
export const signManifest = (bytes: Buffer, key: KeyObject): string => sign(null, bytes, key).toString("base64");

/**
 * Signs `<versionDir>/manifest.json` and writes the signature beside it (manifest.json.sig),
 * replacing any earlier one atomically: what `npm run build:agent-package` does once per release,
 * and again with a new key on rotation (`--sign`). Returns the signature.
 */
export async function signReleaseDir(versionDir: string, key: KeyObject): Promise<string> {
  const sig = signManifest(await readFile(join(versionDir, "manifest.json")), key);
  const tmp = join(versionDir, `.${RELEASE_SIGNATURE_FILE}.tmp`);
  await writeFile(tmp, `${sig}\n`, { mode: 0o644 });
  await rename(tmp, join(versionDir, RELEASE_SIGNATURE_FILE));
  return sig;
}

/** True only for a valid signature of exactly these bytes by this key; false for anything malformed. */
export function verifyManifest(bytes: Buffer, sigBase64: string, publicKeyPem: string): boolean {
  try {
    const sig = Buffer.from(sigBase64.trim(), "base64");
    if (sig.length !== 64) return false;
    const pub = createPublicKey({ key: publicKeyPem, format: "pem" });
    if (pub.asymmetricKeyType !== "ed25519") return false;
    return verify(null, bytes, pub, sig);
  } catch {
    return false;
  }
}

/** How long a read of releases.dir is reused: `npm run build:agent-package` may add a version at any time. */
export const RELEASE_CATALOG_TTL_MS = 5_000;

export interface CachedReleaseCatalog {
  /** The catalog, re-read at most every `ttlMs` (concurrent callers share one read). */
  get(): Promise<ReleaseCatalog>;
}

/** `clock` is structural (the kit's Clock) so this module keeps its node:*-only imports. */
export function cachedReleaseCatalog(
  dir: string,
  clock: { now(): number },
  ttlMs = RELEASE_CATALOG_TTL_MS,
): CachedReleaseCatalog {
  let cached: { at: number; read: Promise<ReleaseCatalog> } | undefined;
  return {
    get() {
      const now = clock.now();
      if (!cached || now - cached.at >= ttlMs) {
        const read = readReleaseCatalog(dir);
        cached = { at: now, read };
        // A failed read is not kept (readReleaseCatalog swallows I/O errors; stay safe anyway).
        read.catch(() => {
          if (cached?.read === read) cached = undefined;
        });
      }
      return cached.read;
    },
  };
}
