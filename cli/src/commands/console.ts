/** orchctl console */
import { spawn } from "node:child_process";
import type { Command } from "commander";
import { unwrap } from "@orch/client";
import { action } from "../context.js";
import { loginLinkLines, shouldOpenBrowser } from "../format/console.js";
import type { CliIO } from "../output.js";

/** Best effort: the link is printed either way, so a missing or failing xdg-open is not an error. */
function openInBrowser(url: string, env: Record<string, string | undefined>): void {
  try {
    const child = spawn("xdg-open", [url], { detached: true, stdio: "ignore", env });
    child.on("error", () => undefined);
    child.unref();
  } catch {
    // spawn can throw synchronously (e.g. EACCES); the printed link still works.
  }
}

export function register(program: Command, io: CliIO): void {
  program
    .command("console")
    .description(
      "sign in to the web console: prints a single-use login link (valid for 60 s) for your operator and opens it in a browser",
    )
    .option(
      "--no-open",
      "only print the link; do not start a browser (one is started only when DISPLAY or WAYLAND_DISPLAY is set)",
    )
    .addHelpText(
      "after",
      "\nThe link carries a one-time code in its #fragment, so it is never sent to a server log. Treat it like a password until it expires.\nWith --json: {url, expires_at}.",
    )
    .action(
      action(io, async (ctx, opts: { open: boolean }) => {
        const link = unwrap(await ctx.api.POST("/api/v1/auth/login-codes", {}));
        ctx.out.result({ url: link.url, expires_at: link.expires_at }, () => {
          for (const l of loginLinkLines(link)) ctx.out.line(l);
        });
        if (shouldOpenBrowser(link.url, { open: opts.open, env: ctx.env })) openInBrowser(link.url, ctx.env);
      }),
    );
}
