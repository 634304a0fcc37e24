/**
 * Origin check of a terminal WebSocket upgrade (cross-site WebSocket hijacking defence). Browsers
 * always send Origin; a page on another site gets refused. Clients that send none (orchctl, curl)
 * are not browsers and carry no ambient credentials, so they pass: the ticket is what authorises.
 */
export function originAllowed(
  origin: string | undefined,
  host: string | undefined,
  cfg: { allowed_origins: readonly string[]; public_url: string },
): boolean {
  if (origin === undefined || origin === "") return true;
  if (cfg.allowed_origins.includes(origin)) return true;
  let o: URL;
  try {
    o = new URL(origin);
  } catch {
    return false; // includes the opaque "null" origin of sandboxed frames and file: pages
  }
  if (o.protocol !== "http:" && o.protocol !== "https:") return false;
  if (host && o.host.toLowerCase() === host.toLowerCase()) return true;
  if (cfg.public_url) {
    try {
      if (new URL(cfg.public_url).origin === o.origin) return true;
    } catch {
      /* misconfigured public_url: same-host rule only */
    }
  }
  return false;
}
