/**
 * The console's one API client. Every request goes through it: components call the hooks in
 * `web/src/api/*.ts`, never `fetch` with a URL of their own. Cross-cutting work lives here, once:
 * the CSRF header on state-changing requests, sending the operator to sign-in on a 401, and the
 * "gateway unavailable" banner on a 5xx or a network failure.
 */
import { ApiError, createOrchClient, type OrchClient, problemOf, unwrap } from "@orch/client";
import { CSRF_COOKIE, CSRF_HEADER } from "@orch/contracts/console";
import { connectivity } from "./connectivity";

export { ApiError, unwrap };
export type { Problem } from "@orch/client";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** Reads the CSRF cookie the gateway set at sign-in (the session cookie itself is HttpOnly). */
export function csrfToken(cookies: string = document.cookie): string | undefined {
  for (const part of cookies.split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === CSRF_COOKIE) return decodeURIComponent(v.join("="));
  }
  return undefined;
}

/** Paths whose 401 is an answer to show (a refused sign-in), not an expired session. */
const SIGN_IN_PATHS = ["/api/v1/auth/console/", "/api/v1/auth/passkeys/authentication"];

function createConsoleClient(): OrchClient {
  const client = createOrchClient({ baseUrl: window.location.origin });
  client.use({
    onRequest({ request }) {
      if (SAFE_METHODS.has(request.method)) return request;
      const token = csrfToken();
      if (token) request.headers.set(CSRF_HEADER, token);
      return request;
    },
    onResponse({ request, response }) {
      if (response.status >= 500) connectivity.failed(`${response.status} ${response.statusText}`);
      else connectivity.ok();
      if (response.status === 401 && !SIGN_IN_PATHS.some((p) => new URL(request.url).pathname.startsWith(p))) {
        connectivity.sessionExpired();
      }
      return response;
    },
    onError({ error }) {
      // A request the page cancelled (navigation, an aborted query) says nothing about the gateway.
      if (error instanceof DOMException && error.name === "AbortError") return;
      connectivity.failed(error instanceof Error ? error.message : "network error");
      return new Response(
        JSON.stringify(
          problemOf(
            { status: 503, statusText: "Gateway unreachable" },
            { detail: "The gateway could not be reached." },
          ),
        ),
        { status: 503, headers: { "content-type": "application/problem+json" } },
      );
    },
  });
  return client;
}

export const api: OrchClient = createConsoleClient();

/** True for an ApiError with this status. */
export function isStatus(error: unknown, status: number): error is ApiError {
  return error instanceof ApiError && error.status === status;
}
