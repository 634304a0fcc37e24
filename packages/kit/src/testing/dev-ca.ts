import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname, networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { certFingerprint } from "@orch/contracts";

/**
 * A development CA and an agent-link server certificate signed by it, for `npm run up` (under
 * `.orch/tls`) and for tests (a throwaway directory per test process). Production takes
 * cert-manager or given files instead (docs/deploy.md).
 *
 * Made with the `openssl` CLI: Node can read X.509 but not build it, and this is development
 * tooling only (no service links against it).
 */
export interface DevCa {
  dir: string;
  /** The CA certificate agents trust (`orch-agent --ca`). */
  caCert: string;
  caKey: string;
  /** The server certificate followed by the CA (full chain, so agents can pin either). */
  serverCert: string;
  serverKey: string;
  /** `sha256:HEX` of the server certificate and of the CA (what `--server-fingerprint` takes). */
  fingerprint: string;
  caFingerprint: string;
  /** What was made on this call (nothing when both were there and valid). */
  created: Array<"ca" | "server">;
}

const CA_DAYS = 3650;
const SERVER_DAYS = 397;
/** A server certificate this close to expiry is re-issued (the CA, and so every agent's trust, stays). */
const RENEW_BEFORE_MS = 30 * 86_400_000;

/** The names a local agent may dial: loopback, this host's name and its interface addresses. */
function localNames(): string[] {
  const ips = new Set(["127.0.0.1", "::1"]);
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) ips.add(a.address.replace(/%.*$/, ""));
  }
  const dns = new Set(["localhost", hostname()].filter((h) => /^[A-Za-z0-9.-]+$/.test(h)));
  return [...[...dns].map((d) => `DNS:${d}`), ...[...ips].map((ip) => `IP:${ip}`)];
}

function openssl(args: string[]): void {
  try {
    execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: Buffer };
    if (e.code === "ENOENT") {
      throw new Error("the openssl command is needed to create the development CA (apt-get install openssl)");
    }
    throw new Error(`openssl ${args[0]} failed: ${e.stderr?.toString().trim() ?? e.message}`);
  }
}

const readCert = (path: string) => new X509Certificate(readFileSync(path));

function usable(path: string, now: number): boolean {
  if (!existsSync(path)) return false;
  try {
    return Date.parse(readCert(path).validTo) - now > RENEW_BEFORE_MS;
  } catch {
    return false;
  }
}

/**
 * Creates what is missing in `dir` (mode 0700): the CA on first run, the server certificate when
 * absent, expiring, or not issued by this CA. Idempotent, so `npm run up` calls it every time.
 */
export function ensureDevCa(dir: string, opts: { now?: number; names?: string[] } = {}): DevCa {
  const now = opts.now ?? Date.now();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const caCert = join(dir, "ca.crt");
  const caKey = join(dir, "ca.key");
  const serverCert = join(dir, "server.crt");
  const serverKey = join(dir, "server.key");
  const created: DevCa["created"] = [];
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

  if (!usable(caCert, now) || !existsSync(caKey)) {
    openssl([
      ...["req", "-x509", ...ec, "-keyout", caKey, "-out", caCert, "-days", String(CA_DAYS)],
      ...["-subj", "/O=orch/CN=orch development CA", "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0"],
      ...["-addext", "keyUsage=critical,keyCertSign,cRLSign"],
    ]);
    created.push("ca");
  }
  const ca = readCert(caCert);
  const issuedHere = () => {
    try {
      return readCert(serverCert).checkIssued(ca) && readCert(serverCert).verify(ca.publicKey);
    } catch {
      return false;
    }
  };
  if (created.includes("ca") || !usable(serverCert, now) || !existsSync(serverKey) || !issuedHere()) {
    const csr = join(dir, "server.csr");
    const ext = join(dir, "server.ext");
    const leaf = join(dir, "server.leaf.crt");
    openssl(["req", "-new", ...ec, "-keyout", serverKey, "-out", csr, "-subj", "/O=orch/CN=orch agents service"]);
    const extensions = [
      "basicConstraints=critical,CA:FALSE",
      "keyUsage=critical,digitalSignature",
      "extendedKeyUsage=serverAuth",
      `subjectAltName=${(opts.names ?? localNames()).join(",")}`,
    ];
    writeFileSync(ext, `${extensions.join("\n")}\n`);
    openssl([
      ...["x509", "-req", "-in", csr, "-CA", caCert, "-CAkey", caKey, "-set_serial", `0x${Date.now().toString(16)}`],
      ...["-days", String(SERVER_DAYS), "-extfile", ext, "-out", leaf],
    ]);
    writeFileSync(serverCert, readFileSync(leaf, "utf8") + readFileSync(caCert, "utf8"));
    for (const f of [csr, ext, leaf]) rmSync(f, { force: true });
    created.push("server");
  }
  for (const k of [caKey, serverKey]) chmodSync(k, 0o600);
  const fingerprint = certFingerprint(readCert(serverCert).raw);
  return { dir, caCert, caKey, serverCert, serverKey, fingerprint, caFingerprint: certFingerprint(ca.raw), created };
}

let perProcess: DevCa | undefined;

/**
 * One development CA for this test process (a test file), removed at exit: the agents service of
 * the harness and of startSystem serve its certificate, spawned agents trust it with `--ca`.
 */
export function testLinkTls(): DevCa {
  if (perProcess) return perProcess;
  const dir = mkdtempSync(join(tmpdir(), "orch-link-tls-"));
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  perProcess = ensureDevCa(dir, { names: ["DNS:localhost", "IP:127.0.0.1", "IP:::1"] });
  return perProcess;
}
