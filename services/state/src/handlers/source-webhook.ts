import { randomBytes } from "node:crypto";
import type { StateService } from "@orch/contracts";
import { unauthenticated, type Actor, type Handlers } from "@orch/kit";
import { sourcesDb } from "../db/sources.js";
import { webhookDeliveriesDb } from "../db/webhook-deliveries.js";
import type { Engine } from "../engine/index.js";
import { requireBox, type SourceBox } from "../sources/seal.js";
import type { SourceSync } from "../sources/sync.js";
import { deliveryKeys, verifyWebhook, type WebhookNotice } from "../sources/webhook.js";

type H = Handlers<typeof StateService>;

/** The webhook's answer once the push is accepted: the sync runs after the response. */
export const WEBHOOK_QUEUED = "sync started; GET the source for its outcome";
/** The webhook's answer to a delivery already received (same delivery id or same signed body). */
export const WEBHOOK_DUPLICATE = "duplicate delivery: already received, not synced again";
/** What an unknown source's webhook is verified with: random per process, never any source's. */
const UNKNOWN_SOURCE_SECRET = randomBytes(32).toString("base64url");

/** Why a verified notification does not sync the source ("" when it does). */
function ignoredBecause(n: WebhookNotice, branch: string): string {
  if (!n.push) return `not a push (${n.event})`;
  if (n.push.branch === null) return `not a branch push (${n.push.ref})`;
  if (n.push.branch !== branch) return `push to branch '${n.push.branch}'; the source follows '${branch}'`;
  if (n.push.deleted) return `branch '${branch}' was deleted`;
  return "";
}

export const sourceWebhook =
  ({ deps }: Engine, sync: SourceSync, box: SourceBox | undefined): H["sourceWebhook"] =>
  async (req) => {
    const { pool, clock, config, log } = deps;
    const sealer = requireBox(box);
    const row = await sourcesDb.get(pool, req.name);
    // An unknown name is checked like a known one against a secret nobody has: the same HMAC
    // work and the same 401 (or 400) as a wrong signature, so an unauthenticated caller cannot
    // tell which source names exist.
    const secret = row ? sealer.openWebhook(row.name, row.webhook_sealed) : UNKNOWN_SOURCE_SECRET;
    const notice = verifyWebhook(req.headers, req.body, secret);
    if (!row) throw unauthenticated("webhook_signature_invalid", `${notice.forge} webhook: not signed for this source`);
    const base = { forge: notice.forge, event: notice.event, commit: notice.push?.after ?? "" };
    // Verified: now remembered, and a delivery seen before (a replay, a redelivery) does nothing
    // more. Answered 202 like the first one, so a forge's retry is not shown as failing.
    const now = clock.now();
    await webhookDeliveriesDb.prune(pool, now - config.state.sources_webhook_replay_window_hours * 3_600_000);
    if (!(await webhookDeliveriesDb.record(pool, row.name, deliveryKeys(notice.forge, req.headers, req.body), now)))
      return { ...base, synced: false, reason: WEBHOOK_DUPLICATE };
    const reason = ignoredBecause(notice, row.branch);
    if (reason) return { ...base, synced: false, reason };
    // The caller is the forge, not an operator: events name it as such.
    const actor: Actor = { id: `webhook:${notice.forge}`, name: `${notice.forge} webhook`, type: "system", role: "" };
    // A forge gives up after about 10 s and a fetch may take longer: answer now. Not made due
    // first: the scheduler would start a second sync of the same push beside this one (the
    // loser queues a third). A sync already running queues this one itself (sync.sync).
    void sync
      .sync(row.name, { kind: "webhook", actor })
      .catch((err: unknown) => log.error({ err, source: row.name }, "webhook-triggered sync failed"));
    return { ...base, synced: true, reason: WEBHOOK_QUEUED };
  };
