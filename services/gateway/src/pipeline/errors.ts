import type { FastifyReply, FastifyRequest } from "fastify";
import { OrchError } from "@orch/kit";
import { problem, problemFromError, sendProblem } from "../problem.js";

/**
 * The answer to whatever a stage or handler threw: problem+json. `bodyLimit` is the gateway's
 * default (http.body_limit), named when a route has no limit of its own.
 */
export function errorHandler(bodyLimit: number) {
  return (err: Error & { code?: string; statusCode?: number }, req: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof OrchError) {
      // Also raised by the RPC client (encoding, bus) and by services: the cause is only in the log.
      if (err.code === "INTERNAL") req.log.error({ err: err.cause ?? err, requestId: req.id }, "internal error");
      return sendProblem(reply, problemFromError(err, req.id));
    }
    switch (err.code) {
      case "FST_ERR_CTP_BODY_TOO_LARGE":
        return sendProblem(
          reply,
          problem("body_too_large", `the request body exceeds ${req.routeOptions.bodyLimit ?? bodyLimit} bytes`),
        );
      case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
        return sendProblem(reply, problem("unsupported_media_type", "send JSON with Content-Type: application/json"));
      case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
        return sendProblem(reply, problem("invalid_request", "invalid Content-Length"));
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500)
      return sendProblem(reply, problem("invalid_request", err.message, {}, err.statusCode));
    const e = OrchError.from(err);
    if (e.code === "INTERNAL") req.log.error({ err, requestId: req.id }, "unhandled error");
    return sendProblem(reply, problemFromError(e, req.id));
  };
}
