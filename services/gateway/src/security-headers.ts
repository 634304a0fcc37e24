import type { ServerResponse } from "node:http";

/**
 * Headers on every API response. The API serves JSON, event streams and downloads, never pages,
 * so a browser is told to run nothing, frame nothing, sniff nothing and send no Referer; and
 * nothing is stored by a browser or a shared cache: responses carry tokens, tickets, operator data.
 */
export const SECURITY_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ["x-content-type-options", "nosniff"],
  ["referrer-policy", "no-referrer"],
  ["content-security-policy", "default-src 'none'; frame-ancestors 'none'"],
  ["cache-control", "no-store"],
];

/**
 * Set on the raw response so they also reach replies written without fastify's send (SSE streams,
 * framework errors); a route that sets its own value of one of them (reply.header) wins.
 */
export function applySecurityHeaders(res: ServerResponse): void {
  for (const [name, value] of SECURITY_HEADERS) res.setHeader(name, value);
}

/** The same headers as raw HTTP/1.1 header lines, for replies written straight to a socket. */
export const securityHeaderLines = (): string[] => SECURITY_HEADERS.map(([name, value]) => `${name}: ${value}`);
