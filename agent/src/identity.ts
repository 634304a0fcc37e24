import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { nodeIdFromPublicKey } from "@orch/contracts";
import type { AgentLogger } from "./runtime.js";

export interface Identity {
  nodeId: string;
  /** Hex of the raw 32-byte Ed25519 public key. */
  publicKeyHex: string;
  sign(data: Uint8Array): Buffer;
}

export const KEY_FILE = "agent.key";

function rawPublicKey(priv: KeyObject): Buffer {
  const der = createPublicKey(priv).export({ format: "der", type: "spki" });
  return der.subarray(der.length - 32);
}

/**
 * Loads the agent's Ed25519 key from `<dataDir>/agent.key` (PKCS#8 PEM), creating it on first
 * start with mode 0600. The node id is derived from the public key, so it survives restarts.
 */
export function loadOrCreateIdentity(dataDir: string, log: AgentLogger): Identity {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, KEY_FILE);
  let priv: KeyObject;
  if (existsSync(path)) {
    const mode = statSync(path).mode & 0o777;
    if (mode & 0o077) {
      log.warn({ path, mode: mode.toString(8) }, "identity key was readable by others; restricting it to 0600");
      chmodSync(path, 0o600);
    }
    priv = createPrivateKey(readFileSync(path));
    if (priv.asymmetricKeyType !== "ed25519") throw new Error(`${path} is not an Ed25519 private key`);
  } else {
    priv = generateKeyPairSync("ed25519").privateKey;
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, priv.export({ format: "pem", type: "pkcs8" }), { mode: 0o600, flag: "wx" });
    renameSync(tmp, path);
    log.info({ path }, "new agent identity created");
  }
  const raw = rawPublicKey(priv);
  return {
    nodeId: nodeIdFromPublicKey(raw),
    publicKeyHex: raw.toString("hex"),
    sign: (data) => sign(null, data, priv),
  };
}
