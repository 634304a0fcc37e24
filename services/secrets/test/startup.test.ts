// Fail fast: without a usable keyring the process stops before connecting to anything, and says
// which variable to set (and never prints the key it was given).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import t from "tap";

const MAIN = fileURLToPath(new URL("../dist/main.js", import.meta.url));

function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const { ORCH_SECRETS_KEYS: _drop, ...base } = process.env;
    // Unreachable NATS and Postgres: reaching them would hang, so an exit proves nothing was tried.
    const p = spawn(process.execPath, [MAIN], {
      env: { ...base, NATS_URL: "nats://127.0.0.1:1", DATABASE_URL: "postgres://nobody@127.0.0.1:1/x", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    p.stderr.on("data", (d) => (stderr += d));
    p.on("close", (code) => resolve({ code, stderr }));
  });
}

t.test("built service exists", async (t) => {
  t.ok(existsSync(MAIN), "run `npx tsc -p services/secrets` first");
});

t.test("no key configured → exit 2 naming ORCH_SECRETS_KEYS", async (t) => {
  const r = await start({});
  t.equal(r.code, 2);
  t.match(r.stderr, /secrets: config: invalid configuration/);
  t.match(r.stderr, /secrets\.keys: no encryption key configured: set ORCH_SECRETS_KEYS/);
});

t.test("a malformed key → exit 2, the key never printed", async (t) => {
  const bad = "k1:dG9vLXNob3J0LWtleQ==";
  const r = await start({ ORCH_SECRETS_KEYS: bad });
  t.equal(r.code, 2);
  t.match(r.stderr, /key 'k1': the key must be 32 bytes, base64-encoded/);
  t.notOk(r.stderr.includes("dG9vLXNob3J0LWtleQ"));
});
