import { readFileSync } from "node:fs";
import {
  checkServerIdentity,
  connect,
  createSecureContext,
  type DetailedPeerCertificate,
  type PeerCertificate,
} from "node:tls";
import { isIP } from "node:net";
import * as grpc from "@grpc/grpc-js";
import { certFingerprint } from "@orch/contracts";
import { HOST_PORT_RE } from "../host-port.js";

/**
 * How an agent authenticates the agents service. Never "whatever answers": plaintext is an
 * explicit `--insecure`, and a server learned by discovery is held to the same rule as `--server`.
 */
export type LinkTrust =
  /** Public PKI: the system's CA bundle and the dialled host name. */
  | { kind: "system" }
  /** A private CA file (`--ca`); the certificate must name the dialled host. */
  | { kind: "ca"; caFile: string }
  /** Exactly this server or CA certificate (`--server-fingerprint`), whatever the host name. */
  | { kind: "pin"; fingerprint: string }
  | { kind: "insecure" };

export type LinkCredentials =
  | { ok: true; credentials: grpc.ChannelCredentials }
  | { ok: false; reason: string; detail: string };

export function describeTrust(t: LinkTrust): string {
  switch (t.kind) {
    case "system":
      return "TLS, server verified by the system CAs";
    case "ca":
      return `TLS, server verified by the CA in ${t.caFile}`;
    case "pin":
      return `TLS, server pinned to ${t.fingerprint}`;
    case "insecure":
      return "PLAINTEXT (--insecure): the server is not authenticated and link traffic is readable on the network";
  }
}

/** The certificates the server sent, leaf first (Node links each to its issuer; the root links to itself). */
export function peerChain(cert: PeerCertificate | DetailedPeerCertificate): PeerCertificate[] {
  const out: PeerCertificate[] = [];
  let c: PeerCertificate | undefined = cert;
  while (c?.raw && !out.some((seen) => seen.raw.equals(c!.raw))) {
    out.push(c);
    c = (c as DetailedPeerCertificate).issuerCertificate;
  }
  return out;
}

const hostOf = (server: string) => {
  const m = HOST_PORT_RE.exec(server);
  if (!m) throw new Error(`not host:port: ${server}`);
  return { host: m[1]!.replace(/^\[|\]$/g, ""), port: Number(m[2]) };
};

/** What the server presents, read without trusting it (only hashed, never believed). */
async function presentedChain(server: string, timeoutMs: number): Promise<PeerCertificate[]> {
  const { host, port } = hostOf(server);
  return new Promise((resolve, reject) => {
    const sni = isIP(host) ? {} : { servername: host };
    const sock = connect({ host, port, rejectUnauthorized: false, ALPNProtocols: ["h2"], ...sni });
    const timer = setTimeout(() => sock.destroy(new Error("TLS handshake timed out")), timeoutMs);
    sock.once("secureConnect", () => {
      clearTimeout(timer);
      const chain = peerChain(sock.getPeerCertificate(true));
      sock.destroy();
      resolve(chain);
    });
    sock.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/**
 * The TLS server name grpc-js sends when the server is dialled by IP address. grpc-js sets the
 * dialled host as `servername` unless told otherwise, and for an IP literal Node then warns on
 * every start (DEP0123: RFC 6066 allows no IP address in SNI). Under `.invalid` (RFC 2606) this
 * names nothing; the server's certificate is still checked against the dialled address (see
 * `hostCheck`), never against this name.
 */
export const IP_SERVERNAME = "orch-agent-link.invalid";

/** gRPC channel options for dialling `server`: the SNI override for an IP literal, else none. */
export function linkChannelOptions(server: string): grpc.ChannelOptions {
  const host = dialledHost(server);
  return host && isIP(host) ? { "grpc.ssl_target_name_override": IP_SERVERNAME } : {};
}

const dialledHost = (server: string) => HOST_PORT_RE.exec(server)?.[1]?.replace(/^\[|\]$/g, "");

/**
 * The certificate check for the host actually dialled. grpc-js hands a check the override name
 * when one is set, so the system and CA trusts check the dialled host themselves: a certificate
 * must name the IP address (or host name) the agent connects to, override or not.
 */
const hostCheck = (server: string) => {
  const host = dialledHost(server);
  return host ? { checkServerIdentity: (_name: string, cert: PeerCertificate) => checkServerIdentity(host, cert) } : {};
};

/**
 * Credentials for one connection attempt to `server`.
 *
 * A pin is checked in two steps without a time-of-check gap: the presented chain is read once to
 * find the certificate with the pinned fingerprint (its bytes hash to the pin, so it is the real
 * one), and the gRPC connection then trusts that certificate alone as its anchor (partial chain:
 * a pinned leaf or intermediate counts as a root). Whatever the server presents on the real
 * connection must verify against it, so a server that merely copied the certificate, without its
 * key, fails the handshake. Host names are not checked: pinning names the server by key.
 */
export async function linkCredentials(trust: LinkTrust, server: string, timeoutMs = 10_000): Promise<LinkCredentials> {
  switch (trust.kind) {
    case "insecure":
      return { ok: true, credentials: grpc.credentials.createInsecure() };
    case "system":
      return { ok: true, credentials: grpc.credentials.createSsl(null, null, null, hostCheck(server)) };
    case "ca": {
      let ca: Buffer;
      try {
        // Read per attempt: a CA file replaced on disk is picked up without a restart.
        ca = readFileSync(trust.caFile);
      } catch (err) {
        return { ok: false, reason: "ca_unreadable", detail: `cannot read ${trust.caFile}: ${(err as Error).message}` };
      }
      return { ok: true, credentials: grpc.credentials.createSsl(ca, null, null, hostCheck(server)) };
    }
    case "pin": {
      let chain: PeerCertificate[];
      try {
        chain = await presentedChain(server, timeoutMs);
      } catch (err) {
        return { ok: false, reason: "tls_failed", detail: `TLS handshake failed: ${(err as Error).message}` };
      }
      const presented = chain.map((c) => certFingerprint(c.raw));
      const pinned = chain[presented.indexOf(trust.fingerprint)];
      if (!pinned) {
        return {
          ok: false,
          reason: "server_fingerprint_mismatch",
          detail:
            `the server presented ${presented.join(", ") || "no certificate"}, ` +
            `none of which is the pinned ${trust.fingerprint}`,
        };
      }
      const body = pinned.raw
        .toString("base64")
        .match(/.{1,64}/g)!
        .join("\n");
      const pem = `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`;
      // allowPartialTrustChain (Node >= 20.18) is missing from @types/node 20.
      const options = { ca: pem, allowPartialTrustChain: true } as Parameters<typeof createSecureContext>[0];
      const context = createSecureContext(options);
      return {
        ok: true,
        credentials: grpc.credentials.createFromSecureContext(context, {
          // Runs only after the chain verified to the pinned anchor; re-checked here as a second lock.
          checkServerIdentity: (_host, cert) =>
            peerChain(cert).some((c) => certFingerprint(c.raw) === trust.fingerprint)
              ? undefined
              : new Error(`the server's certificate chain does not contain ${trust.fingerprint}`),
        }),
      };
    }
  }
}
