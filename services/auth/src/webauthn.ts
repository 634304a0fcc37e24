import type { Passkey } from "@orch/contracts";
import { invalid, precondition } from "@orch/kit";
import type { PasskeyRow } from "./db/passkeys.js";

const badResponse = (why: string) =>
  invalid("invalid_passkey_response", `the authenticator's response is not valid: ${why}`, { field: "response" });

/**
 * The fields of a WebAuthn response (RegistrationResponseJSON or AuthenticationResponseJSON) this
 * service needs before the library verifies the rest: the credential id, the challenge the browser
 * signed (to find and consume it) and, for sign-in, the user handle.
 */
export interface ParsedResponse<T> {
  response: T;
  credentialId: string;
  challenge: string;
  userHandle: string | undefined;
}

const B64URL_RE = /^[A-Za-z0-9_-]+$/;

export function parseWebAuthnResponse<T>(json: string): ParsedResponse<T> {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw badResponse("not JSON");
  }
  if (!value || typeof value !== "object") throw badResponse("not an object");
  const v = value as { id?: unknown; response?: { clientDataJSON?: unknown; userHandle?: unknown } };
  if (typeof v.id !== "string" || !B64URL_RE.test(v.id)) throw badResponse("id is missing or not base64url");
  const clientData = v.response?.clientDataJSON;
  if (typeof clientData !== "string" || !B64URL_RE.test(clientData)) throw badResponse("clientDataJSON is missing");
  let challenge: unknown;
  try {
    challenge = (JSON.parse(Buffer.from(clientData, "base64url").toString("utf8")) as { challenge?: unknown })
      .challenge;
  } catch {
    throw badResponse("clientDataJSON is not JSON");
  }
  if (typeof challenge !== "string" || challenge === "") throw badResponse("clientDataJSON has no challenge");
  const handle = v.response?.userHandle;
  return {
    response: value as T,
    credentialId: v.id,
    challenge,
    userHandle: typeof handle === "string" && handle !== "" ? handle : undefined,
  };
}

/**
 * The gateway derives the relying party from `http.public_url` and sends nothing without a host
 * name; checked here too so a bus caller cannot start a ceremony bound to no relying party.
 */
export function requireRp(req: { rpId: string; origin: string }): { rpId: string; origin: string } {
  if (!req.rpId || !req.origin) {
    throw precondition("passkeys_unavailable", "passkeys need http.public_url set to a URL with a host name");
  }
  return { rpId: req.rpId, origin: req.origin };
}

// Control characters would break the list's rendering and the audit summary.
const CONTROL_RE = /[\p{Cc}\p{Cf}]/u;

/** A passkey's name: 1..64 characters, not blank, no control characters. */
export function passkeyName(name: string): string {
  const trimmed = name.trim();
  if (trimmed === "" || [...trimmed].length > 64 || CONTROL_RE.test(trimmed)) {
    throw invalid("invalid_request", "name must be 1-64 characters, not blank, without control characters", {
      field: "name",
    });
  }
  return trimmed;
}

export function toPasskey(r: PasskeyRow): Passkey {
  return {
    $typeName: "orch.v1.Passkey",
    id: r.id,
    operatorId: r.operator_id,
    name: r.name,
    createdAt: r.created_at,
    ...(r.last_used_at === null ? {} : { lastUsedAt: r.last_used_at }),
    backedUp: r.backed_up,
    transports: r.transports,
  };
}
