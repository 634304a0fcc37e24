import t from "tap";
import { summaryFields } from "../src/format/agents.js";

t.test("summary fields keep the API's names and order", async (t) => {
  const s = { total: 10, connected: 4, disconnected: 2, pending: 3, approved: 6, rejected: 1 };
  t.same(summaryFields(s), [
    ["total", 10],
    ["connected", 4],
    ["disconnected", 2],
    ["pending", 3],
    ["approved", 6],
    ["rejected", 1],
  ]);
  t.same(summaryFields({ ...s, connected: 0 })[1], ["connected", 0], "a zero is printed, not dropped");
});
