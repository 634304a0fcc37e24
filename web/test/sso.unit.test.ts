import t from "tap";
import { ApiError } from "@orch/client";
import { ssoLoginHref } from "../src/api/sso-links.js";
import { operatorSource, ssoErrorMessage, ssoErrorOf } from "../src/lib/sso.js";

t.test("?sso_error= shows the catalogue's meaning of the code, with the code", async (t) => {
  const e = ssoErrorOf("?sso_error=sso_mapping_refused&x=1");
  t.ok(e instanceof ApiError);
  t.equal((e as ApiError).code, "sso_mapping_refused");
  t.equal((e as ApiError).status, 403);
  t.match(e!.message, /No mapping rule of the provider matches/);
  t.equal(ssoErrorMessage("sso_state_invalid"), (ssoErrorOf("sso_error=sso_state_invalid") as ApiError).message);
  t.equal(ssoErrorOf(""), undefined);
  t.equal(ssoErrorOf("?next=/agents"), undefined);
});

t.test("an unknown or crafted code gets a generic message and no code", async (t) => {
  for (const raw of ["nope", "<script>", "constructor", "__proto__"]) {
    const e = ssoErrorOf(`?sso_error=${encodeURIComponent(raw)}`);
    t.notOk(e instanceof ApiError, raw);
    t.match(e?.message, /Single sign-on did not complete/);
  }
});

t.test("a sign-in button's link carries the landing page, except the home", async (t) => {
  t.equal(ssoLoginHref("okta", "/"), "/api/v1/auth/sso/okta/login");
  t.equal(
    ssoLoginHref("corp idp", "/agents?status=connected"),
    "/api/v1/auth/sso/corp%20idp/login?return_to=%2Fagents%3Fstatus%3Dconnected",
  );
});

t.test("operatorSource names the provider and rule of an SSO operator", async (t) => {
  t.equal(operatorSource({ source: "sso:okta", sso_rule: "ops" }), "sso: okta (rule ops)");
  t.equal(operatorSource({ source: "sso:okta", sso_rule: "" }), "sso: okta");
  t.equal(operatorSource({ source: "key" }), "key");
  t.equal(operatorSource({ name: "alice" }), undefined);
});
