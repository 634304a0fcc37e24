import { KeyringError, packSealed, parseKeyring, unpackSealed, type Keyring } from "@orch/kit";

/** The SSO keyring, or undefined when `auth.sso_keys` is empty (single sign-on off). */
export function ssoKeyring(spec: string): Keyring | undefined {
  return spec.trim() === "" ? undefined : parseKeyring(spec, "ORCH_AUTH_SSO_KEYS");
}

/** Seals for a bytea column; `name` (a provider or operator id) is bound as associated data. */
export function sealValue(ring: Keyring, name: string, plaintext: string): Buffer {
  return packSealed(ring.seal(name, plaintext));
}

export function openValue(ring: Keyring, name: string, stored: Buffer): string {
  const sealed = unpackSealed(stored);
  if (!sealed) throw new KeyringError("decrypt_failed", "?");
  return ring.open(name, sealed);
}
