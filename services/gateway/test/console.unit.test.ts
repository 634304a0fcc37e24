import t from "tap";
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { OrchError } from "@orch/kit";
import { parseCookies, serializeCookie } from "../src/console/cookies.js";
import { csrfMatches, csrfToken } from "../src/console/csrf.js";
import { relyingParty } from "../src/console/relying-party.js";
import { sessionCookieName } from "../src/console/session.js";
import { defaultConsoleDir } from "../src/console/static.js";

t.test("cookie header parsing", async (t) => {
  const c = parseCookies('a=1; orch_session=tok-en_1 ;  b="quoted"; a=2; novalue; =x; empty=');
  t.equal(c.get("a"), "1", "first occurrence wins");
  t.equal(c.get("orch_session"), "tok-en_1");
  t.equal(c.get("b"), "quoted");
  t.equal(c.get("empty"), "");
  t.notOk(c.has("novalue"));
  t.notOk(c.has(""));
  t.equal(parseCookies(undefined).size, 0);
  t.equal(parseCookies("").size, 0);
});

t.test("cookie serialization", async (t) => {
  t.equal(
    serializeCookie("orch_session", "v", { maxAgeSeconds: 90.7, httpOnly: true, secure: false }),
    "orch_session=v; HttpOnly; SameSite=Strict; Path=/; Max-Age=90",
  );
  t.equal(
    serializeCookie("orch_csrf", "", { maxAgeSeconds: -5, httpOnly: false, secure: true }),
    "orch_csrf=; Secure; SameSite=Strict; Path=/; Max-Age=0",
  );
});

t.test("csrf value is derived from the token and compared exactly", async (t) => {
  const want = createHash("sha256").update("orch-csrf:secret-token").digest("base64url");
  t.equal(csrfToken("secret-token"), want);
  t.not(csrfToken("other"), want);
  t.ok(csrfMatches("secret-token", want));
  t.notOk(csrfMatches("secret-token", undefined));
  t.notOk(csrfMatches("secret-token", ""));
  t.notOk(csrfMatches("secret-token", want.slice(1)));
  t.notOk(csrfMatches("secret-token", `${want}x`));
  t.notOk(csrfMatches("other", want));
});

t.test("session cookie name follows the public URL's scheme", async (t) => {
  t.equal(sessionCookieName({ public_url: "" }), "orch_session");
  t.equal(sessionCookieName({ public_url: "http://localhost:8080" }), "orch_session");
  t.equal(sessionCookieName({ public_url: "https://orch.example.com" }), "__Host-orch_session");
});

t.test("relying party comes from public_url, never an IP", async (t) => {
  t.same(relyingParty({ public_url: "http://localhost:8080/" }), {
    rpId: "localhost",
    origin: "http://localhost:8080",
  });
  t.same(relyingParty({ public_url: "https://Orch.Example.com/base" }), {
    rpId: "orch.example.com",
    origin: "https://orch.example.com",
  });
  for (const public_url of ["", "http://127.0.0.1:8080", "http://[::1]:8080", "https://10.0.0.1"]) {
    try {
      relyingParty({ public_url });
      t.fail(`${public_url} accepted`);
    } catch (err) {
      t.ok(err instanceof OrchError, public_url);
      t.equal((err as OrchError).reason, "passkeys_unavailable", public_url);
      t.equal((err as OrchError).httpStatus, 409);
    }
  }
});

t.test("the default console directory is the repository's web/dist", async (t) => {
  t.equal(defaultConsoleDir(), fileURLToPath(new URL("../../../web/dist/", import.meta.url)));
});
