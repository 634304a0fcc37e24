/**
 * Key loading and signing for operator authentication.
 *
 *   const signer = await loadSigner({ key, sshAgent, home, env });
 *   signer.publicKeyHex                       // hex of the raw 32-byte Ed25519 public key
 *   const sig = await signer.sign(bytes);     // 64-byte Ed25519 signature
 *
 * Sources: PKCS#8 PEM (orchctl keygen, openssl genpkey), unencrypted OpenSSH private keys
 * (ssh-keygen -N ""), and ssh-agent over $SSH_AUTH_SOCK (the key never leaves the agent).
 * Default when no key is named: <home>/id_ed25519, else ~/.ssh/id_ed25519, else ssh-agent.
 */
import { access, readFile } from "node:fs/promises";
import { join } from "node:path";
import { userHome } from "../config.js";
import { CliError } from "../errors.js";
import { listAgentIdentities, agentSign, type AgentIdentity } from "./agent.js";
import { signEd25519, verifyEd25519 } from "./ed25519.js";
import { parseKeyText, type KeyMaterial } from "./files.js";
import { SSH_ED25519, ed25519FromBlob, fingerprint } from "./openssh.js";
import { count } from "../format/units.js";

export interface Signer {
  /** Hex of the raw 32-byte Ed25519 public key (what the API calls `public_key`). */
  publicKeyHex: string;
  /** Where the key lives, for messages: a file path or `ssh-agent (<comment>)`. */
  source: string;
  /** Ed25519 signature (64 bytes) over exactly `data`. */
  sign(data: Uint8Array): Promise<Uint8Array>;
}

export interface LoadSignerOptions {
  /** A private key file, or a public key file (`.pub`, hex or OpenSSH) selecting an ssh-agent identity. */
  key?: string | undefined;
  /** Sign through ssh-agent ($SSH_AUTH_SOCK). */
  sshAgent?: boolean | undefined;
  /** The orchctl home (default key `<home>/id_ed25519`). */
  home?: string | undefined;
  /** Environment (HOME, SSH_AUTH_SOCK); defaults to process.env. */
  env?: Record<string, string | undefined> | undefined;
  timeoutMs?: number | undefined;
}

export function fileSigner(material: Extract<KeyMaterial, { kind: "private" }>, source: string): Signer {
  return {
    publicKeyHex: material.publicKey.toString("hex"),
    source,
    sign: async (data) => signEd25519(material.key, data),
  };
}

export function agentSigner(socketPath: string, identity: AgentIdentity, timeoutMs?: number): Signer {
  const pub = ed25519FromBlob(identity.blob);
  return {
    publicKeyHex: pub.toString("hex"),
    source: `ssh-agent (${identity.comment || fingerprint(identity.blob)})`,
    sign: async (data) => {
      const sig = await agentSign(socketPath, identity.blob, data, timeoutMs);
      if (!verifyEd25519(pub, data, sig))
        throw new CliError("ssh-agent returned a signature that does not verify", "agent_protocol");
      return sig;
    },
  };
}

/** The ssh-ed25519 identities in the agent, narrowed to `only` (raw public key) when given. */
async function agentSigners(
  env: Record<string, string | undefined>,
  only: Buffer | undefined,
  why: string,
  timeoutMs?: number,
): Promise<Signer[]> {
  const sock = env.SSH_AUTH_SOCK;
  if (!sock) throw new CliError(`${why}, but SSH_AUTH_SOCK is not set (is ssh-agent running?)`, "agent_unavailable");
  const all = await listAgentIdentities(sock, timeoutMs);
  const ed = all.filter((id) => id.type === SSH_ED25519);
  if (only) {
    const match = ed.filter((id) => ed25519FromBlob(id.blob).equals(only));
    if (!match.length) {
      throw new CliError(
        `ssh-agent at ${sock} does not hold the key ${only.toString("hex")}; add it with ssh-add <private key file>`,
        "agent_key_missing",
      );
    }
    return match.map((id) => agentSigner(sock, id, timeoutMs));
  }
  if (!ed.length) {
    const others = all.length ? ` (it holds ${all.map((i) => i.type).join(", ")})` : "";
    throw new CliError(
      `ssh-agent at ${sock} holds no Ed25519 keys${others}; add one with ssh-add`,
      "agent_key_missing",
    );
  }
  return ed.map((id) => agentSigner(sock, id, timeoutMs));
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/** Public key named by a key file (for choosing an agent identity): the file itself or `<file>.pub`. */
async function publicKeyOf(path: string): Promise<Buffer | undefined> {
  for (const p of [path, `${path}.pub`]) {
    let text: string;
    try {
      text = await readFile(p, "utf8");
    } catch {
      continue;
    }
    const m = parseKeyText(text, p);
    if (m.publicKey) return m.publicKey;
  }
  return undefined;
}

async function keyFileSigners(
  path: string,
  explicit: boolean,
  opts: LoadSignerOptions,
  env: Record<string, string | undefined>,
): Promise<Signer[]> {
  const hasAgent = Boolean(env.SSH_AUTH_SOCK);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // No readable private key: fall back to the agent, choosing the identity from <path>.pub.
    if (hasAgent && (code === "EACCES" || code === "EPERM" || code === "ENOENT")) {
      const pub = await publicKeyOf(`${path}.pub`).catch(() => undefined);
      if (pub || code !== "ENOENT") return agentSigners(env, pub, `${path} is not readable`, opts.timeoutMs);
    }
    throw new CliError(
      `cannot read key ${path}: ${code === "ENOENT" ? "no such file" : (err as Error).message}`,
      "key_unreadable",
      { cause: err },
    );
  }
  const m = parseKeyText(text, path);
  switch (m.kind) {
    case "private":
      return [fileSigner(m, path)];
    case "public":
      return agentSigners(env, m.publicKey, `${path} is a public key, so signing needs ssh-agent`, opts.timeoutMs);
    case "encrypted":
      // The default ~/.ssh key is often passphrase-protected and loaded in the agent: use the agent.
      if (!explicit && hasAgent && m.publicKey)
        return agentSigners(env, m.publicKey, `${path} is encrypted`, opts.timeoutMs);
      throw new CliError(
        m.format === "openssh"
          ? `${path} is encrypted with a passphrase, which orchctl cannot decrypt; load it into ssh-agent (ssh-add ${path}) and run orchctl login --ssh-agent --key ${path}.pub`
          : `${path} is an encrypted PKCS#8 key, which orchctl cannot decrypt; use an unencrypted key or ssh-agent (--ssh-agent)`,
        "key_encrypted",
      );
  }
}

/**
 * All candidate signers for the options (several only when ssh-agent holds several Ed25519 keys
 * and none was chosen; `orchctl login` tries each until the server accepts one).
 */
export async function loadSigners(opts: LoadSignerOptions = {}): Promise<Signer[]> {
  const env = opts.env ?? process.env;
  if (opts.sshAgent) {
    const only = opts.key ? await publicKeyOf(opts.key) : undefined;
    if (opts.key && !only)
      throw new CliError(`cannot find the public key of ${opts.key} (tried it and ${opts.key}.pub)`, "key_unreadable");
    return agentSigners(env, only, "--ssh-agent was given", opts.timeoutMs);
  }
  if (opts.key) return keyFileSigners(opts.key, true, opts, env);
  const candidates = [opts.home ? join(opts.home, "id_ed25519") : undefined, join(userHome(env), ".ssh", "id_ed25519")];
  for (const c of candidates) {
    if (c && (await exists(c))) return keyFileSigners(c, false, opts, env);
  }
  if (env.SSH_AUTH_SOCK) return agentSigners(env, undefined, "no key file found", opts.timeoutMs);
  throw new CliError(
    `no key found (looked for ${candidates.filter(Boolean).join(" and ")}, and SSH_AUTH_SOCK is not set); run orchctl keygen, or pass --key or --ssh-agent`,
    "no_key",
  );
}

/** Exactly one signer; errors listing the candidates when ssh-agent offers several. */
export async function loadSigner(opts: LoadSignerOptions = {}): Promise<Signer> {
  const signers = await loadSigners(opts);
  if (signers.length === 1) return signers[0]!;
  throw new CliError(
    `ssh-agent holds ${count(signers.length, "Ed25519 key")}; choose one with --key <file.pub>:\n${signers.map((s) => `  ${s.publicKeyHex} ${s.source}`).join("\n")}`,
    "ambiguous_key",
  );
}

export { verifyEd25519, signEd25519, privateKeyFromSeed, publicKeyFromRaw, rawPublicKey } from "./ed25519.js";
export { resolvePublicKeyHex, parseKeyText, readKeyFile, type KeyMaterial } from "./files.js";
export { generateKeyFiles, type GeneratedKey } from "./keygen.js";
export { listAgentIdentities, agentSign, type AgentIdentity } from "./agent.js";
export { parseOpenSshPrivateKey, parseOpenSshPublicKey, ed25519FromBlob, ed25519Blob, fingerprint } from "./openssh.js";
