import t from "tap";
import { INT32_MAX, PTY_DIM_MAX } from "@orch/contracts";
import { OrchError } from "@orch/kit";
import { dimension } from "../src/validate.js";

// The terminal service takes any positive int32 size (the API contract's type) and clamps what a
// PTY cannot take; 0 is "the default"; a negative or a fraction is refused naming the field.

t.test("0 is the default, a PTY size is kept, a larger one is clamped", async (t) => {
  t.equal(dimension(0, "cols", 80), 80);
  t.equal(dimension(1, "cols", 80), 1);
  t.equal(dimension(PTY_DIM_MAX, "rows", 24), PTY_DIM_MAX);
  t.equal(dimension(PTY_DIM_MAX + 1, "rows", 24), PTY_DIM_MAX);
  t.equal(dimension(5000, "cols", 80), PTY_DIM_MAX);
  t.equal(dimension(INT32_MAX, "cols", 80), PTY_DIM_MAX);
});

t.test("a negative, a fraction or a value past int32 is invalid_request naming the field", async (t) => {
  for (const [v, field] of [
    [-1, "cols"],
    [1.5, "rows"],
    [INT32_MAX + 1, "cols"],
    [Number.NaN, "rows"],
  ] as const) {
    const err = t.throws(() => dimension(v, field, 80)) as unknown;
    t.ok(err instanceof OrchError, `${v}: an OrchError`);
    t.match(err, { code: "INVALID_ARGUMENT", reason: "invalid_request" }, `${v}`);
    t.match((err as Error).message, new RegExp(`^${field} must be`), `${v}: names ${field}`);
  }
});
