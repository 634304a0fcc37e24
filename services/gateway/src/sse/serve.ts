import type { FastifyReply } from "fastify";
import { unauthenticated } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { requestToken } from "../console/session.js";
import type { RouteRequest } from "../route.js";
import type { SseStream } from "./stream.js";

/**
 * Answers a route with a stream: binds it to the caller's credential before the first read (a
 * sign-out meanwhile is not missed), reads the first snapshot while errors can still become
 * problem+json (and a credential that ended meanwhile a 401), then takes the response over from
 * Fastify and runs the stream. A failure once streaming can no longer be answered: it ends the stream.
 */
export async function serveSse<First>(
  ctx: Pick<GatewayContext, "config" | "live" | "log">,
  req: Pick<RouteRequest<unknown, unknown, unknown>, "principal" | "raw">,
  reply: FastifyReply,
  stream: SseStream<First>,
): Promise<FastifyReply> {
  const { principal, raw } = req;
  const token = requestToken(raw, ctx.config.http)?.token ?? "";
  stream.bindTo(ctx.live, {
    operatorId: principal!.id,
    token,
    expiresAt: principal!.expiresAt,
    scope: principal!.scope,
  });
  const first = await stream.open();
  if (stream.endedBy) throw unauthenticated("invalid_token", "the token is invalid, expired or revoked");
  reply.hijack();
  reply.raw.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  try {
    await stream.run(first);
  } catch (err) {
    ctx.log.debug({ err: (err as Error).message }, "event stream ended");
    stream.close();
  }
  return reply;
}
