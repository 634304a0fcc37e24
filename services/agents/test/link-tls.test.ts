// The agent link is authenticated by default: the built agents service, started the way
// `npm run up` starts it (a development CA from ensureDevCa, its certificate through env), serves
// TLS and prints the certificate's fingerprint; without TLS material it refuses to start unless
// told `insecure: true`, and then it warns.
import { spawn, type ChildProcess } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { fileURLToPath } from "node:url";
import t from "tap";
import * as grpc from "@grpc/grpc-js";
import { certFingerprint } from "@orch/contracts";
import { createTestDatabase, ensureDevCa, eventually, freePort, startNats, waitForPort } from "@orch/kit/testing";
import { agentsConfigSchema } from "../src/config.js";
import { memIdentity, testLink } from "./harness.js";

const MAIN = fileURLToPath(new URL("../dist/main.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "orch-link-tls-t-"));
const nats = await startNats();
const db = await createTestDatabase();
const children: ChildProcess[] = [];
t.teardown(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await db.drop();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Run {
  child: ChildProcess;
  out: string[];
  records(): Array<Record<string, any>>;
  exited: Promise<number | null>;
}

function run(env: Record<string, string>, withInfra = true): Run {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("ORCH_AGENTS_")));
  const infra = withInfra
    ? { NATS_URL: nats.url, DATABASE_URL: db.url, ...nats.busEnv("agents") }
    : // Unreachable: an exit before a connection attempt would hang proves nothing was tried.
      { NATS_URL: "nats://127.0.0.1:1", DATABASE_URL: "postgres://nobody@127.0.0.1:1/x" };
  const fixed = { ORCH_HEALTH_PORT: "0", ORCH_HEALTH_HOST: "127.0.0.1", ORCH_AGENTS_LINK_HOST: "127.0.0.1" };
  const child = spawn(process.execPath, [MAIN], {
    env: { ...base, ...infra, ...fixed, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const out: string[] = [];
  child.stdout!.on("data", (d: Buffer) => out.push(d.toString()));
  child.stderr!.on("data", (d: Buffer) => out.push(d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const records = () =>
    out
      .join("")
      .split("\n")
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, any>];
        } catch {
          return [];
        }
      });
  return { child, out, records, exited };
}

const stop = async (r: Run) => {
  r.child.kill("SIGTERM");
  await r.exited;
};

t.test("built service exists", async (t) => {
  t.ok(existsSync(MAIN), "run `npx turbo run build` first");
});

t.test("config: no TLS material and no insecure → refused, with what to set", async (t) => {
  const issues = agentsConfigSchema.safeParse({}).error?.issues ?? [];
  t.match(
    issues.map((i) => i.path.join(".")),
    ["agents.tls_cert"],
  );
  t.match(issues[0]?.message, /agents\.tls_cert and agents\.tls_key.*agents\.insecure: true/);
  t.notOk(agentsConfigSchema.safeParse({ agents: { tls_cert: "/c" } }).success, "cert without key");
  t.notOk(agentsConfigSchema.safeParse({ agents: { tls_key: "/k" } }).success, "key without cert");
  const ok = (agents: Record<string, unknown>) => agentsConfigSchema.safeParse({ agents }).success;
  t.notOk(ok({ tls_cert: "/c", tls_key: "/k", insecure: true }), "both at once");
  t.notOk(ok({ tls_ca: "/ca", insecure: true }), "a CA without a certificate");
  t.ok(agentsConfigSchema.safeParse({ agents: { tls_cert: "/c", tls_key: "/k" } }).success);
  t.ok(agentsConfigSchema.safeParse({ agents: { insecure: true } }).success);
});

t.test("the process without TLS material exits 2 before connecting to anything", async (t) => {
  const r = run({}, false);
  t.equal(await r.exited, 2);
  t.match(r.out.join(""), /agents: config: invalid configuration[\s\S]*agents\.tls_cert: the agent link needs a TLS/);
  t.match(r.out.join(""), /ORCH_AGENTS_INSECURE=true/);
});

t.test("unreadable or mismatched certificate files fail the start, naming the file", async (t) => {
  const ca = ensureDevCa(join(dir, "a"));
  const other = ensureDevCa(join(dir, "b"));
  const files = (cert: string, key: string) => ({
    ORCH_AGENTS_TLS_CERT: cert,
    ORCH_AGENTS_TLS_KEY: key,
    ORCH_AGENTS_LINK_PORT: "0",
  });
  const missing = run(files(join(dir, "nope.crt"), ca.serverKey));
  t.not(await missing.exited, 0);
  t.match(missing.out.join(""), /agents\.tls_cert: cannot read .*nope\.crt/);
  const wrongKey = run(files(ca.serverCert, other.serverKey));
  t.not(await wrongKey.exited, 0);
  t.match(wrongKey.out.join(""), /agents\.tls_key: .* is not the key of the certificate/);
  const junk = join(dir, "junk.crt");
  writeFileSync(junk, "not a certificate\n");
  const notPem = run(files(junk, ca.serverKey));
  t.not(await notPem.exited, 0);
  t.match(notPem.out.join(""), /holds no PEM certificate/);
});

t.test("started as `npm run up` starts it: TLS only, and it prints the fingerprints agents pin", async (t) => {
  const ca = ensureDevCa(join(dir, "up-tls"));
  t.same(ca.created, ["ca", "server"], "first run creates the CA and the server certificate");
  t.same(ensureDevCa(join(dir, "up-tls")).created, [], "later runs keep them (agents keep trusting the same CA)");
  const port = await freePort();
  // What scripts/up.mjs passes the agents service.
  const upEnv = { ORCH_AGENTS_TLS_CERT: ca.serverCert, ORCH_AGENTS_TLS_KEY: ca.serverKey };
  const svc = run({ ...upEnv, ORCH_AGENTS_LINK_PORT: `${port}` });
  t.teardown(() => stop(svc));
  const printed = await eventually(() => svc.records().find((r) => r.msg === "agent link certificate"), 30_000);
  await waitForPort(port, 10_000);
  t.equal(printed.fingerprint, ca.fingerprint, "the server certificate's fingerprint is logged");
  t.same(printed.ca_fingerprints, [ca.caFingerprint], "and its CA's, sent in the chain");
  t.match(
    svc.records().find((r) => r.msg === "agent link listening"),
    { tls: true },
  );

  const presented = await new Promise<string[]>((resolve, reject) => {
    const s = tlsConnect({ host: "127.0.0.1", port, rejectUnauthorized: false, ALPNProtocols: ["h2"] }, () => {
      const leaf = s.getPeerCertificate(true);
      const chain = [leaf.raw, leaf.issuerCertificate?.raw].filter(Boolean).map((raw) => certFingerprint(raw!));
      s.destroy();
      resolve(chain);
    });
    s.once("error", reject);
  });
  t.same(presented, [ca.fingerprint, ca.caFingerprint], "the link presents that certificate and its CA");
  t.ok(new X509Certificate(readFileSync(ca.serverCert)).checkIP("127.0.0.1"), "the dev certificate names loopback");

  const plain = testLink(`127.0.0.1:${port}`, memIdentity(), { credentials: grpc.credentials.createInsecure() });
  t.match(await plain.outcome, { kind: "closed", wasUp: false }, "a plaintext client gets no link");
  const raw = await new Promise<string>((resolve) => {
    // An HTTP/2 preface in the clear: a TLS server answers with an alert or closes, never h2 frames.
    const s = tcpConnect(port, "127.0.0.1", () => s.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
    const got: Buffer[] = [];
    s.on("data", (d) => got.push(d));
    s.on("close", () => resolve(Buffer.concat(got).toString("latin1")));
    s.on("error", () => {});
    setTimeout(() => s.destroy(), 3000).unref();
  });
  t.notMatch(raw, /\x00\x00.\x04/, "no HTTP/2 SETTINGS frame in plaintext");
  const trusting = grpc.credentials.createSsl(readFileSync(ca.caCert));
  const ok = testLink(`127.0.0.1:${port}`, memIdentity(), { credentials: trusting });
  t.equal((await ok.up()).status, "pending", "a client trusting the development CA is welcomed");
  ok.close();
});

t.test("agents.tls_ca: a certificate file without its CA still lets agents pin the CA", async (t) => {
  const ca = ensureDevCa(join(dir, "leaf-only"));
  const leafOnly = join(dir, "leaf-only", "leaf.crt");
  const firstPem = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/;
  writeFileSync(leafOnly, readFileSync(ca.serverCert, "utf8").match(firstPem)![0]);
  const port = await freePort();
  const tlsEnv = { ORCH_AGENTS_TLS_CERT: leafOnly, ORCH_AGENTS_TLS_KEY: ca.serverKey, ORCH_AGENTS_TLS_CA: ca.caCert };
  const svc = run({ ...tlsEnv, ORCH_AGENTS_LINK_PORT: String(port) });
  t.teardown(() => stop(svc));
  const printed = await eventually(() => svc.records().find((r) => r.msg === "agent link certificate"), 30_000);
  t.same(printed.ca_fingerprints, [ca.caFingerprint], "the CA from tls_ca is sent after the certificate");
  await waitForPort(port, 10_000);
  const chain = await new Promise<string[]>((resolve, reject) => {
    const s = tlsConnect({ host: "127.0.0.1", port, rejectUnauthorized: false, ALPNProtocols: ["h2"] }, () => {
      const leaf = s.getPeerCertificate(true);
      resolve([leaf.raw, leaf.issuerCertificate?.raw].filter(Boolean).map((raw) => certFingerprint(raw!)));
      s.destroy();
    });
    s.once("error", reject);
  });
  t.same(chain, [ca.fingerprint, ca.caFingerprint]);
});

t.test("insecure: true runs a plaintext link, and says so as a warning", async (t) => {
  const port = await freePort();
  const svc = run({ ORCH_AGENTS_INSECURE: "true", ORCH_AGENTS_LINK_PORT: String(port) });
  t.teardown(() => stop(svc));
  const warn = await eventually(() => svc.records().find((r) => /PLAINTEXT/.test(String(r.msg))), 30_000);
  t.equal(warn.level, 40, "a warning");
  t.match(warn.msg, /agents cannot authenticate this server/);
  t.match(
    svc.records().find((r) => r.msg === "agent link listening"),
    { tls: false },
  );
  const link = testLink(`127.0.0.1:${port}`, memIdentity(), { credentials: grpc.credentials.createInsecure() });
  t.equal((await link.up()).status, "pending");
  link.close();
});
