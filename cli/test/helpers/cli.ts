/** Runs orchctl in-process with captured output and a controlled environment. */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { run } from "../../src/program.js";

export const execFileP = promisify(execFile);

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function cli(args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  const code = await run(args, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env,
  });
  return { code, stdout, stderr };
}

/** `ssh-keygen -t ed25519 -N <pass> -f <path>`; returns the private key path. */
export async function sshKeygen(
  path: string,
  opts: { passphrase?: string; comment?: string; type?: string } = {},
): Promise<string> {
  const args = [
    "-q",
    "-t",
    opts.type ?? "ed25519",
    "-N",
    opts.passphrase ?? "",
    "-C",
    opts.comment ?? "test@orchctl",
    "-f",
    path,
  ];
  if ((opts.type ?? "ed25519") === "rsa") args.splice(3, 0, "-b", "2048");
  await execFileP("ssh-keygen", args);
  return path;
}

/** Raw 32-byte public key from an OpenSSH `.pub` file, decoded here independently of src/. */
export function rawFromOpenSshPubLine(line: string): Buffer {
  const blob = Buffer.from(line.trim().split(/\s+/)[1]!, "base64");
  // string "ssh-ed25519" (4 + 11 bytes) then string pub (4 + 32 bytes)
  if (
    blob.readUInt32BE(0) !== 11 ||
    blob.subarray(4, 15).toString() !== "ssh-ed25519" ||
    blob.readUInt32BE(15) !== 32
  ) {
    throw new Error("not an ssh-ed25519 blob");
  }
  return blob.subarray(19, 51);
}

export interface Agent {
  sock: string;
  proc: ChildProcess;
  add(keyPath: string): Promise<void>;
  stop(): Promise<void>;
}

/** A real `ssh-agent -D -a <sock>` in a short temp dir (unix socket paths are length-limited). */
export async function startAgent(): Promise<Agent> {
  const dir = await mkdtemp(join(tmpdir(), "orchctl-agent-"));
  const sock = join(dir, "agent.sock");
  const proc = spawn("ssh-agent", ["-D", "-a", sock], { stdio: ["ignore", "ignore", "pipe"] });
  let exited = false;
  proc.on("exit", () => (exited = true));
  for (let i = 0; i < 100 && !existsSync(sock); i++) {
    if (exited) throw new Error("ssh-agent exited early");
    await new Promise((r) => setTimeout(r, 50));
  }
  if (!existsSync(sock)) throw new Error("ssh-agent did not create its socket");
  return {
    sock,
    proc,
    add: async (keyPath) => {
      await execFileP("ssh-add", [keyPath], { env: { ...process.env, SSH_AUTH_SOCK: sock } });
    },
    stop: async () => {
      if (!exited) {
        const gone = new Promise((r) => proc.once("exit", r));
        proc.kill("SIGTERM");
        await gone;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
