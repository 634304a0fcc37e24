import { KeyringError, packSealed, parseKeyring, precondition, unpackSealed } from "@orch/kit";

/** How the repository is reached; only ever held in memory, sealed at rest. */
export interface GitAuth {
  token?: string;
  username?: string;
  sshKey?: string;
}

/**
 * A source's credentials and webhook secret at rest: AES-256-GCM under state.source_keys (the
 * secrets service's keyring format), with `<purpose>:<source name>` as associated data so a
 * sealed blob cannot be moved to another source or from the webhook column to the auth column.
 */
export interface SourceBox {
  sealAuth(source: string, auth: GitAuth): Buffer;
  openAuth(source: string, blob: Buffer): GitAuth;
  sealWebhook(source: string, secret: string): Buffer;
  openWebhook(source: string, blob: Buffer): string;
}

/** Undefined when no keys are configured: creating a source then answers source_keys_unset. */
export function createSourceBox(keys: string): SourceBox | undefined {
  if (keys.trim() === "") return undefined;
  const ring = parseKeyring(keys, "ORCH_STATE_SOURCE_KEYS");
  const seal = (aad: string, text: string) => packSealed(ring.seal(aad, text));
  const open = (aad: string, blob: Buffer) => {
    const s = unpackSealed(blob);
    try {
      if (!s) throw new KeyringError("decrypt_failed", "?");
      return ring.open(aad, s);
    } catch (err) {
      if (err instanceof KeyringError)
        throw precondition("source_keys_unset", `the source's sealed secrets cannot be opened: ${err.message}`, {
          key_id: err.keyId,
        });
      throw err;
    }
  };
  return {
    sealAuth: (source, auth) => seal(`auth:${source}`, JSON.stringify(auth)),
    openAuth: (source, blob) => JSON.parse(open(`auth:${source}`, blob)) as GitAuth,
    sealWebhook: (source, secret) => seal(`webhook:${source}`, secret),
    openWebhook: (source, blob) => open(`webhook:${source}`, blob),
  };
}

/** The box, or the 409 that tells the operator which setting to set. */
export function requireBox(box: SourceBox | undefined): SourceBox {
  if (box) return box;
  throw precondition(
    "source_keys_unset",
    "no keyring seals source credentials: set state.source_keys (ORCH_STATE_SOURCE_KEYS) to 'id:base64key'",
  );
}
