/** `orchctl console`: the login link and whether a browser can be started (pure; unit-tested). */

/** Login codes live 60 s (LOGIN_CODE_TTL_SECONDS in @orch/contracts/console, which the CLI does not depend on). */
export const LOGIN_LINK_TTL_TEXT = "valid for 60 s, single use";

/** The link on a line of its own (easy to copy), then how long it lasts and that it is a credential. */
export function loginLinkLines(link: { url: string; expires_at: string }): string[] {
  return [
    link.url,
    `${LOGIN_LINK_TTL_TEXT} (expires ${link.expires_at}); anyone holding it can sign in as you until then`,
  ];
}

/**
 * Whether to start a browser: not with --no-open, only in a graphical session, and only for an
 * http(s) link (the URL comes from the server; xdg-open would hand any other scheme to its handler).
 */
export function shouldOpenBrowser(
  url: string,
  opts: { open: boolean; env: Record<string, string | undefined> },
): boolean {
  if (!opts.open || !(opts.env.DISPLAY || opts.env.WAYLAND_DISPLAY)) return false;
  try {
    const { protocol } = new URL(url);
    return protocol === "http:" || protocol === "https:";
  } catch {
    return false;
  }
}
