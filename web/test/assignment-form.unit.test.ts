import t from "tap";
import { checkDraft, matchesText } from "../src/pages/assignments/form-rules.js";
import { selectorExcerpt } from "../src/ui/selector-excerpt.js";

const draft = { name: "web", selector: "role=web", modules: ["web-base"], description: "" };

t.test("a complete draft is ready; the selector is sent trimmed", async (t) => {
  const c = checkDraft({ ...draft, selector: "  role=web , env in (a,b) " });
  t.equal(c.ready, true);
  t.equal(c.selectorOk, true);
  t.equal(c.selector, "role=web , env in (a,b)");
  t.equal(checkDraft({ ...draft, selector: "*" }).ready, true, "* is every agent");
});

t.test("an unparsable or blank selector is not ok (Create stays disabled)", async (t) => {
  for (const selector of ["role=web,,", "role=", "", "   ", "* ,x"]) {
    const c = checkDraft({ ...draft, selector });
    t.equal(c.selectorOk, false, JSON.stringify(selector));
    t.equal(c.ready, false);
    t.equal(c.selector, undefined);
  }
});

t.test("name and modules: rule errors at once, missing ones only after a submit", async (t) => {
  t.match(checkDraft({ ...draft, name: "Web Tier" }).name, /^Name /, "the API's name rule");
  t.equal(checkDraft({ ...draft, name: "" }).name, undefined, "blank is not yet an error");
  t.equal(checkDraft({ ...draft, name: "" }, { touched: true }).name, "Name is required");
  t.equal(checkDraft({ ...draft, name: "" }).ready, false);
  t.equal(checkDraft({ ...draft, modules: [] }).modules, undefined);
  t.equal(checkDraft({ ...draft, modules: [] }, { touched: true }).modules, "Choose at least one module");
  t.equal(checkDraft({ ...draft, modules: [] }).ready, false);
  t.equal(checkDraft({ ...draft, description: "x".repeat(1001) }).ready, false, "the API's description limit");
});

t.test("the match count reads as English", async (t) => {
  t.equal(matchesText(0), "matches 0 agents");
  t.equal(matchesText(1), "matches 1 agent");
  t.equal(matchesText(3), "matches 3 agents");
});

t.test("the selector excerpt splits at the error position", async (t) => {
  t.same(selectorExcerpt("role=web,,", 9), {
    before: "role=web,",
    at: ",",
    after: "",
    clippedStart: false,
    clippedEnd: false,
  });
  t.same(selectorExcerpt("role=", 5), { before: "role=", at: "", after: "", clippedStart: false, clippedEnd: false });
  const long = `${"a".repeat(50)}!${"b".repeat(50)}`;
  const x = selectorExcerpt(long, 50, 10);
  t.same([x.before, x.at, x.after, x.clippedStart, x.clippedEnd], ["a".repeat(10), "!", "b".repeat(10), true, true]);
  t.equal(selectorExcerpt("abc", 99).before, "abc", "a position past the end is the end");
});
