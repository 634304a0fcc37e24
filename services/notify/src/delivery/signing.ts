import { createHmac } from "node:crypto";

/**
 * Standard Webhooks signature (https://www.standardwebhooks.com): HMAC-SHA256 over
 * `${webhook-id}.${webhook-timestamp}.${body}` keyed with the base64-decoded part of the
 * `whsec_` secret, sent as `webhook-signature: v1,<base64>`.
 */
export function signWebhook(secret: string, id: string, timestampSec: number, body: string): Record<string, string> {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const sig = createHmac("sha256", key).update(`${id}.${timestampSec}.${body}`).digest("base64");
  return { "webhook-id": id, "webhook-timestamp": String(timestampSec), "webhook-signature": `v1,${sig}` };
}
