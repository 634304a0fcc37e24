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
  attempts: Array<{ url: string; outcome: string }>;
  ok: boolean;
}

/** One HTTP request to one gateway; a connection failure throws. */
export async function request(url: string, method: string, path: string, o: { token?: string; body?: unknown; timeoutMs?: number } = {}): Promise<Reply> {
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
  const v = await request(url, "POST", "/api/v1/auth/verify", { body: { public_key: key.publicKeyHex, nonce: ch.body.nonce, signature } });
  if (v.status !== 200) throw new Error(`verify via ${url}: ${v.status} ${v.text}`);
  return v.body.token as string;
}

/**
 * The operator client of the scale test: tries the gateways in order and retries a call once,
 * against the next gateway, when the first attempt cannot connect or answers 5xx. A 4xx is the
 * caller's mistake and is not retried. Every call is recorded so the test can show what happened.
 */
export function retryingClient(urls: string[], token: string, timeoutMs = 15_000) {
  const log: CallRecord[] = [];
  async function call(label: string, method: string, path: string, accept: (r: Reply) => boolean, body?: unknown): Promise<CallRecord> {
    const rec: CallRecord = { label, attempts: [], ok: false };
    log.push(rec);
    for (let i = 0; i < 2 && !rec.ok; i++) {
      const url = urls[i % urls.length]!;
      try {
        const r = await request(url, method, path, { token, body, timeoutMs });
        const retriable = r.status >= 500;
        rec.ok = !retriable && accept(r);
        rec.attempts.push({ url, outcome: `${r.status}${rec.ok ? "" : ` ${r.text.slice(0, 200)}`}` });
        if (!retriable) break;
      } catch (err) {
        const e = err as Error & { cause?: { code?: string } };
        rec.attempts.push({ url, outcome: e.cause?.code ?? e.name });
      }
    }
    return rec;
  }
  return { call, log };
}
