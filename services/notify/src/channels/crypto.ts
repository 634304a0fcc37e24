import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * Channel credentials at rest. With `notify.credentials_key` set they are sealed with AES-256-GCM
 * (the channel id is the associated data, so a sealed blob cannot be moved to another channel);
 * without a key they are stored as plain JSON. The first byte says which, so setting a key later
 * works: plain rows are read as they are and sealed on their next update.
 */
const PLAIN = 0;
const AES_GCM = 1;

export function parseCredentialsKey(k: string): Buffer | undefined {
  const raw = /^[0-9a-fA-F]{64}$/.test(k) ? Buffer.from(k, "hex") : Buffer.from(k, "base64");
  return raw.length === 32 ? raw : undefined;
}

export interface CredentialBox {
  seal(channelId: string, creds: Record<string, unknown>): Buffer;
  open(channelId: string, blob: Buffer): Record<string, unknown>;
}

export function credentialBox(keyText: string): CredentialBox {
  const key = keyText ? parseCredentialsKey(keyText) : undefined;
  if (keyText && !key) throw new Error("notify.credentials_key must be 32 bytes as base64 or 64 hex characters");
  return {
    seal(channelId, creds) {
      const json = Buffer.from(JSON.stringify(creds), "utf8");
      if (!key) return Buffer.concat([Buffer.from([PLAIN]), json]);
      const iv = randomBytes(12);
      const c = createCipheriv("aes-256-gcm", key, iv);
      c.setAAD(Buffer.from(channelId, "utf8"));
      const ct = Buffer.concat([c.update(json), c.final()]);
      return Buffer.concat([Buffer.from([AES_GCM]), iv, c.getAuthTag(), ct]);
    },
    open(channelId, blob) {
      if (blob[0] === PLAIN) return JSON.parse(blob.subarray(1).toString("utf8")) as Record<string, unknown>;
      if (blob[0] !== AES_GCM) throw new Error("unknown credential format");
      if (!key) throw new Error("channel credentials are encrypted but notify.credentials_key is not set");
      const d = createDecipheriv("aes-256-gcm", key, blob.subarray(1, 13));
      d.setAAD(Buffer.from(channelId, "utf8"));
      d.setAuthTag(blob.subarray(13, 29));
      return JSON.parse(Buffer.concat([d.update(blob.subarray(29)), d.final()]).toString("utf8")) as Record<string, unknown>;
    },
  };
}
