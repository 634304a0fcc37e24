import { createHash, createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import t, { type Test } from "tap";
import { OrchError } from "@orch/kit";
import { deliveryKeys, verifyWebhook } from "../src/sources/webhook.js";

// Real payloads of the three forges (test/fixtures/webhooks), signed here with real HMACs.

const SECRET = "s3cret-webhook-value-0123456789";
const fixture = (name: string) =>
  new Uint8Array(readFileSync(new URL(`fixtures/webhooks/${name}.json`, import.meta.url)));
const hmac = (body: Uint8Array, secret = SECRET) => createHmac("sha256", secret).update(body).digest("hex");

const github = (body: Uint8Array, event = "push", secret = SECRET) => ({
  "content-type": "application/json",
  "x-github-event": event,
  "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
  "x-hub-signature-256": `sha256=${hmac(body, secret)}`,
});
// Gitea sends GitHub's and Gogs' headers too; its own signature is a bare hex HMAC.
const gitea = (body: Uint8Array, secret = SECRET) => ({
  "content-type": "application/json",
  "x-gitea-event": "push",
  "x-gitea-signature": hmac(body, secret),
  "x-github-event": "push",
  "x-gogs-event": "push",
  "x-hub-signature-256": `sha256=${hmac(body, "not-what-gitea-verifies-with")}`,
});
const gitlab = (token = SECRET, event = "Push Hook") => ({
  "content-type": "application/json",
  "x-gitlab-event": event,
  "x-gitlab-token": token,
});

function refuses(t: Test, fn: () => unknown, reason: string, code: string): OrchError | undefined {
  try {
    fn();
    t.fail(`expected ${reason}`);
    return undefined;
  } catch (err) {
    t.type(err, OrchError);
    const e = err as OrchError;
    t.equal(e.reason, reason);
    t.equal(e.code, code);
    t.notMatch(e.message, SECRET, "the secret is not in the message");
    return e;
  }
}

t.test("a GitHub push is verified and read", async (t) => {
  const body = fixture("github-push");
  t.same(verifyWebhook(github(body), body, SECRET), {
    forge: "github",
    event: "push",
    push: { ref: "refs/heads/main", branch: "main", after: "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c", deleted: false },
  });
});

t.test("a GitHub ping has no push", async (t) => {
  const body = fixture("github-ping");
  t.same(verifyWebhook(github(body, "ping"), body, SECRET), { forge: "github", event: "ping" });
});

t.test("a GitLab push is verified by its token and its event name normalised", async (t) => {
  const body = fixture("gitlab-push");
  t.same(verifyWebhook(gitlab(), body, SECRET), {
    forge: "gitlab",
    event: "push",
    push: { ref: "refs/heads/main", branch: "main", after: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", deleted: false },
  });
  t.same(verifyWebhook(gitlab(SECRET, "Tag Push Hook"), body, SECRET), { forge: "gitlab", event: "tag_push" });
});

t.test("a Gitea push is recognised as Gitea although it also sends X-GitHub-Event", async (t) => {
  const body = fixture("gitea-push");
  t.same(verifyWebhook(gitea(body), body, SECRET), {
    forge: "gitea",
    event: "push",
    push: { ref: "refs/heads/main", branch: "main", after: "bffeb74224043ba2feb48d137756c8a9331c449a", deleted: false },
  });
});

t.test("wrong or missing signatures are 401 for every forge", async (t) => {
  const gh = fixture("github-push");
  refuses(
    t,
    () => verifyWebhook(github(gh, "push", "another-secret-entirely"), gh, SECRET),
    "webhook_signature_invalid",
    "UNAUTHENTICATED",
  );
  const { "x-hub-signature-256": _s, ...unsigned } = github(gh);
  refuses(t, () => verifyWebhook(unsigned, gh, SECRET), "webhook_signature_invalid", "UNAUTHENTICATED");
  // GitHub's legacy SHA-1 header alone is not accepted.
  refuses(
    t,
    () =>
      verifyWebhook(
        { ...unsigned, "x-hub-signature": `sha1=${createHmac("sha1", SECRET).update(gh).digest("hex")}` },
        gh,
        SECRET,
      ),
    "webhook_signature_invalid",
    "UNAUTHENTICATED",
  );
  refuses(
    t,
    () => verifyWebhook({ ...github(gh), "x-hub-signature-256": hmac(gh) }, gh, SECRET),
    "webhook_signature_invalid",
    "UNAUTHENTICATED",
  );
  refuses(
    t,
    () => verifyWebhook({ ...github(gh), "x-hub-signature-256": "sha256=abc" }, gh, SECRET),
    "webhook_signature_invalid",
    "UNAUTHENTICATED",
  );

  const gt = fixture("gitea-push");
  refuses(
    t,
    () => verifyWebhook(gitea(gt, "another-secret-entirely"), gt, SECRET),
    "webhook_signature_invalid",
    "UNAUTHENTICATED",
  );
  // Gitea's own header is what counts, not the GitHub-compatible one it also sends.
  refuses(
    t,
    () =>
      verifyWebhook(
        { ...gitea(gt), "x-gitea-signature": hmac(gt, "x"), "x-hub-signature-256": `sha256=${hmac(gt)}` },
        gt,
        SECRET,
      ),
    "webhook_signature_invalid",
    "UNAUTHENTICATED",
  );

  const gl = fixture("gitlab-push");
  refuses(t, () => verifyWebhook(gitlab("wrong-token"), gl, SECRET), "webhook_signature_invalid", "UNAUTHENTICATED");
  refuses(t, () => verifyWebhook(gitlab(`${SECRET}x`), gl, SECRET), "webhook_signature_invalid", "UNAUTHENTICATED");
  refuses(
    t,
    () => verifyWebhook({ "x-gitlab-event": "Push Hook" }, gl, SECRET),
    "webhook_signature_invalid",
    "UNAUTHENTICATED",
  );
  // An empty secret never verifies, even against an empty token.
  refuses(t, () => verifyWebhook(gitlab(""), gl, ""), "webhook_signature_invalid", "UNAUTHENTICATED");
});

t.test("a body changed after signing fails the signature", async (t) => {
  const body = fixture("github-push");
  const headers = github(body);
  const tampered = new Uint8Array(
    Buffer.from(Buffer.from(body).toString("utf8").replace("refs/heads/main", "refs/heads/evil")),
  );
  refuses(t, () => verifyWebhook(headers, tampered, SECRET), "webhook_signature_invalid", "UNAUTHENTICATED");
});

t.test("the signature is checked before the body is parsed", async (t) => {
  const junk = new Uint8Array(Buffer.from("{not json"));
  // Unsigned junk is 401, not 400: nothing in it was read.
  refuses(
    t,
    () => verifyWebhook(github(junk, "push", "other-secret-value"), junk, SECRET),
    "webhook_signature_invalid",
    "UNAUTHENTICATED",
  );
  // Correctly signed junk gets as far as the parser.
  refuses(t, () => verifyWebhook(github(junk), junk, SECRET), "invalid_webhook", "INVALID_ARGUMENT");
});

t.test("unknown senders and malformed pushes are 400", async (t) => {
  const body = fixture("github-push");
  refuses(
    t,
    () => verifyWebhook({ "content-type": "application/json" }, body, SECRET),
    "invalid_webhook",
    "INVALID_ARGUMENT",
  );
  const sign = (obj: unknown) => {
    const b = new Uint8Array(Buffer.from(JSON.stringify(obj)));
    return () => verifyWebhook(github(b), b, SECRET);
  };
  refuses(t, sign([1, 2]), "invalid_webhook", "INVALID_ARGUMENT");
  refuses(t, sign({ after: "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c" }), "invalid_webhook", "INVALID_ARGUMENT");
  refuses(t, sign({ ref: "refs/heads/main", after: "HEAD" }), "invalid_webhook", "INVALID_ARGUMENT");
  refuses(
    t,
    sign({ ref: "main", after: "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c" }),
    "invalid_webhook",
    "INVALID_ARGUMENT",
  );
  const latin1 = new Uint8Array([0x7b, 0xff, 0x7d]);
  refuses(t, () => verifyWebhook(github(latin1), latin1, SECRET), "invalid_webhook", "INVALID_ARGUMENT");
  // A signed request without an event header.
  const { "x-github-event": _e, ...noEvent } = github(body);
  refuses(t, () => verifyWebhook(noEvent, body, SECRET), "invalid_webhook", "INVALID_ARGUMENT");
});

t.test("deleted branches, tags and form-encoded payloads", async (t) => {
  const zeros = "0".repeat(40);
  const del = new Uint8Array(
    Buffer.from(JSON.stringify({ ref: "refs/heads/feature/x", before: "a".repeat(40), after: zeros })),
  );
  t.same(verifyWebhook(github(del), del, SECRET).push, {
    ref: "refs/heads/feature/x",
    branch: "feature/x",
    after: zeros,
    deleted: true,
  });
  const tag = new Uint8Array(Buffer.from(JSON.stringify({ ref: "refs/tags/v1.2.0", after: "b".repeat(40) })));
  t.same(verifyWebhook(gitea(tag), tag, SECRET).push, {
    ref: "refs/tags/v1.2.0",
    branch: null,
    after: "b".repeat(40),
    deleted: false,
  });

  // GitHub's "application/x-www-form-urlencoded" content type: the JSON is the payload field, signed as sent.
  const json = Buffer.from(fixture("github-push")).toString("utf8");
  const form = new Uint8Array(Buffer.from(new URLSearchParams({ payload: json }).toString()));
  const headers = { ...github(form), "content-type": "application/x-www-form-urlencoded" };
  t.equal(verifyWebhook(headers, form, SECRET).push?.after, "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c");
});

t.test("deliveryKeys: each forge's delivery id, and always the body's hash", async (t) => {
  const body = fixture("github-push");
  const bodyKey = `body:${createHash("sha256").update(body).digest("hex")}`;
  t.same(deliveryKeys("github", github(body), body), ["id:72d3162e-cc78-11e3-81ab-4c9367dc0958", bodyKey]);
  t.same(deliveryKeys("gitea", { "x-gitea-delivery": "6f1c-gitea" }, body), ["id:6f1c-gitea", bodyKey]);
  const gl = { "x-gitlab-event-uuid": "ev-1", "idempotency-key": "idem-1" };
  t.same(deliveryKeys("gitlab", gl, body), ["id:idem-1", bodyKey], "GitLab: Idempotency-Key survives its retries");
  t.same(deliveryKeys("gitlab", { "x-gitlab-event-uuid": "ev-1" }, body), ["id:ev-1", bodyKey]);
  // Another forge's header does not count, and a malformed id is left out (the body still counts).
  t.same(deliveryKeys("gitea", { "x-github-delivery": "x" }, body), [bodyKey]);
  t.same(deliveryKeys("github", { "x-github-delivery": "a b" }, body), [bodyKey]);
  t.same(deliveryKeys("github", { "x-github-delivery": "x".repeat(129) }, body), [bodyKey]);
  const other = new Uint8Array([...body, 0x0a]);
  t.not(deliveryKeys("github", {}, other)[0], bodyKey, "another body, another key");
});
