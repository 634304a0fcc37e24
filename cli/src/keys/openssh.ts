/**
 * OpenSSH formats: the wire encoding (RFC 4251 string/uint32), public key lines
 * (`ssh-ed25519 AAAA... comment`) and unencrypted `openssh-key-v1` private keys
 * (PROTOCOL.key in the OpenSSH sources).
 */
import { createHash } from "node:crypto";
import { CliError } from "../errors.js";
import { count } from "../format/units.js";

export const SSH_ED25519 = "ssh-ed25519";
const MAGIC = Buffer.from("openssh-key-v1\0", "latin1");
const PEM_BEGIN = "-----BEGIN OPENSSH PRIVATE KEY-----";
const PEM_END = "-----END OPENSSH PRIVATE KEY-----";

/** Sequential reader of SSH wire-format data. */
export class SshReader {
  private off = 0;
  constructor(private readonly buf: Buffer) {}

  get remaining(): number {
    return this.buf.length - this.off;
  }

  byte(): number {
    if (this.remaining < 1) throw new SshFormatError("truncated data");
    return this.buf[this.off++]!;
  }

  u32(): number {
    if (this.remaining < 4) throw new SshFormatError("truncated data");
    const v = this.buf.readUInt32BE(this.off);
    this.off += 4;
    return v;
  }

  bytes(n: number): Buffer {
    if (this.remaining < n) throw new SshFormatError("truncated data");
    const b = this.buf.subarray(this.off, this.off + n);
    this.off += n;
    return b;
  }

  string(): Buffer {
    return this.bytes(this.u32());
  }

  text(): string {
    return this.string().toString("utf8");
  }

  rest(): Buffer {
    return this.bytes(this.remaining);
  }
}

export class SshFormatError extends CliError {
  constructor(message: string) {
    super(message, "bad_key");
  }
}

export function sshU32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

export function sshString(data: Uint8Array | string): Buffer {
  const b = typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data);
  return Buffer.concat([sshU32(b.length), b]);
}

/** The wire-format public key blob `string "ssh-ed25519" || string pub32`. */
export function ed25519Blob(raw: Uint8Array): Buffer {
  return Buffer.concat([sshString(SSH_ED25519), sshString(raw)]);
}

/** Key type named in a public key blob. */
export function blobKeyType(blob: Uint8Array): string {
  try {
    return new SshReader(Buffer.from(blob)).text();
  } catch {
    return "unknown";
  }
}

/** The raw 32-byte public key of an ssh-ed25519 blob, or an error for other key types. */
export function ed25519FromBlob(blob: Uint8Array): Buffer {
  const r = new SshReader(Buffer.from(blob));
  const type = r.text();
  if (type !== SSH_ED25519) throw new CliError(`only Ed25519 keys are supported (got ${type})`, "unsupported_key");
  const pub = r.string();
  if (pub.length !== 32 || r.remaining !== 0) throw new SshFormatError("malformed ssh-ed25519 public key");
  return Buffer.from(pub);
}

/** `SHA256:...` fingerprint as printed by `ssh-keygen -l`. */
export function fingerprint(blob: Uint8Array): string {
  return `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
}

export interface OpenSshPublicKey {
  type: string;
  blob: Buffer;
  comment: string;
}

/** Parses `ssh-ed25519 AAAA... comment` (the first such line in `text`). */
export function parseOpenSshPublicKey(text: string): OpenSshPublicKey {
  const line = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .find((l) => l && !l.startsWith("#"));
  const m = line?.match(/^(\S+)\s+([A-Za-z0-9+/=]+)(?:\s+(.*))?$/);
  if (!m) throw new SshFormatError("not an OpenSSH public key line (expected `ssh-ed25519 AAAA... comment`)");
  const blob = Buffer.from(m[2]!, "base64");
  const type = blobKeyType(blob);
  if (type !== m[1]) throw new SshFormatError(`OpenSSH public key type ${m[1]} does not match its data (${type})`);
  return { type, blob, comment: m[3] ?? "" };
}

export function looksLikeOpenSshPublicKey(text: string): boolean {
  return /^\s*(ssh-[a-z0-9-]+|ecdsa-sha2-[a-z0-9-]+|sk-[a-z0-9@.-]+)\s+AAAA/.test(text);
}

export function isOpenSshPrivateKey(text: string): boolean {
  return text.includes(PEM_BEGIN);
}

export interface OpenSshPrivateKey {
  cipher: string;
  kdf: string;
  /** The public key blob from the unencrypted header (available even for encrypted keys). */
  publicBlob: Buffer;
  encrypted: boolean;
  /** Present when unencrypted and the key is ssh-ed25519. */
  seed?: Buffer;
  publicKey?: Buffer;
  comment?: string;
}

/**
 * Parses an `-----BEGIN OPENSSH PRIVATE KEY-----` file. Encrypted keys parse only as far as the
 * public header (`encrypted: true`, no seed); callers report them.
 */
export function parseOpenSshPrivateKey(text: string): OpenSshPrivateKey {
  const start = text.indexOf(PEM_BEGIN);
  const end = text.indexOf(PEM_END);
  if (start < 0 || end < start) throw new SshFormatError("not an OpenSSH private key");
  const data = Buffer.from(text.slice(start + PEM_BEGIN.length, end).replace(/\s+/g, ""), "base64");
  if (data.length < MAGIC.length || !data.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new SshFormatError("not an openssh-key-v1 private key (bad magic)");
  }
  const r = new SshReader(data.subarray(MAGIC.length));
  const cipher = r.text();
  const kdf = r.text();
  r.string(); // kdf options
  const n = r.u32();
  if (n !== 1) throw new SshFormatError(`OpenSSH private key files with ${count(n, "key")} are not supported`);
  const publicBlob = Buffer.from(r.string());
  const priv = r.string();
  const encrypted = cipher !== "none" || kdf !== "none";
  if (encrypted) return { cipher, kdf, publicBlob, encrypted };

  const p = new SshReader(priv);
  // Two equal random "checkint"s open the private section: unequal ones mean a corrupt or misdecrypted key.
  const check1 = p.u32();
  const check2 = p.u32();
  if (check1 !== check2) throw new SshFormatError("corrupt OpenSSH private key (check integers differ)");
  const type = p.text();
  if (type !== SSH_ED25519) throw new CliError(`only Ed25519 keys are supported (got ${type})`, "unsupported_key");
  const pub = p.string();
  const sk = p.string();
  const comment = p.text();
  if (pub.length !== 32 || sk.length !== 64) throw new SshFormatError("corrupt ssh-ed25519 private key (bad lengths)");
  if (!sk.subarray(32).equals(pub)) throw new SshFormatError("corrupt ssh-ed25519 private key (public halves differ)");
  const padding = p.rest();
  for (let i = 0; i < padding.length; i++) {
    if (padding[i] !== i + 1) throw new SshFormatError("corrupt OpenSSH private key (bad padding)");
  }
  if (!ed25519FromBlob(publicBlob).equals(pub))
    throw new SshFormatError("corrupt OpenSSH private key (header and private section disagree)");
  return {
    cipher,
    kdf,
    publicBlob,
    encrypted,
    seed: Buffer.from(sk.subarray(0, 32)),
    publicKey: Buffer.from(pub),
    comment,
  };
}
