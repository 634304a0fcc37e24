import t, { type Test } from "tap";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNats } from "@orch/kit/testing";
import { CONSOLE_CSP } from "../src/security-headers.js";
import { startGateway } from "./harness.js";

// The console served by the gateway (console/static.ts) from a fake build in a temp directory:
// pages get the console's policy and no-cache, hashed assets a year, the API keeps its own headers.
const INDEX = '<!doctype html><html><head><script type="module" src="/assets/app-1a2b3c.js"></script></head></html>';
const ASSET = "console.log('app');";
const dir = mkdtempSync(join(tmpdir(), "orch-console-"));
mkdirSync(join(dir, "assets"));
writeFileSync(join(dir, "index.html"), INDEX);
writeFileSync(join(dir, "assets", "app-1a2b3c.js"), ASSET);
writeFileSync(join(dir, "assets", ".secret"), "no");
const empty = mkdtempSync(join(tmpdir(), "orch-console-empty-"));

const nats = await startNats();
const gw = await startGateway(nats, undefined, {}, { http: { console_dir: dir } });
const off = await startGateway(nats, undefined, {}, { http: { console_dir: empty } });
t.teardown(async () => {
  await off.stop();
  await gw.stop();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
  rmSync(empty, { recursive: true, force: true });
});

const get = async (url: string, path: string, init: RequestInit = {}) => {
  const res = await fetch(url + path, { ...init, signal: AbortSignal.timeout(15_000) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text };
};

const consoleHeaders = (t: Test, h: Headers, cache: string) => {
  t.equal(h.get("content-security-policy"), CONSOLE_CSP);
  t.equal(h.get("x-content-type-options"), "nosniff");
  t.equal(h.get("referrer-policy"), "same-origin");
  t.equal(h.get("cross-origin-opener-policy"), "same-origin");
  t.equal(h.get("x-frame-options"), "DENY");
  t.equal(h.get("cache-control"), cache);
};

const apiHeaders = (t: Test, h: Headers) => {
  t.equal(h.get("content-security-policy"), "default-src 'none'; frame-ancestors 'none'");
  t.equal(h.get("referrer-policy"), "no-referrer");
  t.equal(h.get("cache-control"), "no-store");
  t.equal(h.get("x-content-type-options"), "nosniff");
  t.equal(h.get("cross-origin-opener-policy"), null);
  t.equal(h.get("x-frame-options"), null);
};

t.test("the console CSP is the agreed one", async (t) => {
  t.equal(
    CONSOLE_CSP,
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  );
});

t.test("/ and client-side routes answer index.html with the console policy, not cached", async (t) => {
  for (const path of ["/", "/agents/x", "/audit?type=auth.login.succeeded", "/login"]) {
    const r = await get(gw.url, path, { headers: { accept: "text/html" } });
    t.equal(r.status, 200, path);
    t.match(r.headers.get("content-type"), /^text\/html/, path);
    t.equal(r.text, INDEX, path);
    consoleHeaders(t, r.headers, "no-cache");
  }
  const head = await get(gw.url, "/agents/x", { method: "HEAD" });
  t.equal(head.status, 200);
  t.equal(head.text, "");
  consoleHeaders(t, head.headers, "no-cache");
});

t.test("hashed assets are immutable; a revalidation keeps the console headers", async (t) => {
  const r = await get(gw.url, "/assets/app-1a2b3c.js");
  t.equal(r.status, 200);
  t.equal(r.text, ASSET);
  t.match(r.headers.get("content-type"), /javascript/);
  consoleHeaders(t, r.headers, "public, max-age=31536000, immutable");
  const etag = r.headers.get("etag");
  t.ok(etag);
  const again = await get(gw.url, "/assets/app-1a2b3c.js", {
    // fetch would add cache-control: no-cache to a conditional request, which forbids a 304.
    headers: { "if-none-match": etag!, "cache-control": "max-age=0" },
  });
  t.equal(again.status, 304);
  consoleHeaders(t, again.headers, "public, max-age=31536000, immutable");
});

t.test("a missing asset is a problem+json 404, never the page", async (t) => {
  for (const path of ["/assets/missing.js", "/assets/.secret", "/assets/"]) {
    const r = await get(gw.url, path, { headers: { accept: "text/html" } });
    t.equal(r.status, 404, path);
    t.match(r.headers.get("content-type"), /application\/problem\+json/, path);
    t.equal(JSON.parse(r.text).code, "route_not_found", path);
    apiHeaders(t, r.headers);
  }
});

t.test("the API keeps its 404s and headers", async (t) => {
  for (const path of ["/api/v1/nope", "/api/nope", "/api"]) {
    const r = await get(gw.url, path, { headers: { accept: "text/html" } });
    t.equal(r.status, 404, path);
    t.match(r.headers.get("content-type"), /application\/problem\+json/);
    t.equal(JSON.parse(r.text).code, "route_not_found");
    apiHeaders(t, r.headers);
  }
  const doc = await get(gw.url, "/api/v1/openapi.json");
  t.equal(doc.status, 200);
  apiHeaders(t, doc.headers);
  const post = await get(gw.url, "/agents", { method: "POST", headers: { accept: "text/html" } });
  t.equal(post.status, 404, "only GET/HEAD fall back to the page");
  t.equal(JSON.parse(post.text).code, "route_not_found");
});

t.test("a console removed while running is console_unavailable, not an error", async (t) => {
  const gone = mkdtempSync(join(tmpdir(), "orch-console-gone-"));
  writeFileSync(join(gone, "index.html"), INDEX);
  const g = await startGateway(nats, undefined, {}, { http: { console_dir: gone } });
  t.teardown(() => g.stop());
  t.equal((await get(g.url, "/")).text, INDEX);
  rmSync(gone, { recursive: true, force: true });
  const r = await get(g.url, "/fleet");
  t.equal(r.status, 404);
  t.equal(JSON.parse(r.text).code, "console_unavailable");
  t.equal((await get(g.url, "/assets/app-1a2b3c.js")).status, 404);
});

t.test("without a built console the API still works and pages are console_unavailable", async (t) => {
  const r = await get(off.url, "/", { headers: { accept: "text/html" } });
  t.equal(r.status, 404);
  t.match(r.headers.get("content-type"), /application\/problem\+json/);
  t.equal(JSON.parse(r.text).code, "console_unavailable");
  t.equal((await get(off.url, "/assets/app-1a2b3c.js")).status, 404);
  t.equal((await get(off.url, "/api/v1/openapi.json")).status, 200);
  t.equal(JSON.parse((await get(off.url, "/api/v1/nope")).text).code, "route_not_found");
});
