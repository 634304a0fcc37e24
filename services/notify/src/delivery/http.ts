import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { resolveTarget, type Resolver } from "./ssrf.js";

export interface OutgoingRequest {
  url: string;
  method: "POST";
  headers: Record<string, string>;
  body: string;
}

export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The start of the body (bounded), as text. */
  body: string;
}

export interface SendPolicy {
  allowPrivate: boolean;
  timeoutMs: number;
  resolver: Resolver;
}

const MAX_BODY = 4096;

/** A lookup that answers with the already-checked address, whatever form the caller asks for. */
function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return ((_host: string, opts: { all?: boolean } | undefined, cb: (...a: unknown[]) => void) => {
    if (opts?.all) cb(null, [{ address, family }]);
    else cb(null, address, family);
  }) as unknown as LookupFunction;
}

/**
 * One POST, with the target resolved and checked at send time and the checked address pinned for
 * the connection (DNS rebinding cannot swap it), no redirect following (node never follows; a 3xx
 * is returned as an answer and treated as a failure by the caller), and one overall timeout.
 */
export async function send(req: OutgoingRequest, policy: SendPolicy): Promise<HttpAnswer> {
  const u = new URL(req.url);
  const target = await resolveTarget(u.hostname, { allowPrivate: policy.allowPrivate, resolver: policy.resolver });
  const doRequest = u.protocol === "https:" ? httpsRequest : httpRequest;
  const host = u.hostname.replace(/^\[|\]$/g, "");
  const body = Buffer.from(req.body, "utf8");
  return new Promise<HttpAnswer>((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | undefined, answer?: HttpAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(answer!);
    };
    const r = doRequest(
      {
        protocol: u.protocol,
        hostname: host,
        port: u.port || undefined,
        path: `${u.pathname}${u.search}`,
        method: req.method,
        headers: { "user-agent": "orch-notify/1", ...req.headers, "content-length": String(body.length) },
        lookup: pinnedLookup(target.address, target.family),
        // TLS still verifies the certificate against the URL's host name (SNI = host name).
        ...(isIP(host) ? {} : { servername: host }),
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          if (size < MAX_BODY) chunks.push(c);
          size += c.length;
          // A huge answer is not read to the end: the status is what matters.
          if (size >= MAX_BODY) res.destroy();
        });
        const done = () =>
          finish(undefined, {
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).subarray(0, MAX_BODY).toString("utf8"),
          });
        res.on("end", done);
        res.on("close", done);
        res.on("error", done);
      },
    );
    const timer = setTimeout(() => {
      r.destroy(new Error(`no answer within ${policy.timeoutMs} ms`));
    }, policy.timeoutMs);
    r.on("error", (err) => finish(err));
    r.end(body);
  });
}
