/**
 * Where sign-in sends the operator back to. `next` comes from the URL, so anyone can craft it: only a
 * same-origin absolute path is followed (no scheme, no `//host`, no backslash tricks), else "/".
 */
export function safeNext(next: string | null | undefined): string {
  if (!next?.startsWith("/")) return "/";
  // "//evil.example" and "/\evil.example" are protocol-relative to browsers.
  if (next.startsWith("//") || next.startsWith("/\\")) return "/";
  // Control characters (tabs, newlines) are stripped by URL parsers and could rebuild "//".
  for (const ch of next) if (ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f) return "/";
  if (next === "/login" || next.startsWith("/login?") || next.startsWith("/login#")) return "/";
  return next;
}

/** The sign-in URL that returns to `path` (path + search of the page the session ended on). */
export function loginPath(path: string): string {
  const next = safeNext(path);
  return next === "/" ? "/login" : `/login?next=${encodeURIComponent(next)}`;
}

/** The login code in a `#code=…` fragment (the link `orchctl console` prints), if any. */
export function codeFromHash(hash: string): string | undefined {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const code = params.get("code")?.trim();
  return code ? code : undefined;
}
