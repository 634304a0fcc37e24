import { ULID_RE, checkUlid, type RuleCheck } from "@orch/contracts";
import { z } from "zod";

/** Query-string helpers: values arrive as strings. */
export const qInt = (min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d+$/, "must be an integer")
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

export const qBool = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");

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
});

export { iso } from "./iso-time.js";
