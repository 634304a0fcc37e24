import type { FastifyReply } from "fastify";
import { ERROR_CATALOGUE, errorStatus, type ErrorReason } from "@orch/contracts";
import { type OrchError, httpStatusOf } from "@orch/kit";

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  413: "Payload Too Large",
  414: "URI Too Long",
  415: "Unsupported Media Type",
  426: "Upgrade Required",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorReason;
  instance?: string;
  [k: string]: unknown;
}

/**
 * RFC 9457 body; `code` is the stable machine reason clients match on, and its status comes from
 * the error catalogue (docs/errors.md) unless the caller knows better: an OrchError's own status,
 * or the status fastify gave a request error.
 */
export function problem(
  code: ErrorReason,
  detail: string,
  extra: Record<string, unknown> = {},
  status: number = errorStatus(code),
): Problem {
  return {
    type: `https://orch.dev/problems/${code}`,
    title: TITLES[status] ?? "Error",
    status,
    detail,
    code,
    ...Object.fromEntries(Object.entries(extra).filter(([k]) => !PROBLEM_MEMBERS.has(k))),
  };
}

/** RFC 9457's members and our `code`: an error's details extend a problem, never rewrite it. */
const PROBLEM_MEMBERS = new Set(["type", "title", "status", "detail", "code"]);

export function problemFromError(err: OrchError, requestId?: string): Problem {
  const extra: Record<string, unknown> = { ...err.details };
  if (requestId) extra.request_id = requestId;
  // A reason catalogued with an HTTP status no gRPC code has (413) keeps that status across the bus.
  const status = ERROR_CATALOGUE[err.reason].grpc === null ? errorStatus(err.reason) : httpStatusOf[err.code];
  return problem(err.reason, err.message, extra, status);
}

/**
 * 503 and 504 are the transient answers (a service restarting, an RPC timeout during a failover):
 * both carry Retry-After so clients back off and retry rather than treat them as final.
 */
export function sendProblem(reply: FastifyReply, p: Problem): FastifyReply {
  if (p.status === 503 || p.status === 504) reply.header("retry-after", "1");
  return reply.code(p.status).type("application/problem+json").send(p);
}
