import t, { type Test } from "tap";
import { sign } from "node:crypto";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { createTestDatabase, ed25519, startNats } from "@orch/kit/testing";
import { createTerminalFeature } from "../../../agent/src/terminal/feature.js";
import { startBridgedAgent } from "../../terminal/test/agent-bridge.js";
import { startAgentsRegistry, startTerminal } from "../../terminal/test/harness.js";
import { gatewayConfigSchema } from "../src/config.js";
import { publicBaseUrl } from "../src/public-url.js";
import { call, login, startAuth, startGateway } from "./harness.js";

// Framework errors, Host → ws_url and security headers (docs/http-api.md): what the HTTP
// surface answers outside the routes' own logic. The terminal is a real PTY behind the real
// terminal service, so ws_url comes from a real open.
const NODE = "a1".repeat(16);
const nats = await startNats();
const db = await createTestDatabase();
const admin = ed25519();
const auth = await startAuth(nats, db, admin);
const terminal = await startTerminal(nats, db, { terminal: { detach_grace_seconds: 0 } });
const registry = await startAgentsRegistry(nats, { [NODE]: { status: "approved", name: "web-1" } });
const features = [createTerminalFeature()];
const agent = await startBridgedAgent(nats, { nodeId: NODE, features, options: { shells: ["/bin/sh"] } });
const gw = await startGateway(nats, undefined, { services: ["auth", "terminal"] });
const pub = await startGateway(nats, undefined, {}, { http: { public_url: "https://orch.example.com/" } });
t.teardown(async () => {
  await pub.stop();
  await gw.stop();
  await agent.stop();
  await registry.stop();
  await terminal.stop();
  await auth.stop();
  await db.drop();
  await nats.stop();
});
const token = await login(gw.url, admin);
const port = Number(new URL(gw.url).port);

interface Answer {
  status: number;
  type?: string;
  headers?: Record<string, string>;
  body: any;
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** A request over a raw socket: for what fetch will not send (oversized or broken HTTP). */
function raw(text: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const s = connect(port, "127.0.0.1", () => s.write(text));
    let buf = "";
    s.setEncoding("utf8");
    s.on("data", (d: string) => (buf += d));
    s.on("error", reject);
    s.on("close", () => {
      const [head = "", body = ""] = buf.split("\r\n\r\n");
      const [statusLine = "", ...lines] = head.split("\r\n");
      const split = (l: string) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()];
      const headers = Object.fromEntries(lines.map(split));
      resolve({ status: Number(statusLine.split(" ")[1]), headers, body: parse(body) });
    });
  });
}

/** A request with a Host header of our choosing (fetch sets its own), plus X-Forwarded-* for good measure. */
function withHost(method: string, path: string, host: string, to = port): Promise<Answer> {
  const headers = { host, authorization: `Bearer ${token}`, "x-forwarded-host": host, "x-forwarded-proto": "https" };
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port: to, method, path, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: parse(text) }));
    });
    req.on("error", reject);
    req.end();
  });
}

const isProblem = (t: Test, r: Answer, status: number, code: string, what: string) => {
  t.equal(r.status, status, `${what}: ${status}`);
  t.match(r.type ?? r.headers?.["content-type"], /^application\/problem\+json/, `${what}: problem+json`);
  t.equal(r.body?.code, code, `${what}: code ${code}`);
  t.equal(r.body?.status, status, `${what}: body status`);
};

t.test("every framework-level error is problem+json with a stable code", async (t) => {
  const get = (path: string) => call(gw.url, "GET", path, { token });
  const challenge = (raw: string, headers: Record<string, string> = {}) =>
    call(gw.url, "POST", "/api/v1/auth/challenge", { raw, headers });
  isProblem(t, await get(`/api/v1/agents/${"x".repeat(300)}`), 414, "uri_too_long", "segment over maxParamLength");
  isProblem(t, await get("/api/v1/agents/%zz"), 400, "invalid_url", "bad percent-encoding");
  isProblem(t, await get("/api/v1/agents/%E0%A4%A"), 400, "invalid_url", "truncated UTF-8 escape");
  const big = JSON.stringify({ public_key: "a".repeat(2_000_000) });
  isProblem(t, await challenge(big), 413, "body_too_large", "body over the limit");
  isProblem(t, await challenge("hi", { "content-type": "text/plain" }), 415, "unsupported_media_type", "text/plain");
  isProblem(t, await challenge("{not json"), 400, "invalid_json", "malformed JSON");
  isProblem(t, await get("/api/v1/nope"), 404, "route_not_found", "unknown path");
  const put = await fetch(`${gw.url}/api/v1/status`, { method: "PUT" });
  const putAnswer = { status: put.status, type: put.headers.get("content-type") ?? "", body: await put.json() };
  isProblem(t, putAnswer, 405, "method_not_allowed", "PUT on a GET route");
  t.equal(put.headers.get("allow"), "GET, HEAD");
  const patch = await call(gw.url, "PATCH", "/api/v1/agents/web-1", { token, body: {} });
  isProblem(t, patch, 405, "method_not_allowed", "PATCH on /agents/{node_id}");
  const bigHeader = `GET /api/v1/status HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`;
  isProblem(t, await raw(bigHeader), 431, "headers_too_large", "headers over the limit");
  const longLine = `GET /api/v1/${"a".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`;
  isProblem(t, await raw(longLine), 431, "headers_too_large", "request line over the limit");
  // The client is still sending when the answer goes out: it gets the answer, not a reset.
  const longThenBody = `PUT /api/v1/${"a".repeat(300_000)} HTTP/1.1\r\nHost: x\r\nContent-Length: 3000000\r\n\r\n${"b".repeat(3_000_000)}`;
  isProblem(t, await raw(longThenBody), 431, "headers_too_large", "long request line, then a large body");
  const garbage = await raw("NOT HTTP AT ALL\r\n\r\n");
  isProblem(t, garbage, 400, "malformed_request", "not HTTP");
  t.equal(garbage.headers?.["x-content-type-options"], "nosniff", "raw error replies carry the security headers too");
  t.equal((await call(gw.url, "GET", "/api/v1/status")).status, 200, "still serving");
});

t.test("security headers on every API response; nothing is cacheable", async (t) => {
  const expect = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
    "cache-control": "no-store",
  };
  const check = async (what: string, res: Response) => {
    for (const [h, v] of Object.entries(expect)) t.equal(res.headers.get(h), v, `${what}: ${h}`);
    await res.arrayBuffer();
  };
  const json = { "content-type": "application/json" };
  const post = (path: string, body: unknown) =>
    fetch(`${gw.url}${path}`, { method: "POST", headers: json, body: JSON.stringify(body) });
  const ch = await post("/api/v1/auth/challenge", { public_key: admin.publicKeyHex });
  const nonce = ((await ch.clone().json()) as { nonce: string }).nonce;
  await check("challenge", ch);
  const signature = sign(null, Buffer.from(nonce, "hex"), admin.privateKey).toString("hex");
  const verify = await post("/api/v1/auth/verify", { public_key: admin.publicKeyHex, nonce, signature });
  t.equal(verify.status, 200);
  t.ok(((await verify.clone().json()) as { token?: string }).token, "verify carries a token");
  await check("verify", verify);
  const bearer = { authorization: `Bearer ${token}` };
  await check("whoami", await fetch(`${gw.url}/api/v1/auth/whoami`, { headers: bearer }));
  await check("a list", await fetch(`${gw.url}/api/v1/operators`, { headers: bearer }));
  await check("a 401 problem", await fetch(`${gw.url}/api/v1/operators`));
  await check("a 404 problem", await fetch(`${gw.url}/api/v1/nope`));
  await check("a framework error", await fetch(`${gw.url}/api/v1/agents/%zz`));
  const openapi = await fetch(`${gw.url}/api/v1/openapi.json`);
  t.equal(openapi.status, 200);
  t.equal(((await openapi.clone().json()) as { openapi: string }).openapi, "3.1.0", "the OpenAPI document downloads");
  await check("openapi.json", openapi);
});

t.test("ws_url never comes from the Host header", async (t) => {
  const opened = await withHost("POST", `/api/v1/terminal/${NODE}`, "evil.example");
  t.equal(opened.status, 201);
  const id = opened.body.session_id as string;
  const wsUrl = opened.body.ws_url as string;
  t.notMatch(wsUrl, /evil/, `open: ${wsUrl}`);
  const listener = new RegExp(`^ws://127\\.0\\.0\\.1:${port}/api/v1/terminal/session/${id}/attach\\?ticket=`);
  t.match(wsUrl, listener, "the listener address");
  const ticket = await withHost("POST", `/api/v1/terminal/session/${id}/ticket`, "evil.example:443");
  t.equal(ticket.status, 201);
  t.notMatch(ticket.body.ws_url, /evil/, "re-attach ticket");
  t.match(ticket.body.ws_url, listener);
  t.equal((await call(gw.url, "DELETE", `/api/v1/terminal/session/${id}`, { token })).status, 204);
});

t.test("with http.public_url, ws_url is built from it", async (t) => {
  const opened = await withHost("POST", `/api/v1/terminal/${NODE}`, "evil.example", Number(new URL(pub.url).port));
  t.equal(opened.status, 201);
  const id = opened.body.session_id as string;
  t.match(opened.body.ws_url, new RegExp(`^wss://orch\\.example\\.com/api/v1/terminal/session/${id}/attach\\?ticket=`));
  t.equal((await call(gw.url, "DELETE", `/api/v1/terminal/session/${id}`, { token })).status, 204);
  const parse = (public_url: string) => () => gatewayConfigSchema.parse({ http: { public_url } });
  t.throws(parse("orch.example.com"), "a public_url without scheme is refused at start");
  t.throws(parse("https://u:p@orch.example.com"), "credentials refused");
  t.throws(parse("https://orch.example.com/?x=1"), "query refused");
});

t.test("the listener address, as a URL host", async (t) => {
  const at = (localAddress: string) => ({ raw: { socket: { localAddress, localPort: 8080 } } }) as never;
  const http = { public_url: "" } as never;
  t.equal(publicBaseUrl(http, at("10.0.0.5")), "http://10.0.0.5:8080");
  t.equal(publicBaseUrl(http, at("::ffff:127.0.0.1")), "http://127.0.0.1:8080");
  t.equal(publicBaseUrl(http, at("fe80::1%eth0")), "http://[fe80::1]:8080");
});
