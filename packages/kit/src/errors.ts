import { create, fromBinary, toBinary, type JsonObject } from "@bufbuild/protobuf";
import { ErrorSchema, GRPC_CODES, isErrorReason, type ErrorReason, type ReasonFor } from "@orch/contracts";

/**
 * The closed status code set shared by the bus, the HTTP mapping and the agent link
 * (gRPC's names, as connect-es does). Every failure is an OrchError carrying one of these
 * plus a stable `reason` from the error catalogue (packages/contracts/src/error-catalogue.ts,
 * docs/errors.md) that becomes the problem+json `code` clients match on.
 */
export const Codes = GRPC_CODES;
export type Code = (typeof Codes)[number];

export const httpStatusOf: Record<Code, number> = {
  INVALID_ARGUMENT: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  ALREADY_EXISTS: 409,
  FAILED_PRECONDITION: 409,
  RESOURCE_EXHAUSTED: 429,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
  INTERNAL: 500,
};

const defaultReason: { [C in Code]: ReasonFor<C> } = {
  INVALID_ARGUMENT: "invalid_argument",
  UNAUTHENTICATED: "unauthenticated",
  PERMISSION_DENIED: "permission_denied",
  NOT_FOUND: "not_found",
  ALREADY_EXISTS: "already_exists",
  FAILED_PRECONDITION: "failed_precondition",
  RESOURCE_EXHAUSTED: "resource_exhausted",
  UNAVAILABLE: "unavailable",
  DEADLINE_EXCEEDED: "deadline_exceeded",
  INTERNAL: "internal",
};

export function isCode(v: unknown): v is Code {
  return typeof v === "string" && (Codes as readonly string[]).includes(v);
}

export type ErrorDetails = Record<string, unknown>;

/**
 * Socket errors and SQLSTATEs that mean "no usable database connection right now": 57P01-03 (admin
 * or crash shutdown, cannot connect now: startup, shutdown, recovery) and class 08. A Postgres
 * stop or restart under load surfaces as ECONNRESET or pg's own messages below on the queries in
 * flight, not only as ECONNREFUSED on new ones; all are a retryable 503, never a 500.
 */
const PG_UNAVAILABLE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "57P01",
  "57P02",
  "57P03",
  "08000",
  "08001",
  "08003",
  "08004",
  "08006",
]);
/** pg's errors without a code: the socket closed under a query, or a client broken by that is reused. */
const PG_CONNECTION_LOST = /^Connection terminated( unexpectedly)?$|connection error and is not queryable/;

export class OrchError extends Error {
  readonly code: Code;
  /** Stable snake_case reason from the error catalogue, e.g. `secret_exists`. */
  readonly reason: ErrorReason;
  readonly details: ErrorDetails;

  constructor(
    code: Code,
    reason: ErrorReason | undefined,
    message: string,
    details: ErrorDetails = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "OrchError";
    this.code = code;
    this.reason = reason ?? defaultReason[code];
    this.details = details;
  }

  get httpStatus(): number {
    return httpStatusOf[this.code];
  }

  /**
   * Normalise anything thrown into an OrchError. Unknown errors become INTERNAL with a generic
   * message: the original is kept as `cause` for logs and never sent to a client.
   */
  static from(err: unknown): OrchError {
    if (err instanceof OrchError) return err;
    if (err && typeof err === "object") {
      const e = err as { code?: unknown; name?: unknown };
      // NATS client errors: no responders / timeouts.
      const name = String(e.name ?? "");
      const msg = err instanceof Error ? err.message : "";
      if (name === "NoRespondersError" || /no responders/i.test(msg) || e.code === "503") {
        return new OrchError("UNAVAILABLE", "service_unavailable", "the service is not available", {}, { cause: err });
      }
      if (name === "TimeoutError" || /timeout/i.test(msg) || e.code === "TIMEOUT") {
        return new OrchError("DEADLINE_EXCEEDED", "timeout", "the request timed out", {}, { cause: err });
      }
      if (name === "ClosedConnectionError" || /connection closed|disconnect/i.test(msg)) {
        return new OrchError("UNAVAILABLE", "bus_unavailable", "the message bus is not available", {}, { cause: err });
      }
      // Postgres connection failures: the server is down, restarting or dropped the connection mid-query.
      if ((typeof e.code === "string" && PG_UNAVAILABLE_CODES.has(e.code)) || PG_CONNECTION_LOST.test(msg)) {
        return new OrchError(
          "UNAVAILABLE",
          "database_unavailable",
          "the database is not available",
          {},
          { cause: err },
        );
      }
    }
    return new OrchError("INTERNAL", "internal", "internal error", {}, { cause: err });
  }
}

/** Shorthands that keep call sites readable; each accepts only the reasons catalogued with its status. */
export const invalid = (reason: ReasonFor<"INVALID_ARGUMENT">, message: string, details: ErrorDetails = {}) =>
  new OrchError("INVALID_ARGUMENT", reason, message, details);
export const notFound = (reason: ReasonFor<"NOT_FOUND">, message: string, details: ErrorDetails = {}) =>
  new OrchError("NOT_FOUND", reason, message, details);
export const conflict = (reason: ReasonFor<"ALREADY_EXISTS">, message: string, details: ErrorDetails = {}) =>
  new OrchError("ALREADY_EXISTS", reason, message, details);
export const precondition = (reason: ReasonFor<"FAILED_PRECONDITION">, message: string, details: ErrorDetails = {}) =>
  new OrchError("FAILED_PRECONDITION", reason, message, details);
export const unauthenticated = (
  reason: ReasonFor<"UNAUTHENTICATED"> = "unauthenticated",
  message = "authentication required",
) => new OrchError("UNAUTHENTICATED", reason, message);
export const forbidden = (
  reason: ReasonFor<"PERMISSION_DENIED"> = "admin_required",
  message = "this operation requires the admin role",
) => new OrchError("PERMISSION_DENIED", reason, message);
export const unavailable = (reason: ReasonFor<"UNAVAILABLE">, message: string, details: ErrorDetails = {}) =>
  new OrchError("UNAVAILABLE", reason, message, details);

/** An OrchError as the bus carries it (and the idempotency store keeps it): orch.v1.Error bytes. */
export const errorToBinary = (err: OrchError): Uint8Array =>
  toBinary(
    ErrorSchema,
    create(ErrorSchema, {
      code: err.code,
      reason: err.reason,
      message: err.message,
      details: err.details as JsonObject,
    }),
  );

/**
 * The inverse of errorToBinary; throws on bytes that are not an orch.v1.Error. A reason the
 * catalogue does not list (a peer from another release) falls back to its status's name.
 */
export function errorFromBinary(data: Uint8Array): OrchError {
  const e = fromBinary(ErrorSchema, data);
  return new OrchError(isCode(e.code) ? e.code : "INTERNAL", asReason(e.reason), e.message, e.details ?? {});
}

/** A reason read off the wire, if the catalogue lists it. */
const asReason = (reason: string): ErrorReason | undefined => (isErrorReason(reason) ? reason : undefined);
