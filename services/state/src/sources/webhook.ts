import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { invalid, unauthenticated } from "@orch/kit";

/**
 * Push notifications from the three forges a source may live on. The signature (or GitLab's
 * shared token) is checked over the raw bytes before anything in the body is read, so an
 * unauthenticated caller can make us parse nothing. Messages never repeat a header's value.
 */

export type Forge = "github" | "gitlab" | "gitea";

export interface WebhookNotice {
  forge: Forge;
  /** "push", "ping", "tag_push", …: GitLab's "Push Hook" style names are normalised to GitHub's. */
  event: string;
  push?: { ref: string; branch: string | null; after: string; deleted: boolean };
}

const EVENT_RE = /^[A-Za-z0-9 _.-]{1,64}$/;
const HEX_DIGEST_RE = /^[0-9a-fA-F]{64}$/;
const COMMIT_RE = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const REF_MAX = 1024;

const badSignature = (forge: Forge, what: string) =>
  unauthenticated("webhook_signature_invalid", `${forge} webhook: ${what}`);

/** Verifies and reads a push notification (headers lower-cased). Throws OrchError webhook_signature_invalid (401) or invalid_webhook (400). */
export function verifyWebhook(
  headers: Readonly<Record<string, string>>,
  body: Uint8Array,
  secret: string,
): WebhookNotice {
  const forge = forgeOf(headers);
  // An unset secret must never verify, whatever the sender put in its headers.
  if (secret === "") throw badSignature(forge, "the source has no webhook secret");
  verifySignature(forge, headers, body, secret);
  const event = eventOf(forge, headers);
  if (event !== "push") return { forge, event };
  return { forge, event, push: readPush(forge, headers, body) };
}

/**
 * The header naming a delivery, per forge, most specific first; the same value on a redelivery.
 * GitLab: Idempotency-Key (kept across its retries, since 17.4), else X-Gitlab-Event-UUID.
 */
const DELIVERY_HEADERS: Record<Forge, readonly string[]> = {
  github: ["x-github-delivery"],
  gitea: ["x-gitea-delivery"],
  gitlab: ["idempotency-key", "x-gitlab-event-uuid"],
};
const DELIVERY_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * What a verified delivery is remembered by, to refuse its replay: the forge's delivery id (when
 * sent and well-formed) and the SHA-256 of the body. The body key is what matters against an
 * attacker, who can rewrite the unsigned id header but not the signed body; the id also catches a
 * forge's redelivery.
 */
export function deliveryKeys(forge: Forge, headers: Readonly<Record<string, string>>, body: Uint8Array): string[] {
  const keys = [`body:${createHash("sha256").update(body).digest("hex")}`];
  const id = DELIVERY_HEADERS[forge].map((h) => headers[h]?.trim()).find((v) => v !== undefined && v !== "");
  if (id !== undefined && DELIVERY_ID_RE.test(id)) keys.unshift(`id:${id}`);
  return keys;
}

/** Gitea first: it also sends X-GitHub-Event (and X-Gogs-Event) for compatibility. */
function forgeOf(h: Readonly<Record<string, string>>): Forge {
  if (h["x-gitea-event"] !== undefined || h["x-gitea-signature"] !== undefined) return "gitea";
  if (h["x-github-event"] !== undefined || h["x-hub-signature-256"] !== undefined) return "github";
  if (h["x-gitlab-event"] !== undefined || h["x-gitlab-token"] !== undefined) return "gitlab";
  throw invalid(
    "invalid_webhook",
    "not a GitHub, GitLab or Gitea webhook: no X-GitHub-Event, X-Gitlab-Event or X-Gitea-Event header",
  );
}

function verifySignature(forge: Forge, h: Readonly<Record<string, string>>, body: Uint8Array, secret: string): void {
  if (forge === "gitlab") {
    const token = h["x-gitlab-token"];
    if (token === undefined) throw badSignature(forge, "missing X-Gitlab-Token");
    // Hashing both sides gives equal lengths, so the comparison leaks neither content nor length.
    const sha = (s: string) => createHash("sha256").update(s, "utf8").digest();
    if (!timingSafeEqual(sha(token), sha(secret)))
      throw badSignature(forge, "X-Gitlab-Token does not match the secret");
    return;
  }
  const header = forge === "gitea" ? "x-gitea-signature" : "x-hub-signature-256";
  const shown = forge === "gitea" ? "X-Gitea-Signature" : "X-Hub-Signature-256";
  const raw = h[header];
  if (raw === undefined) throw badSignature(forge, `missing ${shown}`);
  const hex = forge === "gitea" ? raw.trim() : raw.trim().replace(/^sha256=/, "");
  if ((forge === "github" && !raw.trim().startsWith("sha256=")) || !HEX_DIGEST_RE.test(hex))
    throw badSignature(forge, `${shown} is not ${forge === "github" ? "sha256=<hex>" : "a hex SHA-256 HMAC"}`);
  const expected = createHmac("sha256", secret).update(body).digest();
  if (!timingSafeEqual(Buffer.from(hex, "hex"), expected))
    throw badSignature(forge, `${shown} does not match the body signed with the secret`);
}

function eventOf(forge: Forge, h: Readonly<Record<string, string>>): string {
  const header = forge === "gitea" ? "x-gitea-event" : forge === "github" ? "x-github-event" : "x-gitlab-event";
  const raw = h[header]?.trim();
  if (!raw || !EVENT_RE.test(raw))
    throw invalid("invalid_webhook", `${forge} webhook: missing or malformed ${header} header`);
  // GitLab names events "Push Hook", "Tag Push Hook", …
  return forge === "gitlab"
    ? raw
        .replace(/ Hook$/, "")
        .toLowerCase()
        .replace(/ /g, "_")
    : raw.toLowerCase();
}

function readPush(
  forge: Forge,
  h: Readonly<Record<string, string>>,
  body: Uint8Array,
): NonNullable<WebhookNotice["push"]> {
  const bad = (what: string) => invalid("invalid_webhook", `${forge} push: ${what}`);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(body);
  } catch {
    throw bad("the body is not UTF-8");
  }
  // GitHub and Gitea can be set to post the JSON as a form field instead of a JSON body.
  if ((h["content-type"] ?? "").toLowerCase().startsWith("application/x-www-form-urlencoded"))
    text = new URLSearchParams(text).get("payload") ?? "";
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw bad("the body is not JSON");
  }
  if (!data || typeof data !== "object" || Array.isArray(data)) throw bad("the body is not a JSON object");
  const { ref, after, deleted } = data as Record<string, unknown>;
  if (typeof ref !== "string" || !ref.startsWith("refs/") || ref.length > REF_MAX)
    throw bad("no ref such as refs/heads/main");
  if (typeof after !== "string" || !COMMIT_RE.test(after)) throw bad("no 'after' commit SHA");
  const branch =
    ref.startsWith("refs/heads/") && ref.length > "refs/heads/".length ? ref.slice("refs/heads/".length) : null;
  return { ref, branch, after, deleted: /^0+$/.test(after) || deleted === true };
}
