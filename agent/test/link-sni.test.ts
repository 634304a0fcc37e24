import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createSecureServer } from "node:http2";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import * as grpc from "@grpc/grpc-js";
import { ensureDevCa, testLinkTls } from "@orch/kit/testing";
import { IP_SERVERNAME, linkChannelOptions, linkCredentials, type LinkTrust } from "../src/link/trust.js";

// An agent dialling the agents service by IP address (127.0.0.1:7443, what `npm run up` and most
// installs use) sends no IP address as the TLS server name, so Node prints no DEP0123 warning on
// every start; the server's certificate is still checked against the address dialled.

const warnings: Error[] = [];
process.on("warning", (w) => warnings.push(w));
const dep0123 = () => warnings.filter((w) => (w as Error & { code?: string }).code === "DEP0123");

/** An HTTP/2 TLS server (what grpc-js connects to) presenting `cert`; returns its host:port. */
async function tlsServer(cert: string, key: string): Promise<string> {
  const server = createSecureServer({ cert: readFileSync(cert), key: readFileSync(key) });
  server.on("stream", (stream) => {
    stream.respond({ ":status": 200 });
    stream.end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Connects the way the agent does (its credentials and channel options); resolves with the state reached. */
async function dial(trust: LinkTrust, server: string): Promise<"ready" | "failed"> {
  const creds = await linkCredentials(trust, server);
  if (!creds.ok) throw new Error(creds.detail);
  const client = new grpc.Client(server, creds.credentials, linkChannelOptions(server));
  const channel = client.getChannel();
  try {
    for (;;) {
      const state = channel.getConnectivityState(true);
      if (state === grpc.connectivityState.READY) return "ready";
      if (state === grpc.connectivityState.TRANSIENT_FAILURE) return "failed";
      await new Promise<void>((resolve, reject) =>
        channel.watchConnectivityState(state, Date.now() + 30_000, (err) => (err ? reject(err) : resolve())),
      );
    }
  } finally {
    client.close();
  }
}

t.test("unit: the server name is overridden for IP literals only", async (t) => {
  t.same(linkChannelOptions("127.0.0.1:7443"), { "grpc.ssl_target_name_override": IP_SERVERNAME });
  t.same(linkChannelOptions("[::1]:7443"), { "grpc.ssl_target_name_override": IP_SERVERNAME });
  t.same(linkChannelOptions("agents.example.com:7443"), {});
  t.same(linkChannelOptions("localhost:7443"), {});
});

t.test("dialling 127.0.0.1 pinned or by CA connects without DEP0123", async (t) => {
  const ca = testLinkTls();
  const server = await tlsServer(ca.serverCert, ca.serverKey);
  t.equal(await dial({ kind: "pin", fingerprint: ca.fingerprint }, server), "ready", "pinned");
  t.equal(await dial({ kind: "ca", caFile: ca.caCert }, server), "ready", "by CA (the certificate names 127.0.0.1)");
  t.same(dep0123(), [], "no 'TLS ServerName set to an IP address' warning");
});

t.test("by CA, a certificate that does not name the dialled address is still refused", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "orch-sni-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const other = ensureDevCa(dir, { names: ["DNS:localhost"] });
  const server = await tlsServer(other.serverCert, other.serverKey);
  t.equal(await dial({ kind: "ca", caFile: other.caCert }, server), "failed");
  t.same(dep0123(), []);
});
