/** `orchctl keygen`: a PKCS#8 PEM private key (0600) and `<path>.pub` with the hex public key. */
import { access, rm, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { ensurePrivateDir } from "../config.js";
import { CliError } from "../errors.js";
import { generateEd25519, rawPublicKey } from "./ed25519.js";

export interface GeneratedKey {
  privateKeyPath: string;
  publicKeyPath: string;
  publicKeyHex: string;
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

export async function generateKeyFiles(path: string, opts: { force?: boolean } = {}): Promise<GeneratedKey> {
  const pubPath = `${path}.pub`;
  if (!opts.force) {
    for (const p of [path, pubPath]) {
      if (await exists(p)) throw new CliError(`${p} already exists; pass --force to overwrite it`, "already_exists");
    }
  }
  await ensurePrivateDir(dirname(path));
  const { privateKey } = generateEd25519();
  // Same bytes `openssl genpkey -algorithm ed25519` writes: "-----BEGIN PRIVATE KEY-----" PKCS#8.
  const pem = privateKey.export({ format: "pem", type: "pkcs8" }).toString();
  const hex = rawPublicKey(privateKey).toString("hex");
  if (opts.force) {
    // Remove rather than truncate, so the new private key is never readable under an old mode.
    await rm(path, { force: true });
    await rm(pubPath, { force: true });
  }
  await writeFile(path, pem, { mode: 0o600, flag: "wx" });
  await writeFile(pubPath, `${hex}\n`, { mode: 0o644, flag: "wx" });
  return { privateKeyPath: path, publicKeyPath: pubPath, publicKeyHex: hex };
}
