/**
 * Minimal ssh-agent client (draft-miller-ssh-agent): list identities and sign, over the unix
 * socket in $SSH_AUTH_SOCK. The private key never leaves the agent. One connection per request.
 */
import { createConnection } from "node:net";
import { CliError } from "../errors.js";
import { SSH_ED25519, SshReader, blobKeyType, sshString, sshU32 } from "./openssh.js";

export const SSH_AGENT_FAILURE = 5;
export const SSH2_AGENTC_REQUEST_IDENTITIES = 11;
export const SSH2_AGENT_IDENTITIES_ANSWER = 12;
export const SSH2_AGENTC_SIGN_REQUEST = 13;
export const SSH2_AGENT_SIGN_RESPONSE = 14;

const MAX_MESSAGE = 256 * 1024;

export interface AgentIdentity {
  /** Public key blob in SSH wire format. */
  blob: Buffer;
  type: string;
  comment: string;
}

/** Sends one agent message and returns the reply (type byte + payload). */
export function agentRequest(
  socketPath: string,
  type: number,
  payload: Buffer = Buffer.alloc(0),
  timeoutMs = 10_000,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const sock = createConnection(socketPath);
    const chunks: Buffer[] = [];
    let len = 0;
    let done = false;
    const finish = (err: Error | null, reply?: Buffer) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      if (err) reject(err);
      else resolve(reply!);
    };
    const timer = setTimeout(
      () =>
        finish(new CliError(`ssh-agent at ${socketPath} did not answer within ${timeoutMs / 1000}s`, "agent_timeout")),
      timeoutMs,
    );
    sock.on("connect", () => {
      const body = Buffer.concat([Buffer.from([type]), payload]);
      sock.write(Buffer.concat([sshU32(body.length), body]));
    });
    sock.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      len += chunk.length;
      const all = Buffer.concat(chunks, len);
      if (all.length < 4) return;
      const n = all.readUInt32BE(0);
      if (n === 0 || n > MAX_MESSAGE)
        return finish(new CliError(`ssh-agent sent an invalid message length ${n}`, "agent_protocol"));
      if (all.length >= 4 + n) finish(null, all.subarray(4, 4 + n));
    });
    sock.on("error", (err: NodeJS.ErrnoException) =>
      finish(
        new CliError(
          `cannot talk to ssh-agent at ${socketPath} (SSH_AUTH_SOCK): ${err.code ?? err.message}`,
          "agent_unavailable",
          { cause: err },
        ),
      ),
    );
    sock.on("close", () => finish(new CliError(`ssh-agent at ${socketPath} closed the connection`, "agent_protocol")));
  });
}

/** SSH2_AGENTC_REQUEST_IDENTITIES → SSH2_AGENT_IDENTITIES_ANSWER. */
export async function listAgentIdentities(socketPath: string, timeoutMs?: number): Promise<AgentIdentity[]> {
  const reply = await agentRequest(socketPath, SSH2_AGENTC_REQUEST_IDENTITIES, undefined, timeoutMs);
  const r = new SshReader(reply);
  const type = r.byte();
  if (type !== SSH2_AGENT_IDENTITIES_ANSWER)
    throw new CliError(`ssh-agent refused to list identities (reply ${type})`, "agent_protocol");
  const n = r.u32();
  const ids: AgentIdentity[] = [];
  for (let i = 0; i < n; i++) {
    const blob = Buffer.from(r.string());
    const comment = r.text();
    ids.push({ blob, type: blobKeyType(blob), comment });
  }
  return ids;
}

/**
 * SSH2_AGENTC_SIGN_REQUEST (flags 0) → SSH2_AGENT_SIGN_RESPONSE. Returns the raw signature from
 * the `string "ssh-ed25519" || string sig` blob (64 bytes: a plain Ed25519 signature of `data`).
 */
export async function agentSign(
  socketPath: string,
  keyBlob: Uint8Array,
  data: Uint8Array,
  timeoutMs?: number,
): Promise<Buffer> {
  const payload = Buffer.concat([sshString(keyBlob), sshString(data), sshU32(0)]);
  // Agents may prompt (ssh-add -c), so signing gets a generous timeout.
  const reply = await agentRequest(socketPath, SSH2_AGENTC_SIGN_REQUEST, payload, timeoutMs ?? 60_000);
  const r = new SshReader(reply);
  const type = r.byte();
  if (type === SSH_AGENT_FAILURE)
    throw new CliError("ssh-agent refused to sign (key removed, or confirmation denied?)", "agent_refused");
  if (type !== SSH2_AGENT_SIGN_RESPONSE)
    throw new CliError(`unexpected ssh-agent reply ${type} to a sign request`, "agent_protocol");
  const sig = new SshReader(r.string());
  const alg = sig.text();
  if (alg !== SSH_ED25519)
    throw new CliError(`ssh-agent returned a ${alg} signature, expected ssh-ed25519`, "agent_protocol");
  const raw = sig.string();
  if (raw.length !== 64)
    throw new CliError(`ssh-agent returned a ${raw.length}-byte Ed25519 signature`, "agent_protocol");
  return Buffer.from(raw);
}
