/** Ed25519 primitives on top of node:crypto (raw 32-byte keys <-> KeyObjects, sign, verify). */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from "node:crypto";
import { CliError } from "../errors.js";

/** DER prefix of a PKCS#8 Ed25519 private key; append the 32-byte seed. */
export const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
/** DER prefix of an SPKI Ed25519 public key; append the 32 raw public key bytes. */
export const SPKI_ED25519_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

export function privateKeyFromSeed(seed: Uint8Array): KeyObject {
  if (seed.length !== 32) throw new CliError(`Ed25519 seed must be 32 bytes, got ${seed.length}`, "bad_key");
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: "der", type: "pkcs8" });
}

export function publicKeyFromRaw(raw: Uint8Array): KeyObject {
  if (raw.length !== 32) throw new CliError(`Ed25519 public key must be 32 bytes, got ${raw.length}`, "bad_key");
  return createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, raw]), format: "der", type: "spki" });
}

/** The raw 32 public key bytes of an Ed25519 private or public KeyObject. */
export function rawPublicKey(key: KeyObject): Buffer {
  const pub = key.type === "private" ? createPublicKey(key) : key;
  if (pub.asymmetricKeyType !== "ed25519") {
    throw new CliError(`only Ed25519 keys are supported (got ${pub.asymmetricKeyType ?? key.type})`, "unsupported_key");
  }
  const der = pub.export({ format: "der", type: "spki" });
  return Buffer.from(der.subarray(der.length - 32));
}

export function signEd25519(key: KeyObject, data: Uint8Array): Buffer {
  return sign(null, data, key);
}

/** Verifies a 64-byte Ed25519 signature against a raw (or hex) 32-byte public key. */
export function verifyEd25519(publicKey: Uint8Array | string, data: Uint8Array, signature: Uint8Array): boolean {
  const raw = typeof publicKey === "string" ? hexToBytes(publicKey, 32, "public key") : publicKey;
  if (signature.length !== 64) return false;
  return verify(null, data, publicKeyFromRaw(raw), signature);
}

export function generateEd25519(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync("ed25519");
}

export function isHex(s: string, bytes?: number): boolean {
  return /^(?:[0-9a-fA-F]{2})+$/.test(s) && (bytes === undefined || s.length === bytes * 2);
}

export function hexToBytes(hex: string, bytes: number, what: string): Buffer {
  if (!isHex(hex, bytes)) throw new CliError(`${what} must be ${bytes * 2} hex characters`, "bad_key");
  return Buffer.from(hex, "hex");
}
