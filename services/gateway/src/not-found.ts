import type { FastifyReply, FastifyRequest } from "fastify";
import type { ConsoleServer } from "./console/static.js";
import { problem, sendProblem } from "./problem.js";

/**
 * What no route matched: a console page when the console serves it, else 405 with Allow when the
 * path exists under other methods, else 404.
 */
export function notFoundHandler(consoleServer: ConsoleServer, methodsOf: (path: string) => string[]) {
  return (req: FastifyRequest, reply: FastifyReply) => {
    const page = consoleServer.fallback(req, reply);
    if (page) return page;
    const path = req.url.split("?")[0] ?? "";
    const allow = methodsOf(path);
    if (allow.length > 0) {
      reply.header("allow", allow.join(", "));
      const detail = `${req.method} is not allowed on ${path}; use ${allow.join(", ")}`;
      return sendProblem(reply, problem("method_not_allowed", detail));
    }
    return sendProblem(reply, problem("route_not_found", `no route ${req.method} ${path}`));
  };
}
