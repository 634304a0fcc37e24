import type { FastifyReply } from "fastify";

/** Sends what a handler returned with the route's success status, unless the handler answered itself. */
export function replyWith(reply: FastifyReply, status: number, out: unknown): unknown {
  // A handler that returns the reply (a streamed download) resolves when the response ends, also
  // when the client went away mid-body: headers are out then, and a second send would throw.
  if (out === reply || reply.sent || reply.raw.headersSent || reply.raw.destroyed) return reply;
  reply.code(status);
  return out === undefined ? reply.send() : out;
}
