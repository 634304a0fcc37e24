/**
 * Where "Sign in with …" leads: a top-level navigation to the gateway, which redirects to the
 * provider; the provider's redirect comes back to the gateway, which sets the session cookies and
 * sends the browser to `next`. Apart from sso.ts so it loads without the API client (unit tests).
 */
export function ssoLoginHref(provider: string, next: string): string {
  const base = `/api/v1/auth/sso/${encodeURIComponent(provider)}/login`;
  return next && next !== "/" ? `${base}?return_to=${encodeURIComponent(next)}` : base;
}
