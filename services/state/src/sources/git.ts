import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  COMMIT_SHA_RE,
  SOURCE_ASSIGNMENTS_DIR,
  SOURCE_FILE_RE,
  SOURCE_MAX_FILES,
  SOURCE_MODULES_DIR,
  BUNDLE_FILES_DIR,
  BUNDLE_MAX_FILES,
  BUNDLE_MODULE_FILE,
  SOURCE_POLICIES_DIR,
  SOURCE_VALUES_DIR,
} from "@orch/contracts";
import type { Logger } from "@orch/kit";
import { MODULE_MAX_BYTES } from "../module/parse.js";
import type { GitAuth } from "./seal.js";

/**
 * The git binary as the transport: it speaks every protocol and auth scheme forges offer (smart
 * HTTP v2, SSH, file://), and shallow fetches keep a sync to one commit's objects.
 */

export type GitFailure = "unreachable" | "auth_failed" | "ref_not_found" | "timeout";

/** A fetch or read that failed; the message is git's own, with credentials removed. */
export class GitError extends Error {
  constructor(
    readonly failure: GitFailure,
    message: string,
  ) {
    super(message);
    this.name = "GitError";
  }
}

export interface TreeFile {
  /** Relative to the source path, e.g. "modules/web.yaml". */
  path: string;
  /** "" when bytes > MODULE_MAX_BYTES (not read: the validator reports the size), and for bundle files. */
  content: string;
  bytes: number;
  /**
   * A bundle's file (`modules/<name>/files/…`, docs/modules.md#bundles): not read here, since it
   * may be of any size; its git object id, streamed by `readBlob` when its digest is not known yet.
   * `link`: a symlink, which a source does not ship.
   */
  blob?: { oid: string; link: boolean };
}

export interface GitRepo {
  /** Shallow-fetches a branch name or a commit SHA into the cache; resolves the full commit SHA. */
  fetch(ref: string): Promise<string>;
  /**
   * Direct children of <dir>/modules and <dir>/assignments at `commit` whose names match
   * SOURCE_FILE_RE, sorted by path; at most SOURCE_MAX_FILES + 1, so a caller can tell "too many".
   */
  readTree(commit: string, dir: string): Promise<TreeFile[]>;
  /** A blob's bytes as git streams them (a bundle file of any size: never held whole). */
  readBlob(oid: string): AsyncIterable<Buffer>;
}

export interface GitRepoOptions {
  cacheDir: string;
  name: string;
  url: string;
  auth?: GitAuth;
  timeoutMs: number;
  log: Logger;
}

/** The directories of a source's tree: everything else in the repository is not read. */
const TREE_DIRS = [SOURCE_MODULES_DIR, SOURCE_ASSIGNMENTS_DIR, SOURCE_VALUES_DIR, SOURCE_POLICIES_DIR];
const GIT_BIN = process.env.ORCH_GIT_BIN ?? "git";
const FETCHED = "refs/orch/fetched";
const FULL_SHA_RE = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** Proxy settings a deployment may need to reach its forge; nothing else of our env reaches git. */
const PASS_ENV = [
  "PATH",
  "HTTPS_PROXY",
  "HTTP_PROXY",
  "NO_PROXY",
  "https_proxy",
  "http_proxy",
  "no_proxy",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
];

// One fetch at a time per cache repository: they share the shallow file and refs/orch/fetched.
const chains = new Map<string, Promise<unknown>>();

function serialised<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const next = (chains.get(key) ?? Promise.resolve()).then(fn, fn);
  const tail = next.catch(() => undefined);
  chains.set(key, tail);
  void tail.then(() => {
    if (chains.get(key) === tail) chains.delete(key);
  });
  return next;
}

export function openGitRepo(o: GitRepoOptions): GitRepo {
  const gitDir = join(o.cacheDir, `${o.name}.git`);
  const secrets = secretStrings(o.auth);

  const baseEnv = (): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = {
      GIT_DIR: gitDir,
      HOME: join(o.cacheDir, ".home"),
      GIT_TERMINAL_PROMPT: "0",
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_ASKPASS: "",
      SSH_ASKPASS: "",
      // git's messages are matched below; keep them untranslated.
      LC_ALL: "C",
      LANG: "C",
    };
    for (const k of PASS_ENV) if (process.env[k] !== undefined) env[k] = process.env[k];
    return env;
  };

  const run = (args: string[], deadline: number, extraEnv: NodeJS.ProcessEnv = {}, input?: Buffer) =>
    runGit(args, { cwd: gitDir, env: { ...baseEnv(), ...extraEnv }, deadline, input, secrets });

  const ensureRepo = async (deadline: number) => {
    await mkdir(join(o.cacheDir, ".home"), { recursive: true, mode: 0o700 });
    const exists = await stat(join(gitDir, "HEAD")).then(
      () => true,
      () => false,
    );
    if (!exists) {
      await mkdir(gitDir, { recursive: true, mode: 0o700 });
      await run(["init", "-q", "--bare"], deadline);
    }
    const current = await run(["config", "--get", "remote.origin.url"], deadline).then(
      (out) => out.toString("utf8").trim(),
      () => "",
    );
    if (current !== o.url) await run(["config", "remote.origin.url", o.url], deadline);
  };

  const fetchOnce = async (ref: string): Promise<string> => {
    const deadline = Date.now() + o.timeoutMs;
    await ensureRepo(deadline);
    const cred = await credentialEnv(o.auth, o.cacheDir);
    try {
      const refspec = FULL_SHA_RE.test(ref) ? `+${ref}:${FETCHED}` : `+refs/heads/${ref}:${FETCHED}`;
      try {
        await run(
          ["fetch", "-q", "--depth", "1", "--no-tags", "--no-write-fetch-head", "origin", refspec],
          deadline,
          cred.env,
        );
      } catch (err) {
        // A short SHA cannot be asked of a server; it resolves only if an earlier fetch brought it.
        if (err instanceof GitError && err.failure === "ref_not_found" && COMMIT_SHA_RE.test(ref)) {
          const local = await run(["rev-parse", "--verify", "-q", `${ref}^{commit}`], deadline).catch(() => undefined);
          if (local) return local.toString("utf8").trim();
          throw new GitError(
            "ref_not_found",
            `${err.message} (an abbreviated commit SHA resolves only once fetched: give the full SHA)`,
          );
        }
        throw err;
      }
      return (await run(["rev-parse", "--verify", `${FETCHED}^{commit}`], deadline)).toString("utf8").trim();
    } finally {
      await cred.cleanup();
    }
  };

  return {
    fetch(ref) {
      return serialised(gitDir, async () => {
        const started = Date.now();
        try {
          const commit = await fetchOnce(ref);
          o.log.debug({ source: o.name, ref, commit, ms: Date.now() - started }, "git fetch");
          return commit;
        } catch (err) {
          if (err instanceof GitError)
            o.log.warn({ source: o.name, ref, failure: err.failure, err: err.message }, "git fetch failed");
          throw err;
        }
      });
    },

    readTree: (commit, dir) => readTreeAt(run, commit, dir, Date.now() + o.timeoutMs),

    readBlob(oid) {
      return streamGit(["cat-file", "blob", oid], { cwd: gitDir, env: baseEnv(), idleMs: o.timeoutMs, secrets });
    },
  };
}

/** GitRepo.readTree: one ls-tree of the tree's directories, then one cat-file batch of the YAML files. */
async function readTreeAt(
  run: (args: string[], deadline: number, extraEnv?: NodeJS.ProcessEnv, input?: Buffer) => Promise<Buffer>,
  commit: string,
  dir: string,
  deadline: number,
): Promise<TreeFile[]> {
  const base = dir.replace(/^\/+|\/+$/g, "");
  const prefix = base === "" ? "" : `${base}/`;
  const listing = await run(
    ["ls-tree", "-r", "-z", "-l", commit, "--", ...TREE_DIRS.map((d) => `${prefix}${d}/`)],
    deadline,
  );
  const all = parseLsTree(listing, prefix).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const bundleFiles = all.filter((e) => e.bundleFile).slice(0, BUNDLE_MAX_FILES + 1);
  const entries = all.filter((e) => !e.bundleFile).slice(0, SOURCE_MAX_FILES + 1);
  const wanted = entries.filter((e) => e.bytes <= MODULE_MAX_BYTES);
  const contents = wanted.length
    ? parseCatFileBatch(
        await run(["cat-file", "--batch"], deadline, {}, Buffer.from(wanted.map((e) => `${e.oid}\n`).join(""))),
      )
    : new Map<string, Buffer>();
  return [
    ...entries.map((e) => ({
      path: e.path,
      bytes: e.bytes,
      content: e.bytes <= MODULE_MAX_BYTES ? (contents.get(e.oid)?.toString("utf8") ?? "") : "",
    })),
    ...bundleFiles.map((e) => ({
      path: e.path,
      bytes: e.bytes,
      content: "",
      blob: { oid: e.oid, link: e.link },
    })),
  ];
}

interface LsEntry {
  oid: string;
  path: string;
  bytes: number;
  /** Under modules/<name>/files/: a bundle file (docs/modules.md#bundles). */
  bundleFile: boolean;
  link: boolean;
}

/**
 * `<mode> <type> <oid> <size>\t<path>\0`, listed recursively: the YAML files directly in each
 * directory, `modules/<name>/module.yaml` (a bundle), and every file under `modules/<name>/files/`
 * (symlinks too, so that the tree can refuse them). No submodules.
 */
function parseLsTree(out: Buffer, prefix: string): LsEntry[] {
  const entries: LsEntry[] = [];
  for (const rec of out.toString("utf8").split("\0")) {
    const tab = rec.indexOf("\t");
    if (tab < 0) continue;
    const [mode, type, oid, size] = rec.slice(0, tab).split(/ +/);
    const full = rec.slice(tab + 1);
    const link = mode === "120000";
    if (type !== "blob" || (mode !== "100644" && mode !== "100755" && !link) || !oid || !full.startsWith(prefix))
      continue;
    const path = full.slice(prefix.length);
    const parts = path.split("/");
    const direct = parts.length === 2 && SOURCE_FILE_RE.test(parts[1]!) && !link;
    const bundle = parts.length === 3 && parts[0] === SOURCE_MODULES_DIR && parts[2] === BUNDLE_MODULE_FILE && !link;
    const bundleFile = parts.length >= 4 && parts[0] === SOURCE_MODULES_DIR && parts[2] === BUNDLE_FILES_DIR;
    if (!direct && !bundle && !bundleFile) continue;
    entries.push({ oid, path, bytes: link ? 0 : Number(size), bundleFile, link });
  }
  return entries;
}

/** `<oid> blob <size>\n<content>\n` per object. */
function parseCatFileBatch(out: Buffer): Map<string, Buffer> {
  const map = new Map<string, Buffer>();
  let at = 0;
  while (at < out.length) {
    const nl = out.indexOf(0x0a, at);
    if (nl < 0) break;
    const [oid, type, size] = out.subarray(at, nl).toString("utf8").split(" ");
    if (type !== "blob" || !oid) break;
    const n = Number(size);
    map.set(oid, out.subarray(nl + 1, nl + 1 + n));
    at = nl + 1 + n + 1;
  }
  return map;
}

/** Token: an Authorization header through git's env config (never argv). SSH key: a 0600 file for this call only. */
async function credentialEnv(
  auth: GitAuth | undefined,
  cacheDir: string,
): Promise<{ env: NodeJS.ProcessEnv; cleanup: () => Promise<void> }> {
  if (auth?.token) {
    const basic = Buffer.from(`${auth.username || "x-access-token"}:${auth.token}`).toString("base64");
    return {
      env: {
        GIT_CONFIG_COUNT: "1",
        GIT_CONFIG_KEY_0: "http.extraHeader",
        GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
      },
      cleanup: async () => {},
    };
  }
  if (auth?.sshKey) {
    const dir = await mkdtemp(join(tmpdir(), "orch-ssh-"));
    const keyFile = join(dir, "id");
    await writeFile(keyFile, auth.sshKey.endsWith("\n") ? auth.sshKey : `${auth.sshKey}\n`, { mode: 0o600 });
    const knownHosts = join(cacheDir, "known_hosts");
    return {
      env: {
        GIT_SSH_COMMAND: [
          "ssh",
          `-i ${shellQuote(keyFile)}`,
          "-o IdentitiesOnly=yes",
          "-o BatchMode=yes",
          "-o StrictHostKeyChecking=accept-new",
          `-o UserKnownHostsFile=${shellQuote(knownHosts)}`,
        ].join(" "),
      },
      cleanup: () => rm(dir, { recursive: true, force: true }),
    };
  }
  return { env: {}, cleanup: async () => {} };
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Every form a credential could take in git's output: the token, its Basic header, the key's lines. */
function secretStrings(auth: GitAuth | undefined): string[] {
  const out: string[] = [];
  if (auth?.token) {
    out.push(auth.token, Buffer.from(`${auth.username || "x-access-token"}:${auth.token}`).toString("base64"));
  }
  if (auth?.sshKey) out.push(...auth.sshKey.split("\n").filter((l) => l.trim().length >= 8));
  return out;
}

/** git's last error line, with URL userinfo and every credential string removed. */
export function scrubGitMessage(stderr: string, secrets: readonly string[]): string {
  const lines = stderr
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l.length > 0);
  const last = [...lines].reverse().find((l) => /^(fatal|error):/.test(l)) ?? lines.at(-1) ?? "git failed";
  let msg = last.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, "$1");
  for (const s of [...secrets].sort((a, b) => b.length - a.length)) if (s) msg = msg.split(s).join("[redacted]");
  return msg;
}

export function classifyGitFailure(stderr: string): GitFailure {
  if (
    /Authentication failed|could not read Username|could not read Password|terminal prompts disabled|Permission denied \(|returned error: 40[13]\b/i.test(
      stderr,
    )
  )
    return "auth_failed";
  if (
    /couldn't find remote ref|not our ref|unadvertised object|not a tree object|Not a valid object name|bad object|unknown revision/i.test(
      stderr,
    )
  )
    return "ref_not_found";
  return "unreachable";
}

/**
 * Runs git with a hard deadline. It is started in its own process group so a timeout also kills
 * the transport helpers (git-remote-http, ssh) a hung fetch is really waiting in.
 */
function runGit(
  args: string[],
  o: { cwd: string; env: NodeJS.ProcessEnv; deadline: number; input?: Buffer; secrets: readonly string[] },
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const left = o.deadline - Date.now();
    if (left <= 0) {
      reject(new GitError("timeout", `git ${args[0]} did not start before the time limit`));
      return;
    }
    const child = spawn(GIT_BIN, args, { cwd: o.cwd, env: o.env, stdio: ["pipe", "pipe", "pipe"], detached: true });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }, left);
    child.stdout.on("data", (c: Buffer) => out.push(c));
    child.stderr.on("data", (c: Buffer) => err.push(c));
    child.stdin.on("error", () => {});
    child.stdin.end(o.input ?? Buffer.alloc(0));
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(new GitError("unreachable", `git could not be started: ${e.message}`));
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      if (timedOut) {
        reject(new GitError("timeout", `git ${args[0]} took longer than the time limit and was stopped`));
        return;
      }
      if (code === 0) {
        resolve(Buffer.concat(out));
        return;
      }
      const stderr = Buffer.concat(err).toString("utf8");
      reject(new GitError(classifyGitFailure(stderr), scrubGitMessage(stderr, o.secrets)));
    });
  });
}

/**
 * runGit for output of any size: stdout as it comes, read at the consumer's pace (the pipe's
 * back-pressure holds git); a failure is thrown after the last chunk. The time limit is on
 * silence, not on the whole: a 1 GiB file stored at the database's pace may take minutes, and
 * only git going `idleMs` without a byte the consumer could take means it is stuck.
 */
async function* streamGit(
  args: string[],
  o: { cwd: string; env: NodeJS.ProcessEnv; idleMs: number; secrets: readonly string[] },
): AsyncGenerator<Buffer> {
  const left = o.idleMs;
  const child = spawn(GIT_BIN, args, { cwd: o.cwd, env: o.env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const err: Buffer[] = [];
  child.stderr.on("data", (c: Buffer) => err.push(c));
  const kill = () => {
    try {
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    } catch {
      child.kill("SIGKILL");
    }
  };
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, left);
  const closed = new Promise<number | null>((resolve, reject) => {
    child.on("error", (e) => reject(new GitError("unreachable", `git could not be started: ${e.message}`)));
    child.on("close", resolve);
  });
  let done = false;
  try {
    for await (const chunk of child.stdout) {
      yield chunk as Buffer;
      timer.refresh(); // the consumer took it: git's silence is counted from here
    }
    const code = await closed;
    done = true;
    if (timedOut) throw new GitError("timeout", `git ${args[0]} sent nothing for ${o.idleMs} ms and was stopped`);
    if (code !== 0) {
      const stderr = Buffer.concat(err).toString("utf8");
      throw new GitError(classifyGitFailure(stderr), scrubGitMessage(stderr, o.secrets));
    }
  } finally {
    clearTimeout(timer);
    // The consumer stopped early (or failed): git must not be left writing into a full pipe.
    if (!done) kill();
  }
}
