/** Reading key files of every supported format, and public key arguments. */
import { createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";
import { readFile } from "node:fs/promises";
import { CliError } from "../errors.js";
import { isHex, privateKeyFromSeed, rawPublicKey } from "./ed25519.js";
import {
  ed25519FromBlob,
  isOpenSshPrivateKey,
  looksLikeOpenSshPublicKey,
  parseOpenSshPrivateKey,
  parseOpenSshPublicKey,
} from "./openssh.js";

export type KeyMaterial =
  /** A usable private key (PKCS#8 PEM or unencrypted OpenSSH). */
  | { kind: "private"; format: "pkcs8" | "openssh"; key: KeyObject; publicKey: Buffer }
  /** A passphrase-protected key; the public half is known for OpenSSH keys. */
  | { kind: "encrypted"; format: "pkcs8" | "openssh"; publicKey?: Buffer }
  /** Only a public key (hex, OpenSSH line, SPKI PEM). */
  | { kind: "public"; publicKey: Buffer };

/** Classifies and parses the contents of a key file. `name` is used in error messages. */
export function parseKeyText(text: string, name: string): KeyMaterial {
  const trimmed = text.trim();
  if (isOpenSshPrivateKey(text)) {
    const k = parseOpenSshPrivateKey(text);
    if (k.encrypted) return { kind: "encrypted", format: "openssh", publicKey: ed25519FromBlob(k.publicBlob) };
    return { kind: "private", format: "openssh", key: privateKeyFromSeed(k.seed!), publicKey: k.publicKey! };
  }
  if (trimmed.includes("-----BEGIN ENCRYPTED PRIVATE KEY-----")) return { kind: "encrypted", format: "pkcs8" };
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(trimmed)) {
    let key: KeyObject;
    try {
      key = createPrivateKey({ key: text, format: "pem" });
    } catch (err) {
      throw new CliError(`${name}: cannot parse private key: ${(err as Error).message}`, "bad_key", { cause: err });
    }
    return { kind: "private", format: "pkcs8", key, publicKey: rawPublicKey(key) };
  }
  if (trimmed.includes("-----BEGIN PUBLIC KEY-----")) {
    let key: KeyObject;
    try {
      key = createPublicKey({ key: text, format: "pem" });
    } catch (err) {
      throw new CliError(`${name}: cannot parse public key: ${(err as Error).message}`, "bad_key", { cause: err });
    }
    return { kind: "public", publicKey: rawPublicKey(key) };
  }
  if (isHex(trimmed, 32)) return { kind: "public", publicKey: Buffer.from(trimmed, "hex") };
  if (looksLikeOpenSshPublicKey(trimmed))
    return { kind: "public", publicKey: ed25519FromBlob(parseOpenSshPublicKey(trimmed).blob) };
  throw new CliError(
    `${name}: not a recognised Ed25519 key (expected PKCS#8 PEM, OpenSSH private key, hex or ssh-ed25519 public key)`,
    "bad_key",
  );
}

export async function readKeyFile(path: string): Promise<KeyMaterial> {
  return parseKeyText(await readFile(path, "utf8"), path);
}

/**
 * Resolves a `--public-key` argument to lowercase hex of the raw 32 bytes. Accepts 64 hex chars,
 * an `ssh-ed25519 AAAA... comment` line, or a path to a file holding either (a keygen `.pub`,
 * an OpenSSH `.pub`, a PEM public or private key, an OpenSSH private key).
 */
export async function resolvePublicKeyHex(input: string): Promise<string> {
  const v = input.trim();
  if (isHex(v, 32)) return v.toLowerCase();
  if (looksLikeOpenSshPublicKey(v)) return ed25519FromBlob(parseOpenSshPublicKey(v).blob).toString("hex");
  let text: string;
  try {
    text = await readFile(v, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError(
      `public key ${JSON.stringify(input)} is not 64 hex characters, an ssh-ed25519 line, or a readable file (${code ?? (err as Error).message})`,
      "bad_public_key",
      { cause: err },
    );
  }
  const k = parseKeyText(text, v);
  if (!k.publicKey)
    throw new CliError(`${v}: encrypted key without a readable public key; pass its .pub file`, "bad_public_key");
  return k.publicKey.toString("hex");
}
