import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from "fastify";
import { fastifyPath, successStatus, type RouteSpec } from "../route.js";
import { authenticate, type AuthenticateDeps } from "./authenticate.js";
import { handle } from "./handle.js";
import { idempotencyOf } from "../idempotency.js";
import { parseInput } from "./parse.js";
import { replyWith } from "./reply.js";
import { throttle, type Throttle } from "./throttle.js";

/**
 * The one place a request's stages are put in order: throttle → authenticate (and CSRF) in
 * onRequest, before the body is read or anything is looked up; then parse → idempotency → handler →
 * reply. A stage refuses by throwing; the error handler (errors.ts) answers problem+json.
 */
export function routeOptions(spec: RouteSpec, auth: AuthenticateDeps, limit: Throttle | undefined): RouteOptions {
  const status = successStatus(spec);
  return {
    method: spec.method,
    url: fastifyPath(spec.path),
    ...(spec.rawBody ? { bodyLimit: spec.rawBody.maxBytes } : {}),
    onRequest: (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
      if (limit) throttle(limit, req, reply);
      authenticate(auth, spec.auth, req, done);
    },
    handler: async (req, reply) => {
      const input = parseInput(spec, req);
      const idem = idempotencyOf(spec, req, reply);
      return replyWith(reply, status, await handle(spec, req, reply, input, idem));
    },
  };
}

/**
 * Adds the route to the app; a raw-body or stream-body route in a scope of its own, where no JSON
 * parser applies.
 */
export function installRoute(app: FastifyInstance, options: RouteOptions, body: "json" | "raw" | "stream"): void {
  if (body === "json") {
    app.route(options);
    return;
  }
  if (body === "stream") {
    // The body is left in the request stream for the handler to read as it goes.
    app.register(async (scope: FastifyInstance) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser("*", (_req, payload, done) => done(null, payload));
      scope.route(options);
    });
    return;
  }
  // Content-type parsers are scoped: only this route keeps the bytes, every other one parses JSON.
  const rawScope = async (scope: FastifyInstance) => {
    scope.removeAllContentTypeParsers();
    const keep = (_req: FastifyRequest, body: Buffer, done: (err: null, body: Buffer) => void) => done(null, body);
    // "*" alone would do after the removal; JSON named too so no inherited parser can ever win.
    scope.addContentTypeParser("application/json", { parseAs: "buffer" }, keep);
    scope.addContentTypeParser("*", { parseAs: "buffer" }, keep);
    scope.route(options);
  };
  app.register(rawScope);
}
