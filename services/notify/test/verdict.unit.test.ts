import t from "tap";
import { judge } from "../src/delivery/verdict.js";

// How the delivery worker judges one attempt's outcome (delivery/verdict.ts); delivery.test.ts
// drives the worker end to end.

t.test("a delivered attempt", async (t) => {
  t.same(judge({ kind: "delivered", status: 204, snippet: "" }, 1, 8), {
    verdict: { type: "delivered", status: 204 },
    result: "delivered",
  });
});

t.test("410 Gone disables the channel", async (t) => {
  t.same(judge({ kind: "gone", status: 410, snippet: "x", error: "gone" }, 3, 8), {
    verdict: { type: "gone", status: 410, error: "gone" },
    result: "gone",
  });
});

t.test("a refused target is given up at once", async (t) => {
  t.same(judge({ kind: "refused", status: 0, snippet: "", error: "private address" }, 1, 8), {
    verdict: { type: "give_up", status: 0, error: "private address", refused: true },
    result: "refused",
  });
});

t.test("a failed attempt is retried, with the snippet in the error", async (t) => {
  t.same(judge({ kind: "retry", status: 503, snippet: "busy", error: "HTTP 503", retryAfterMs: 5000 }, 7, 8), {
    verdict: { type: "retry", status: 503, error: "HTTP 503: busy", retryAfterMs: 5000 },
    result: "retry",
  });
  t.same(judge({ kind: "retry", status: 0, snippet: "", error: "timeout" }, 1, 8).verdict, {
    type: "retry",
    status: 0,
    error: "timeout",
    retryAfterMs: undefined,
  });
});

t.test("the last attempt's failure is final", async (t) => {
  t.same(judge({ kind: "retry", status: 500, snippet: "oops", error: "HTTP 500" }, 8, 8), {
    verdict: { type: "give_up", status: 500, error: "HTTP 500", refused: false },
    result: "failed",
  });
});
