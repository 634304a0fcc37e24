import t from "tap";
import { driftStatus, isOpen, resultText, statusLabel } from "../src/lib/operation-text.js";

const counts = (c: Partial<{ ok: number; changed: number; failed: number; skipped: number; unsupported: number }>) => ({
  ok: 0,
  changed: 0,
  failed: 0,
  skipped: 0,
  unsupported: 0,
  ...c,
});

t.test("only pending and running operations are open (fetched again)", async (t) => {
  t.same(["pending", "running", "succeeded", "failed", "timed_out", "unreachable"].filter(isOpen), [
    "pending",
    "running",
  ]);
});

t.test("status words for people", async (t) => {
  t.equal(statusLabel("timed_out"), "timed out");
  t.equal(statusLabel("succeeded"), "succeeded");
});

t.test("the result is the error of a failed operation, else its counts", async (t) => {
  t.equal(resultText({ error: null, summary: counts({ ok: 2, changed: 1 }) }), "2 ok, 1 changed, 0 failed");
  t.equal(
    resultText({ error: null, summary: counts({ failed: 1, skipped: 2, unsupported: 1 }) }),
    "0 ok, 0 changed, 1 failed, 2 skipped, 1 unsupported",
    "skipped and unsupported only when there are some",
  );
  t.equal(
    resultText({ error: "secret app_token is not permitted", summary: counts({}) }),
    "secret app_token is not permitted",
  );
});

t.test("drift status: never checked (404), drifted, in sync, nothing while loading", async (t) => {
  t.equal(driftStatus(null), "never checked");
  t.equal(driftStatus({ drifted: true }), "drifted");
  t.equal(driftStatus({ drifted: false }), "in sync");
  t.equal(driftStatus(undefined), "");
});
