import t from "tap";
import { waitMs } from "@orch/kit/testing";
import { assertStillUp, fuzzTest } from "./lib/fuzz-test.js";
import { fuzzFileTimeoutMs, fuzzSettings } from "./lib/settings.js";
import { isControlRoute } from "./lib/groups.js";

// Property-based fuzzing of the other routes of the OpenAPI document (sign-in, operators, secrets,
// audit, notifications, install, status): generated valid and broken requests as admin, operator
// and anonymous against real processes. Needs `npm run build`.
t.setTimeout(fuzzFileTimeoutMs(fuzzSettings(1), waitMs));
t.test("generated requests to every other route", async (t) => {
  const { stack } = await fuzzTest(t, "control", isControlRoute);
  await assertStillUp(t, stack);
});
