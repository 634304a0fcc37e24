import { type KeyObject, X509Certificate, createPrivateKey } from "node:crypto";
import { readFileSync } from "node:fs";
import { certFingerprint } from "@orch/contracts";

export interface LinkTlsSettings {
  tls_cert: string;
  tls_key: string;
  tls_ca?: string;
  insecure: boolean;
}

/**
 * Default-deny for the agent link: without a certificate it would run in plaintext and agents
 * could not tell this server from any other, so that takes an explicit `insecure: true`.
 */
export function linkTlsIssues(s: LinkTlsSettings): Array<{ key: keyof LinkTlsSettings; message: string }> {
  if (Boolean(s.tls_cert) !== Boolean(s.tls_key)) {
    const message = "agents.tls_cert and agents.tls_key must be set together";
    return [{ key: s.tls_cert ? "tls_key" : "tls_cert", message }];
  }
  if (s.tls_ca && !s.tls_cert) {
    return [{ key: "tls_ca", message: "agents.tls_ca needs agents.tls_cert and agents.tls_key" }];
  }
  if (s.tls_cert && s.insecure) {
    const message = "agents.insecure cannot be combined with agents.tls_cert/tls_key: choose one";
    return [{ key: "insecure", message }];
  }
  if (!s.tls_cert && !s.insecure) {
    return [
      {
        key: "tls_cert",
        message:
          "the agent link needs a TLS identity: set agents.tls_cert and agents.tls_key (ORCH_AGENTS_TLS_CERT, " +
          "ORCH_AGENTS_TLS_KEY; `npm run up` makes a development CA in .orch/tls), or agents.insecure: true " +
          "(ORCH_AGENTS_INSECURE=true) for a plaintext link agents cannot authenticate",
      },
    ];
  }
  return [];
}

export interface LinkIdentity {
  certChain: Buffer;
  privateKey: Buffer;
  /** `sha256:HEX` of the server certificate, and of each CA certificate sent after it. */
  fingerprint: string;
  chainFingerprints: string[];
  subject: string;
  validTo: string;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * Reads and checks the certificate files once at start, so a bad file fails the start, not a
 * handshake. CA certificates from `caPath` not already in the chain are sent after it, so agents
 * can pin the CA even when the certificate file holds the leaf alone.
 */
export function loadLinkIdentity(certPath: string, keyPath: string, caPath = ""): LinkIdentity {
  const read = (p: string, what: string) => {
    try {
      return readFileSync(p);
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      throw new Error(`agents.${what}: cannot read ${p}: ${why}`);
    }
  };
  const privateKey = read(keyPath, "tls_key");
  const pems: string[] = read(certPath, "tls_cert").toString("utf8").match(PEM_CERT) ?? [];
  if (!pems.length) throw new Error(`agents.tls_cert: ${certPath} holds no PEM certificate`);
  if (caPath) {
    const extra = read(caPath, "tls_ca").toString("utf8").match(PEM_CERT) ?? [];
    if (!extra.length) throw new Error(`agents.tls_ca: ${caPath} holds no PEM certificate`);
    const has = new Set(pems.map((p) => new X509Certificate(p).fingerprint256));
    pems.push(...extra.filter((p) => !has.has(new X509Certificate(p).fingerprint256)));
  }
  const certChain = Buffer.from(`${pems.join("\n")}\n`);
  const certs = pems.map((p) => new X509Certificate(p));
  const leaf = certs[0]!;
  let key: KeyObject;
  try {
    key = createPrivateKey(privateKey);
  } catch {
    throw new Error(`agents.tls_key: ${keyPath} is not a PEM private key`);
  }
  if (!leaf.checkPrivateKey(key)) {
    throw new Error(`agents.tls_key: ${keyPath} is not the key of the certificate in ${certPath}`);
  }
  return {
    certChain,
    privateKey,
    fingerprint: certFingerprint(leaf.raw),
    chainFingerprints: certs.slice(1).map((c) => certFingerprint(c.raw)),
    subject: leaf.subject.replace(/\n/g, ", "),
    validTo: new Date(leaf.validTo).toISOString(),
  };
}
