// The AES-256-GCM keyring of the secrets service, shared with notify's channel credentials: one
// format (`id:base64key,...`, active key first) and one implementation for both stores.
import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from "node:crypto";

/** What is stored for a value: never the plaintext. */
export interface Sealed {
  keyId: string;
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
}

export type KeyringFailure = "unknown_key" | "decrypt_failed";

/** Raised by `open`; carries no key or plaintext material, only which key and why. */
export class KeyringError extends Error {
  constructor(
    readonly reason: KeyringFailure,
    readonly keyId: string,
  ) {
    super(
      reason === "unknown_key" ? `key '${keyId}' is not in the keyring` : `authentication failed with key '${keyId}'`,
    );
    this.name = "KeyringError";
  }
}

export interface Keyring {
  /** Id of the key new writes use (the first configured). */
  readonly active: string;
  readonly ids: readonly string[];
  has(keyId: string): boolean;
  /** Encrypts with the active key and a fresh random 96-bit nonce; `name` is bound as additional data. */
  seal(name: string, plaintext: string): Sealed;
  /** Decrypts and authenticates; throws KeyringError on an unknown key or any tampering. */
  open(name: string, sealed: Sealed): string;
}

const KEY_ID_RE = /^[A-Za-z0-9_-]{1,32}$/;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Parses `id:base64key[,id:base64key...]` (active key first). Messages name the entry by position
 * or id and never repeat key material; `setting` is the env variable the operator has to set.
 */
export function parseKeyring(spec: string, setting: string): Keyring {
  const entries = spec
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (entries.length === 0) {
    const how = "'id:base64key' (a 32-byte key, e.g. from `openssl rand -base64 32`), active key first";
    throw new Error(`no encryption key configured: set ${setting} to ${how}`);
  }
  const keys = new Map<string, KeyObject>();
  entries.forEach((entry, i) => {
    const colon = entry.indexOf(":");
    const id = colon > 0 ? entry.slice(0, colon) : "";
    const b64 = colon > 0 ? entry.slice(colon + 1).trim() : "";
    if (!KEY_ID_RE.test(id)) {
      const rule = "an id of 1-32 characters of A-Z, a-z, 0-9, '_' or '-'";
      throw new Error(`key entry ${i + 1}: expected 'id:base64key' with ${rule}`);
    }
    if (keys.has(id)) throw new Error(`key entry ${i + 1}: duplicate key id '${id}'`);
    // Node's base64 decoder also accepts the URL-safe alphabet.
    const raw = /^[A-Za-z0-9+/_-]+={0,2}$/.test(b64) ? Buffer.from(b64, "base64") : Buffer.alloc(0);
    if (raw.length !== 32) throw new Error(`key '${id}': the key must be 32 bytes, base64-encoded`);
    keys.set(id, createSecretKey(raw));
    raw.fill(0);
  });
  const ids = [...keys.keys()];
  const active = ids[0]!;
  const aad = (name: string) => Buffer.from(name, "utf8");

  const ring: Keyring = {
    active,
    ids,
    has: (id) => keys.has(id),
    seal(name, plaintext) {
      const nonce = randomBytes(NONCE_BYTES);
      const c = createCipheriv("aes-256-gcm", keys.get(active)!, nonce, { authTagLength: TAG_BYTES });
      c.setAAD(aad(name));
      const ciphertext = Buffer.concat([c.update(plaintext, "utf8"), c.final()]);
      return { keyId: active, nonce, ciphertext, tag: c.getAuthTag() };
    },
    open(name, s) {
      const key = keys.get(s.keyId);
      if (!key) throw new KeyringError("unknown_key", s.keyId);
      const shapeOk = s.nonce.length === NONCE_BYTES && s.tag.length === TAG_BYTES;
      if (!shapeOk) throw new KeyringError("decrypt_failed", s.keyId);
      try {
        const d = createDecipheriv("aes-256-gcm", key, s.nonce, { authTagLength: TAG_BYTES });
        d.setAAD(aad(name));
        d.setAuthTag(s.tag);
        return Buffer.concat([d.update(s.ciphertext), d.final()]).toString("utf8");
      } catch {
        throw new KeyringError("decrypt_failed", s.keyId);
      }
    },
  };
  // Whatever ends up serialised or inspected shows key ids only.
  Object.defineProperty(ring, "toJSON", { value: () => ({ active, ids }), enumerable: false });
  return ring;
}

/**
 * One stored form of a sealed value for byte columns: `[idLen][keyId][nonce 12][tag 16][ciphertext]`.
 * Notify's channel credentials (after their format byte) and the state service's source secrets use it.
 */
export function packSealed(s: Sealed): Buffer {
  const id = Buffer.from(s.keyId, "utf8");
  return Buffer.concat([Buffer.from([id.length]), id, s.nonce, s.tag, s.ciphertext]);
}

/** The inverse of packSealed; undefined when the bytes are too short to be one. */
export function unpackSealed(b: Buffer): Sealed | undefined {
  if (b.length < 1) return undefined;
  const at = 1 + b[0]!;
  if (b[0] === 0 || b.length < at + NONCE_BYTES + TAG_BYTES) return undefined;
  return {
    keyId: b.subarray(1, at).toString("utf8"),
    nonce: b.subarray(at, at + NONCE_BYTES),
    tag: b.subarray(at + NONCE_BYTES, at + NONCE_BYTES + TAG_BYTES),
    ciphertext: b.subarray(at + NONCE_BYTES + TAG_BYTES),
  };
}
