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
 * framework errors); a route that sets its own value of one of them (reply.header) wins. Console
 * pages and assets replace them all with CONSOLE_HEADERS (console/static.ts).
 */
export function applySecurityHeaders(res: ServerResponse): void {
  for (const [name, value] of SECURITY_HEADERS) res.setHeader(name, value);
}

/** The same headers as raw HTTP/1.1 header lines, for replies written straight to a socket. */
export const securityHeaderLines = (): string[] => SECURITY_HEADERS.map(([name, value]) => `${name}: ${value}`);

/**
 * The console's policy: its own origin only, no inline script. Inline styles are allowed because
 * libraries inject <style> elements (xterm.js, CodeMirror); scripts stay strict. `wasm-unsafe-eval`
 * lets the recording player compile its bundled WebAssembly terminal emulator; it does not allow
 * JavaScript eval.
 */
export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
  "font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; " +
  "form-action 'self'; frame-ancestors 'none'";

/** Headers on every console page and asset (not cache-control, which depends on the file). */
export const CONSOLE_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ["content-security-policy", CONSOLE_CSP],
  ["x-content-type-options", "nosniff"],
  ["referrer-policy", "same-origin"],
  ["cross-origin-opener-policy", "same-origin"],
  ["x-frame-options", "DENY"],
];
