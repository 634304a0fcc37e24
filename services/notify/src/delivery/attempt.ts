import type { ChannelType } from "../channels/config.js";
import type { EventJson } from "../events.js";
import { render } from "./format.js";
import { send, type SendPolicy } from "./http.js";
import { parseRetryAfter } from "./backoff.js";
import { TargetRefused } from "./ssrf.js";

export type Outcome =
  | { kind: "delivered"; status: number; snippet: string }
  /** 410 Gone: the receiver says this endpoint will never accept again. */
  | { kind: "gone"; status: number; snippet: string; error: string }
  /** The address policy refused the target: retrying would not change that. */
  | { kind: "refused"; status: 0; snippet: ""; error: string }
  | { kind: "retry"; status: number; snippet: string; error: string; retryAfterMs?: number };

export const SNIPPET_CHARS = 200;

export interface AttemptInput {
  type: ChannelType;
  pub: Record<string, unknown>;
  creds: Record<string, unknown>;
  event: EventJson;
  deliveryId: string;
  now: number;
}

/** Every credential string (and a credential URL's path), longest first, for scrubbing receiver answers. */
function secretsOf(creds: Record<string, unknown>): string[] {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (typeof v === "string" && v.length >= 4) {
      out.push(v);
      try {
        const u = new URL(v);
        if (u.pathname.length > 1) out.push(u.pathname.slice(1));
      } catch {
        /* not a URL */
      }
    } else if (v && typeof v === "object") Object.values(v).forEach(walk);
  };
  walk(creds);
  return out.sort((a, b) => b.length - a.length);
}

/** A receiver may echo what we sent (headers, URL); its answer is shown to operators and put in events, so credentials are cut out. */
export function scrub(text: string, creds: Record<string, unknown>): string {
  let out = text;
  for (const s of secretsOf(creds)) out = out.split(s).join("********");
  return out;
}

/** Sends one delivery and classifies the answer. Error texts name hosts and statuses, never URLs (they may hold credentials). */
export async function attempt(input: AttemptInput, policy: SendPolicy): Promise<Outcome> {
  const req = render(input.type, input.pub, input.creds, input.event, input.deliveryId, input.now);
  try {
    const ans = await send(req, policy);
    const snippet = scrub(ans.body, input.creds).slice(0, SNIPPET_CHARS);
    if (ans.status >= 200 && ans.status < 300) return { kind: "delivered", status: ans.status, snippet };
    if (ans.status === 410)
      return { kind: "gone", status: 410, snippet, error: "HTTP 410: the receiver says the endpoint is gone" };
    const error =
      ans.status >= 300 && ans.status < 400 ? `HTTP ${ans.status}: redirects are not followed` : `HTTP ${ans.status}`;
    const retryAfterMs = parseRetryAfter(ans.headers["retry-after"], input.now);
    return {
      kind: "retry",
      status: ans.status,
      snippet,
      error,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    };
  } catch (err) {
    if (err instanceof TargetRefused) return { kind: "refused", status: 0, snippet: "", error: err.message };
    const e = err as NodeJS.ErrnoException;
    const host = safeHost(req.url);
    return {
      kind: "retry",
      status: 0,
      snippet: "",
      error: `${host}: ${e.code ?? ""} ${e.message}`.replace(/\s+/g, " ").slice(0, 500),
    };
  }
}

function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "target";
  }
}
