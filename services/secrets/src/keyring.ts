import { parseKeyring as parseKitKeyring, type Keyring } from "@orch/kit";

// The keyring lives in the kit (notify seals channel credentials with the same format); this module
// keeps the secrets service's API and names its own setting in the "no key" message.
export { KeyringError, type Keyring, type KeyringFailure, type Sealed } from "@orch/kit";

/** Parses `id:base64key[,id:base64key...]` (active key first), as set in ORCH_SECRETS_KEYS. */
export function parseKeyring(spec: string): Keyring {
  return parseKitKeyring(spec, "ORCH_SECRETS_KEYS");
}
