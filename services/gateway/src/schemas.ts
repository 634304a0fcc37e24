import { INT32_MAX, ULID_RE, checkUlid, type RuleCheck } from "@orch/contracts";
import { z } from "zod";

const INT32_MIN = -2_147_483_648;

/**
 * A query integer. Published as what it is (`type: integer`, int32 or, past that range, int64) so a
 * client generated from the OpenAPI document sends a number; the value arrives as text in the query
 * string and is read back as the integer it spells (digits only: "1e3", "0x10", "" are refused).
 */
export const qInt = (min: number, max: number) =>
  z.preprocess(
    (v) => (typeof v === "string" && /^-?\d{1,20}$/.test(v) ? Number(v) : v),
    z
      .number({ error: "must be an integer" })
      .int("must be an integer")
      .min(min, `must be at least ${min}`)
      .max(max, `must be at most ${max}`)
      .meta({ format: min >= INT32_MIN && max <= INT32_MAX ? "int32" : "int64" }),
  );

const BOOL_WORDS = new Map([
  ["true", true],
  ["1", true],
  ["false", false],
  ["0", false],
]);

/** A query boolean, published as `type: boolean`; the query string's "true"/"false" (and "1"/"0") are read as one. */
export const qBool = z.preprocess(
  (v) => (typeof v === "string" ? (BOOL_WORDS.get(v) ?? v) : v),
  z.boolean({ error: "must be true or false" }),
);

/**
 * An int64 field (a time as Unix seconds or milliseconds, a count the API types as int64): a JSON
 * number, exact up to 2^53.
 */
export const int64 = () => z.number().int().meta({ format: "int64" });

export const rfc3339 = z
  .string()
  .refine(
    (s) =>
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(s) && !Number.isNaN(Date.parse(s)),
    "must be an RFC 3339 timestamp",
  );

export const pageQuery = z.object({
  limit: qInt(1, 500).optional(),
  cursor: z.string().max(200).optional(),
});

/**
 * A string checked by a shared rule from @orch/contracts: a failure is the usual 400
 * invalid_request naming the field, with the rule's message. A rule's `pattern` is shown in the
 * OpenAPI document.
 */
export function ruled(check: RuleCheck, pattern?: RegExp) {
  const s = pattern ? z.string().meta({ pattern: pattern.source }) : z.string();
  return s.superRefine((v, ctx) => {
    const bad = check(v);
    if (bad) ctx.addIssue({ code: "custom", message: bad.message });
  });
}

export const Ulid = ruled(checkUlid, ULID_RE);

/** Operator as returned by the API (the bus carries ms; the API shows RFC 3339). */
export const OperatorOut = z.object({
  id: z.string(),
  name: z.string(),
  public_key: z.string(),
  role: z.enum(["admin", "operator"]),
  active: z.boolean(),
  created_at: z.string(),
  created_by: z.string(),
  agent_selector: z
    .string()
    .nullable()
    .describe("agent selector limiting the agents the operator reaches; null = unscoped (docs/access.md)"),
  source: z
    .string()
    .describe(
      "how the operator signs in: `key` (created by an admin), or `sso:<provider>` (provisioned by single sign-on; docs/sso.md)",
    ),
  sso_rule: z.string().nullable().describe("for an SSO operator, the mapping rule its last sign-in or refresh matched"),
});

/**
 * Rolling batches of an assignment run or a fleet command: agents per batch, or a percentage of the
 * matched agents (the state service's fan-out reads the same two forms).
 */
export const batchField = (what: string) =>
  z
    .union([
      z.number().int().min(1),
      z.string().regex(/^([1-9]\d*|([1-9]\d?|100)%)$/, 'must be a positive integer or a percentage such as "25%"'),
    ])
    .optional()
    .describe(what);

/**
 * An integer the bus carries as int32: bounded here so that any value past that range is a 400, not
 * a message that cannot be encoded (a 500). The service still checks the field's own range.
 */
export const int32Field = () => z.number().int().min(INT32_MIN).max(INT32_MAX).meta({ format: "int32" });

/** How many failures a rolling run tolerates before it launches no more batches. */
export const maxFailuresField = (what: string) =>
  z
    .number()
    .int()
    .min(0)
    // int32 on the bus (state.proto): a larger count could not be encoded and answered 500.
    .max(INT32_MAX)
    .optional()
    .describe(what);

export { iso } from "./iso-time.js";
