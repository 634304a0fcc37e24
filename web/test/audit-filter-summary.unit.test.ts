import t from "tap";
import { activeFilterCount, filterToggleText } from "../src/pages/audit/filter-summary.js";

t.test("the applied filters are counted; blank values are not filters", async (t) => {
  t.equal(activeFilterCount({}), 0);
  t.equal(activeFilterCount({ agent: "web-1" }), 1);
  t.equal(activeFilterCount({ agent: "web-1", category: "agent", after: "2025-01-31T12:00:00Z" }), 3);
  t.equal(activeFilterCount({ agent: " ", operator: "" }), 0);
});

t.test("the folded panel's button says how many filters apply", async (t) => {
  t.equal(filterToggleText(0), "Filters");
  t.equal(filterToggleText(1), "Filters (1 active)");
  t.equal(filterToggleText(6), "Filters (6 active)");
});
