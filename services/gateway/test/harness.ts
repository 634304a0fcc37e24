import { sign } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { systemClock, ulidGenerator, type Clock, type Logger } from "@orch/kit";
import { silentLogger, type KeyPair, type NatsHandle } from "@orch/kit/testing";
import { buildGateway } from "../src/app.js";
import { gatewayConfigSchema } from "../src/config.js";

// The auth service the gateway tests log in against is auth's own test harness, not a copy of it.
export { AUTH_MIGRATIONS, manualClock, startAuth } from "../../auth/test/harness.js";

export async function startGateway(
  nats: NatsHandle,
  clock: Clock = systemClock,
  overrides: Record<string, unknown> = {},
  o: { log?: Logger; http?: Record<string, unknown> } = {},
) {
  const nc = await nats.connect("gateway");
  const config = gatewayConfigSchema.parse({
    http: { port: 0, host: "127.0.0.1", ...o.http },
    gateway: { services: ["auth"], ...overrides },
  });
  const { app, routes, tokens } = await buildGateway({
    config,
    log: o.log ?? silentLogger(),
    nc,
    clock,
    ids: ulidGenerator(clock),
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
  return {
    app: app as FastifyInstance,
    routes,
    tokens,
    url,
    nc,
    async stop() {
      await app.close();
      tokens.stop();
      await nc.close();
    },
  };
}

export async function call(
  url: string,
  method: string,
  path: string,
  o: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  const body = o.raw ?? (o.body !== undefined ? JSON.stringify(o.body) : undefined);
  if (body !== undefined) headers["content-type"] ??= "application/json";
  const res = await fetch(url + path, {
    method,
    headers,
    ...(body !== undefined ? { body } : {}),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, body: json, text, type: res.headers.get("content-type") ?? "" };
}

export async function login(url: string, key: KeyPair): Promise<string> {
  const ch = await call(url, "POST", "/api/v1/auth/challenge", { body: { public_key: key.publicKeyHex } });
  if (ch.status !== 200) throw new Error(`challenge ${ch.status}: ${ch.text}`);
  const signature = sign(null, Buffer.from(ch.body.nonce, "hex"), key.privateKey).toString("hex");
  const v = await call(url, "POST", "/api/v1/auth/verify", {
    body: { public_key: key.publicKeyHex, nonce: ch.body.nonce, signature },
  });
  if (v.status !== 200) throw new Error(`verify ${v.status}: ${v.text}`);
  return v.body.token;
}
