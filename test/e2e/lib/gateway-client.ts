import { sign } from "node:crypto";
import type { KeyPair } from "@orch/kit/testing";

export interface Reply {
  status: number;
  body: any;
  text: string;
  /** Which gateway answered. */
  url: string;
}

/** What one call went through: every attempt in order, and how it ended. */
export interface CallRecord {
  label: string;
  /** `refused` attempts reached no gateway (connect failed); the others are requests. */
  attempts: Array<{ url: string; outcome: string; refused?: true }>;
  /** Requests that reached a gateway: 1, or 2 when the call was retried. */
  requests: number;
  ok: boolean;
}

/** One HTTP request to one gateway; a connection failure throws. */
export async function request(
  url: string,
  method: string,
  path: string,
  o: { token?: string; body?: unknown; timeoutMs?: number } = {},
): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${url}${path}`, {
    method,
    headers,
    ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}),
    signal: AbortSignal.timeout(o.timeoutMs ?? 30_000),
  });
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  return { status: res.status, body, text, url };
}

/** Challenge + verify against one gateway; returns the bearer token (valid on every gateway). */
export async function login(url: string, key: KeyPair): Promise<string> {
  const ch = await request(url, "POST", "/api/v1/auth/challenge", { body: { public_key: key.publicKeyHex } });
  if (ch.status !== 200) throw new Error(`challenge via ${url}: ${ch.status} ${ch.text}`);
  const signature = sign(null, Buffer.from(ch.body.nonce, "hex"), key.privateKey).toString("hex");
  const v = await request(url, "POST", "/api/v1/auth/verify", {
    body: { public_key: key.publicKeyHex, nonce: ch.body.nonce, signature },
  });
  if (v.status !== 200) throw new Error(`verify via ${url}: ${v.status} ${v.text}`);
  return v.body.token as string;
}

const refusedConnect = (err: unknown) => (err as { cause?: { code?: string } }).cause?.code === "ECONNREFUSED";

/**
 * The operator client of the scale test, with the gateways in front of it the way ingress-nginx
 * has them: a gateway that refuses the connection is skipped for the next one (nginx's default
 * `proxy_next_upstream error`), which reached nothing and so is not a retry. A request that
 * reached a gateway and failed (5xx, or the connection dropped mid-request) is retried once,
 * starting with the other gateway. A 4xx is the caller's mistake and is never retried. Every call
 * is recorded so the test can show what happened.
 */
export function retryingClient(urls: string[], token: string, timeoutMs = 15_000) {
  const log: CallRecord[] = [];

  /** One request, to the first gateway from `first` on that accepts the connection. */
  async function send(
    rec: CallRecord,
    first: number,
    method: string,
    path: string,
    body: unknown,
  ): Promise<{ index: number; reply?: Reply }> {
    for (let k = 0; k < urls.length; k++) {
      const index = (first + k) % urls.length;
      const url = urls[index]!;
      try {
        const reply = await request(url, method, path, { token, body, timeoutMs });
        rec.requests++;
        return { index, reply };
      } catch (err) {
        if (refusedConnect(err)) {
          rec.attempts.push({ url, outcome: "ECONNREFUSED", refused: true });
          continue;
        }
        rec.requests++;
        const e = err as Error & { cause?: { code?: string } };
        rec.attempts.push({ url, outcome: e.cause?.code ?? e.name });
        return { index };
      }
    }
    return { index: first };
  }

  async function call(
    label: string,
    method: string,
    path: string,
    accept: (r: Reply) => boolean,
    body?: unknown,
  ): Promise<CallRecord> {
    const rec: CallRecord = { label, attempts: [], requests: 0, ok: false };
    log.push(rec);
    let first = 0;
    for (let i = 0; i < 2; i++) {
      const { index, reply } = await send(rec, first, method, path, body);
      if (reply) {
        const retriable = reply.status >= 500;
        rec.ok = !retriable && accept(reply);
        rec.attempts.push({
          url: reply.url,
          outcome: `${reply.status}${rec.ok ? "" : ` ${reply.text.slice(0, 200)}`}`,
        });
        if (!retriable) break;
      } else if (rec.requests === 0) {
        break; // no gateway accepted a connection at all
      }
      first = index + 1;
    }
    return rec;
  }
  return { call, log };
}
