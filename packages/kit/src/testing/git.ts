import { execFile, spawn } from "node:child_process";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";

const GIT_BIN = process.env.GIT_BIN ?? "git";
const HTTP_BACKEND = process.env.GIT_HTTP_BACKEND ?? "/usr/lib/git-core/git-http-backend";

// Tests must not pick up the developer's ~/.gitconfig (signing, hooks, default branch).
const gitEnv = (): NodeJS.ProcessEnv => ({
  ...process.env,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
});

function runGit(cwd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(GIT_BIN, args, { cwd, env: gitEnv(), maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`git ${args.join(" ")} failed: ${String(stderr).trim() || err.message}`));
      else resolve(String(stdout).trim());
    });
  });
}

export interface TestRepo {
  dir: string;
  write(path: string, content: string): Promise<void>;
  remove(path: string): Promise<void>;
  /** Stages everything (additions, changes, removals) and commits; returns the new commit's SHA. */
  commit(message: string): Promise<string>;
  /** Creates the branch at HEAD and checks it out. */
  branch(name: string): Promise<void>;
  checkout(name: string): Promise<void>;
  /** Any git command in the repository; stdout trimmed. */
  git(...args: string[]): Promise<string>;
}

/** A non-bare repository in `dir` (created if missing) on `branch`, with a local author so commits work anywhere. */
export async function createTestRepo(dir: string, branch = "main"): Promise<TestRepo> {
  await mkdir(dir, { recursive: true });
  await runGit(dir, ["init", "-q", "-b", branch]);
  await runGit(dir, ["config", "user.name", "Orch Test"]);
  await runGit(dir, ["config", "user.email", "test@orch.invalid"]);
  await runGit(dir, ["config", "commit.gpgsign", "false"]);
  const git = (...args: string[]) => runGit(dir, args);
  return {
    dir,
    git,
    async write(path, content) {
      const file = join(dir, path);
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, content);
    },
    async remove(path) {
      await rm(join(dir, path), { recursive: true, force: true });
    },
    async commit(message) {
      await git("add", "-A");
      await git("commit", "-q", "--allow-empty", "-m", message);
      return git("rev-parse", "HEAD");
    },
    async branch(name) {
      await git("checkout", "-q", "-b", name);
    },
    async checkout(name) {
      await git("checkout", "-q", name);
    },
  };
}

export interface GitHttpServer {
  /** The clone URL of `<root>/<repoName>`. */
  url(repoName: string): string;
  close(): Promise<void>;
}

/**
 * Serves every repository under `root` (non-bare ones included) over git's smart HTTP protocol
 * (git http-backend CGI) on 127.0.0.1 — the same protocol GitHub/GitLab/Gitea speak, so a client
 * under test runs the real fetch path. `token`: requests must carry Basic auth with it as the
 * password (any user name), else 401.
 */
export async function startGitHttpServer(root: string, opts: { token?: string } = {}): Promise<GitHttpServer> {
  const server = createServer((req, res) => {
    if (opts.token !== undefined && !authorised(req, opts.token)) {
      res.writeHead(401, { "WWW-Authenticate": 'Basic realm="orch-test-git"', "Content-Type": "text/plain" });
      res.end("authentication required\n");
      return;
    }
    serveCgi(root, req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: (repoName) => `http://127.0.0.1:${port}/${repoName}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function authorised(req: IncomingMessage, token: string): boolean {
  const h = req.headers.authorization ?? "";
  if (!h.startsWith("Basic ")) return false;
  const decoded = Buffer.from(h.slice(6), "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon >= 0 && decoded.slice(colon + 1) === token;
}

function serveCgi(root: string, req: IncomingMessage, res: ServerResponse): void {
  const u = new URL(req.url ?? "/", "http://localhost");
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_PROJECT_ROOT: root,
    GIT_HTTP_EXPORT_ALL: "1",
    PATH_INFO: decodeURIComponent(u.pathname),
    QUERY_STRING: u.search.slice(1),
    REQUEST_METHOD: req.method ?? "GET",
    CONTENT_TYPE: req.headers["content-type"] ?? "",
    REMOTE_ADDR: req.socket.remoteAddress ?? "127.0.0.1",
    REMOTE_USER: "",
  };
  if (req.headers["content-length"]) env.CONTENT_LENGTH = req.headers["content-length"];
  if (req.headers["content-encoding"]) env.HTTP_CONTENT_ENCODING = req.headers["content-encoding"];
  // Protocol v2 is negotiated through this header; the CGI only sees it as GIT_PROTOCOL.
  const proto = req.headers["git-protocol"];
  if (typeof proto === "string") env.GIT_PROTOCOL = proto;

  const child = spawn(HTTP_BACKEND, [], { env, stdio: ["pipe", "pipe", "ignore"] });
  req.pipe(child.stdin);
  child.stdin.on("error", () => {});
  child.on("error", () => {
    if (!res.headersSent) res.writeHead(500).end();
  });

  let head = Buffer.alloc(0);
  let headersDone = false;
  child.stdout.on("data", (chunk: Buffer) => {
    if (headersDone) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const split = headerEnd(head);
    if (!split) return;
    headersDone = true;
    const { status, headers } = parseCgiHeaders(head.subarray(0, split.at).toString("latin1"));
    res.writeHead(status, headers);
    const rest = head.subarray(split.at + split.len);
    if (rest.length > 0) res.write(rest);
  });
  child.stdout.on("end", () => {
    if (!headersDone) res.writeHead(502);
    res.end();
  });
}

function headerEnd(buf: Buffer): { at: number; len: number } | undefined {
  const crlf = buf.indexOf("\r\n\r\n");
  const lf = buf.indexOf("\n\n");
  if (crlf >= 0 && (lf < 0 || crlf <= lf)) return { at: crlf, len: 4 };
  if (lf >= 0) return { at: lf, len: 2 };
  return undefined;
}

function parseCgiHeaders(text: string): { status: number; headers: Record<string, string> } {
  let status = 200;
  const headers: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === "status") status = Number.parseInt(value, 10) || 200;
    else headers[name] = value;
  }
  return { status, headers };
}
