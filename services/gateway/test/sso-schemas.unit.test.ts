import t from "tap";
import { isLoopbackRedirect, logoutTokenOf, safeReturnTo, signInErrorPath } from "../src/routes/sso-schemas.js";

t.test("return_to: a same-origin console path, else the console's home", async (t) => {
  for (const ok of ["/agents", "/agents?status=pending", "/audit#x", "/"]) t.equal(safeReturnTo(ok), ok, ok);
  for (const bad of [
    undefined,
    "",
    "agents",
    "https://evil.example/",
    "//evil.example/x",
    "/\\evil.example",
    "/a\\b",
    "/\tevil",
    "/api/v1/auth/whoami",
    "/api",
    "/login",
    "/login?next=/x",
  ])
    t.equal(safeReturnTo(bad), "", String(bad));
});

t.test("the CLI's redirect must be loopback http (RFC 8252)", async (t) => {
  for (const ok of ["http://127.0.0.1:4711/callback", "http://[::1]:80/cb", "http://localhost:1/callback"])
    t.ok(isLoopbackRedirect(ok), ok);
  for (const bad of [
    "https://127.0.0.1/callback",
    "http://evil.example/callback",
    "http://127.0.0.1.evil.example/cb",
    "http://user:pw@127.0.0.1/cb",
    "http://127.0.0.1/cb#frag",
    "not a url",
  ])
    t.notOk(isLoopbackRedirect(bad), bad);
});

t.test("back-channel logout: the logout_token form field", async (t) => {
  t.equal(logoutTokenOf(Buffer.from("logout_token=a.b.c&x=1")), "a.b.c");
  t.equal(logoutTokenOf(Buffer.from("x=1")), "");
  t.equal(logoutTokenOf(Buffer.alloc(0)), "");
  t.equal(signInErrorPath("sso_state_invalid"), "/login?sso_error=sso_state_invalid");
});
