import { createPublicKey, randomBytes, verify, type KeyObject } from "node:crypto";
import { nodeIdFromPublicKey } from "@orch/contracts";

export interface ClaimedIdentity {
  nodeId: string;
  /** Lower-case hex of the raw 32-byte key. */
  publicKeyHex: string;
  key: KeyObject;
}

/** Parses the Hello's public key; undefined when it is not a valid Ed25519 key. */
export function parseIdentity(hex: string): ClaimedIdentity | undefined {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) return undefined;
  const raw = Buffer.from(hex, "hex");
  try {
    const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
    return { nodeId: nodeIdFromPublicKey(raw), publicKeyHex: hex.toLowerCase(), key };
  } catch {
    return undefined;
  }
}

export const newNonce = (): Buffer => randomBytes(32);

/** Ed25519 over the raw nonce bytes. */
export function signatureValid(id: ClaimedIdentity, nonce: Uint8Array, signature: Uint8Array): boolean {
  if (signature.length !== 64) return false;
  try {
    return verify(null, nonce, id.key, signature);
  } catch {
    return false;
  }
}
