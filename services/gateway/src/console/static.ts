import { existsSync } from "node:fs";
import { join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "@orch/kit";
import { problem, sendProblem } from "../problem.js";
import { CONSOLE_HEADERS, SECURITY_HEADERS } from "../security-headers.js";

/** web/dist of this repository: four levels up from both src/console/ and dist/console/. */
export const defaultConsoleDir = (): string => fileURLToPath(new URL("../../../../web/dist/", import.meta.url));

const IMMUTABLE = "public, max-age=31536000, immutable";

/**
 * The global hook put the API's headers on the raw response (security-headers.ts); a console reply
 * drops them and sets its own through the reply, whose values win when the head is written. Both,
 * so nothing of the API's policy (CSP 'none', no-store) survives on a page that must run scripts.
 */
function consoleHeaders(reply: FastifyReply, cacheControl: string): void {
  for (const [name] of SECURITY_HEADERS) reply.raw.removeHeader(name);
  for (const [name, value] of CONSOLE_HEADERS) reply.header(name, value);
  reply.header("cache-control", cacheControl);
}

/**
 * Console paths: everything a browser navigates to; the API and the hashed assets have their own
 * 404s. So has /install, read by curl and the install script: a wrong path there is a 404, not a
 * console page answered 200 that a script would take for a release file.
 */
const isFallbackPath = (path: string) =>
  !["/api", "/assets", "/install"].some((prefix) => path === prefix || path.startsWith(`${prefix}/`));

export interface ConsoleServer {
  enabled: boolean;
  /** Answers a request nothing else routed when it is a console page (SPA fallback); else undefined. */
  fallback(req: FastifyRequest, reply: FastifyReply): FastifyReply | undefined;
}

/**
 * Serves the built console: /assets/* (content-hashed names, cached for a year) and index.html for
 * every other page path (client-side routing), never cached so a new build is picked up at once.
 * Without a built console the API runs alone and console paths answer 404 console_unavailable.
 */
export async function registerConsole(
  app: FastifyInstance,
  opts: { dir: string; log: Logger },
): Promise<ConsoleServer> {
  const dir = opts.dir || defaultConsoleDir();
  const index = join(dir, "index.html");
  const enabled = existsSync(index);
  if (!enabled) {
    opts.log.info({ dir }, "web console not built (no index.html); serving the API only");
  } else {
    const assets = join(dir, "assets");
    await app.register(fastifyStatic, {
      root: assets,
      prefix: "/assets/",
      index: false,
      wildcard: true,
      redirect: false,
      dotfiles: "ignore",
      // A directory would be a 403 from send; to a client it is just not an asset.
      allowedPath: (path) => !path.endsWith("/"),
      cacheControl: false,
      suppressWarning: true, // a build without assets/ is odd but harmless: every asset is a 404
      decorateReply: true,
      // Also runs for index.html sent by the fallback (sendFile), which must never be cached.
      setHeaders: (reply, path) => consoleHeaders(reply, path.startsWith(assets + sep) ? IMMUTABLE : "no-cache"),
    });
  }
  return {
    enabled,
    fallback(req, reply) {
      const path = req.url.split("?")[0] ?? "";
      if ((req.method !== "GET" && req.method !== "HEAD") || !isFallbackPath(path)) return undefined;
      // Checked per page load (rare, and a stat is cheap): a rebuild empties the directory for a while.
      if (!enabled || !existsSync(index))
        return sendProblem(reply, problem("console_unavailable", "the web console is not built"));
      consoleHeaders(reply, "no-cache"); // for a 304 too, where setHeaders does not run
      return reply.sendFile("index.html", dir, { cacheControl: false });
    },
  };
}
