import { createPublicKey, verify, type KeyObject } from "node:crypto";
import { invalid } from "@orch/kit";

// DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows it.
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

export function normaliseKey(hex: string): string {
  if (!/^[0-9a-fA-F]{64}$/.test(hex))
    throw invalid("invalid_public_key", "public_key must be a hex-encoded 32-byte Ed25519 public key", {
      field: "public_key",
    });
  return hex.toLowerCase();
}

export function publicKeyObject(hex: string): KeyObject {
  try {
    return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, Buffer.from(hex, "hex")]), format: "der", type: "spki" });
  } catch {
    throw invalid("invalid_public_key", "public_key is not a valid Ed25519 public key", { field: "public_key" });
  }
}

/** Ed25519 over the raw nonce bytes (what `openssl pkeyutl -sign -rawin` and ssh-agent produce). */
export function verifySignature(keyHex: string, message: Buffer, signatureHex: string): boolean {
  if (!/^[0-9a-fA-F]{128}$/.test(signatureHex))
    throw invalid("invalid_signature_format", "signature must be a hex-encoded 64-byte Ed25519 signature", {
      field: "signature",
    });
  try {
    return verify(null, message, publicKeyObject(keyHex), Buffer.from(signatureHex, "hex"));
  } catch {
    return false;
  }
}
