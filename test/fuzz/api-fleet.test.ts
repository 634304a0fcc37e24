import t from "tap";
import { waitMs } from "@orch/kit/testing";
import { assertStillUp, fuzzTest } from "./lib/fuzz-test.js";
import { fuzzFileTimeoutMs, fuzzSettings } from "./lib/settings.js";
import { isFleetRoute } from "./lib/groups.js";

// Property-based fuzzing of the fleet routes of the OpenAPI document (agents, state, runs,
// terminals, sources): generated valid and broken requests as admin, operator and anonymous against
// real processes and real agents. Needs `npm run build`.
t.setTimeout(fuzzFileTimeoutMs(fuzzSettings(1), waitMs));
t.test("generated requests to every fleet route", async (t) => {
  const { stack } = await fuzzTest(t, "fleet", isFleetRoute);
  await assertStillUp(t, stack);
});
