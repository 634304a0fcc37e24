import t from "tap";
import { isUniqueViolation } from "@orch/kit";

const dup = (constraint?: string) => Object.assign(new Error("duplicate key value"), { code: "23505", constraint });

t.test("a pg unique violation is recognised, whatever its constraint", async (t) => {
  t.ok(isUniqueViolation(dup("operators_name_key")));
  t.ok(isUniqueViolation(dup()));
});

t.test("with a constraint, only that constraint's violation counts", async (t) => {
  t.ok(isUniqueViolation(dup("events_pkey"), "events_pkey"));
  t.notOk(isUniqueViolation(dup("other"), "events_pkey"));
  t.notOk(isUniqueViolation(dup(), "events_pkey"));
});

t.test("other errors and non-errors are not unique violations", async (t) => {
  t.notOk(isUniqueViolation(Object.assign(new Error("fk"), { code: "23503" })));
  t.notOk(isUniqueViolation(new Error("23505")));
  t.notOk(isUniqueViolation(null));
  t.notOk(isUniqueViolation(undefined));
  t.notOk(isUniqueViolation("23505"));
  t.notOk(isUniqueViolation({ code: 23505 }));
});
