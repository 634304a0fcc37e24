import t from "tap";
import { codeFromHash, loginPath, safeNext } from "../src/ui/redirect.js";

t.test("safeNext follows same-origin paths only", async (t) => {
  t.equal(safeNext("/agents?status=pending"), "/agents?status=pending");
  t.equal(safeNext("/agents/n-1"), "/agents/n-1");
  t.equal(safeNext("/audit?type=auth.login.failed#x"), "/audit?type=auth.login.failed#x");
  for (const bad of [
    null,
    undefined,
    "",
    "agents",
    "https://evil.example/",
    "//evil.example/x",
    "/\\evil.example",
    "javascript:alert(1)",
    "/\t/evil.example",
    "/\n/evil.example",
    "/login",
    "/login?next=/x",
  ]) {
    t.equal(safeNext(bad), "/", `refuses ${JSON.stringify(bad)}`);
  }
});

t.test("loginPath carries the page to return to", async (t) => {
  t.equal(loginPath("/"), "/login");
  t.equal(loginPath("/agents?selector=os%3Dlinux"), "/login?next=%2Fagents%3Fselector%3Dos%253Dlinux");
  t.equal(new URLSearchParams(loginPath("/audit?live=1").split("?")[1]).get("next"), "/audit?live=1");
  t.equal(loginPath("//evil.example"), "/login");
});

t.test("codeFromHash reads #code=", async (t) => {
  t.equal(codeFromHash("#code=abc-123_X"), "abc-123_X");
  t.equal(codeFromHash("code=abc"), "abc");
  t.equal(codeFromHash("#other=1&code=zz"), "zz");
  t.equal(codeFromHash(""), undefined);
  t.equal(codeFromHash("#code="), undefined);
  t.equal(codeFromHash("#nothing"), undefined);
});
