import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import t from "tap";
import { DEFAULT_TIMEOUT_MS, rawRequest } from "../src/http.js";
import { cli } from "./helpers/cli.js";
import { world } from "./helpers/setup.js";

async function listen(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function freePort(): Promise<string> {
  const { server, url } = await listen(() => {});
  await new Promise((r) => server.close(r));
  return url;
}

t.test("status prints a services table (no login needed)", async (t) => {
  const w = await world(t);
  const r = await cli(["status", "--server", w.server.url], w.env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /status:\s+degraded/);
  t.match(r.stdout, /SERVICE\s+STATUS\nauth\s+ok\ngateway\s+ok\nscheduler\s+unavailable\n$/);
  const j = await cli(["status", "--server", w.server.url, "--json"], w.env);
  t.same(JSON.parse(j.stdout).services, { gateway: "ok", auth: "ok", scheduler: "unavailable" });
});

t.test("connection refused names the server and exits 1", async (t) => {
  const url = await freePort();
  const r = await cli(["status", "--server", url], { HOME: t.testdir() });
  t.equal(r.code, 1);
  t.match(r.stderr, new RegExp(`^error: cannot connect to ${url}: connection refused.*\\(connection_refused\\)\\n$`));
  const j = await cli(["status", "--json"], { HOME: t.testdir(), ORCH_URL: url });
  t.equal(j.code, 1);
  t.match(JSON.parse(j.stdout), { code: "connection_refused", detail: new RegExp(url) });
});

t.test("requests time out (--timeout, default 10 s)", async (t) => {
  const { server, url } = await listen(() => {
    /* never answers */
  });
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  // The server never answers, so the run ends only by a timeout, and the message names the one given.
  const r = await cli(["status", "--server", url, "--timeout", "0.3"], { HOME: t.testdir() });
  t.equal(r.code, 1);
  t.match(r.stderr, `error: request to ${url} timed out after 0.3s (timeout)`, "the --timeout given fired");
  t.equal(DEFAULT_TIMEOUT_MS, 10_000);
  // the default applies when none is given
  const slow = rawRequest({ server: url, method: "GET", path: "/status" });
  const race = await Promise.race([
    slow.then(
      () => "done",
      () => "failed",
    ),
    new Promise((r) => setTimeout(() => r("pending"), 1000)),
  ]);
  t.equal(race, "pending", "no premature timeout with the 10 s default");
  slow.catch(() => {});
});

t.test("non-problem error bodies become a problem with the HTTP status", async (t) => {
  const { server, url } = await listen((_req, res) => {
    res.writeHead(502, { "content-type": "text/html" });
    res.end("<html>Bad Gateway</html>");
  });
  t.teardown(() => server.close());
  const r = await cli(["status", "--server", url, "--json"], { HOME: t.testdir() });
  t.equal(r.code, 1);
  t.match(JSON.parse(r.stdout), { status: 502, code: "http_502", detail: "<html>Bad Gateway</html>" });
  t.equal(r.stderr, "error: <html>Bad Gateway</html> (http_502)\n");
});

t.test("invalid inputs are reported without a stack trace", async (t) => {
  const bad = await cli(["status", "--server", "ftp://x"], { HOME: t.testdir() });
  t.equal(bad.code, 1);
  t.match(bad.stderr, /^error: invalid server URL "ftp:\/\/x"/);
  const to = await cli(["status", "--timeout", "-1"], { HOME: t.testdir() });
  t.equal(to.code, 1);
  t.match(to.stderr, /invalid timeout/);
  const unknown = await cli(["frobnicate"], {});
  t.equal(unknown.code, 1);
  t.match(unknown.stderr, /unknown command 'frobnicate'/);
  const help = await cli(["--help"], {});
  t.equal(help.code, 0);
  t.match(help.stdout, /operators/);
});

t.test("--json usage errors still produce one JSON document", async (t) => {
  const r = await cli(["operators", "add", "--json"], {});
  t.equal(r.code, 1);
  t.match(r.stderr, /required option '--public-key <key>' not specified/);
  t.match(JSON.parse(r.stdout), { code: "usage_error", detail: /required option '--public-key <key>' not specified/ });
  const plain = await cli(["operators", "add"], {});
  t.equal(plain.stdout, "", "no JSON without --json");
});
