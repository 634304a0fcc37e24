import { createDecipheriv } from "node:crypto";
import { KeyringError, OrchError, packSealed, parseKeyring, unpackSealed, type Keyring } from "@orch/kit";

/**
 * Channel credentials at rest, always sealed with AES-256-GCM under the notify keyring
 * (`notify.credentials_keys`, the secrets service's `id:base64key,...` format, active key first).
 * The channel id is the associated data, so a sealed blob cannot be moved to another channel.
 *
 * The first byte says the format. Only KEYRING is written; the two older formats are read so the
 * service can re-seal them at start: PLAIN (rows stored before encryption was mandatory) and
 * SINGLE_KEY (sealed with the old single `notify.credentials_key`, which carries no key id).
 */
const PLAIN = 0;
const SINGLE_KEY = 1;
const KEYRING = 2;
const NONCE = 12;
const TAG = 16;

/** Key id the old single `notify.credentials_key` gets in the keyring. */
export const LEGACY_KEY_ID = "legacy";
export const CREDENTIALS_KEYS_SETTING = "ORCH_NOTIFY_CREDENTIALS_KEYS";

/** The old single key: 32 bytes as base64 or 64 hex characters. */
export function parseCredentialsKey(k: string): Buffer | undefined {
  const raw = /^[0-9a-fA-F]{64}$/.test(k) ? Buffer.from(k, "hex") : Buffer.from(k, "base64");
  return raw.length === 32 ? raw : undefined;
}

/**
 * The keyring from the two settings: `keys` (active first), then the old single key as
 * `legacy` so rows it sealed stay readable. Throws with a message naming the setting when neither
 * is set: nothing is ever stored in clear.
 */
export function credentialsKeyring(keys: string, legacyKey = ""): Keyring {
  const legacy = legacyKey ? parseCredentialsKey(legacyKey) : undefined;
  if (legacyKey && !legacy) throw new Error("notify.credentials_key must be 32 bytes as base64 or 64 hex characters");
  const entries = [keys.trim(), legacy ? `${LEGACY_KEY_ID}:${legacy.toString("base64")}` : ""];
  const spec = entries.filter((s) => s !== "").join(",");
  return parseKeyring(spec, CREDENTIALS_KEYS_SETTING);
}

/**
 * Credentials no configured key opens (its key left the keyring, or the blob was altered). An
 * OrchError so a test send answers 409 naming the key id, never 500; carries no key material.
 */
export class CredentialsUnavailable extends OrchError {
  constructor(cause: KeyringError) {
    const msg = `channel credentials cannot be opened: ${cause.message}`;
    super("FAILED_PRECONDITION", "channel_credentials_unavailable", msg, { key_id: cause.keyId });
    this.name = "CredentialsUnavailable";
  }
}

export interface CredentialBox {
  /** Id of the key new seals use. */
  readonly activeKey: string;
  seal(channelId: string, creds: Record<string, unknown>): Buffer;
  /** Throws CredentialsUnavailable when the key is not in the keyring or the blob was tampered with. */
  open(channelId: string, blob: Buffer): Record<string, unknown>;
  /** True when `blob` is sealed with the active key (nothing to re-seal). */
  current(blob: Buffer): boolean;
}

function keyIdOf(blob: Buffer): string | undefined {
  return blob[0] === KEYRING ? unpackSealed(blob.subarray(1))?.keyId : undefined;
}

export function credentialBox(ring: Keyring, legacyKey = ""): CredentialBox {
  const legacy = legacyKey ? parseCredentialsKey(legacyKey) : undefined;
  const json = (b: Buffer | string) => JSON.parse(b.toString()) as Record<string, unknown>;
  return {
    activeKey: ring.active,
    seal(channelId, creds) {
      return Buffer.concat([Buffer.from([KEYRING]), packSealed(ring.seal(channelId, JSON.stringify(creds)))]);
    },
    open(channelId, blob) {
      try {
        return open(channelId, blob);
      } catch (err) {
        throw err instanceof KeyringError ? new CredentialsUnavailable(err) : err;
      }
    },
    current: (blob) => keyIdOf(blob) === ring.active,
  };

  function open(channelId: string, blob: Buffer): Record<string, unknown> {
    if (blob[0] === PLAIN) return json(blob.subarray(1));
    if (blob[0] === SINGLE_KEY) {
      if (!legacy) throw new KeyringError("unknown_key", LEGACY_KEY_ID);
      try {
        const d = createDecipheriv("aes-256-gcm", legacy, blob.subarray(1, 1 + NONCE));
        d.setAAD(Buffer.from(channelId, "utf8"));
        d.setAuthTag(blob.subarray(1 + NONCE, 1 + NONCE + TAG));
        return json(Buffer.concat([d.update(blob.subarray(1 + NONCE + TAG)), d.final()]));
      } catch {
        throw new KeyringError("decrypt_failed", LEGACY_KEY_ID);
      }
    }
    const sealed = blob[0] === KEYRING ? unpackSealed(blob.subarray(1)) : undefined;
    if (sealed === undefined) throw new KeyringError("decrypt_failed", "?");
    return json(ring.open(channelId, sealed));
  }
}
