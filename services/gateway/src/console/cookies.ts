/**
 * Just enough of RFC 6265 for the console's two cookies: no package, no decoding of values the
 * gateway did not set (both are base64url / opaque tokens), first occurrence wins.
 */
export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (!header) return out;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    let value = part.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (name && !out.has(name)) out.set(name, value);
  }
  return out;
}

export interface CookieAttributes {
  maxAgeSeconds: number;
  httpOnly: boolean;
  secure: boolean;
  /**
   * Strict unless said otherwise. Lax only for a cookie that must come back on a top-level
   * navigation from another site (the identity provider's redirect) and grants nothing by itself.
   */
  sameSite?: "Strict" | "Lax";
}

/** One Set-Cookie value; Path=/ (the console is the whole origin). */
export function serializeCookie(name: string, value: string, a: CookieAttributes): string {
  const parts = [`${name}=${value}`];
  if (a.httpOnly) parts.push("HttpOnly");
  if (a.secure) parts.push("Secure");
  parts.push(`SameSite=${a.sameSite ?? "Strict"}`, "Path=/", `Max-Age=${Math.max(0, Math.floor(a.maxAgeSeconds))}`);
  return parts.join("; ");
}
