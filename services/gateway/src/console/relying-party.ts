import { isIP } from "node:net";
import { OrchError } from "@orch/kit";
import type { GatewayConfig } from "../config.js";

export interface RelyingParty {
  rpId: string;
  origin: string;
}

/**
 * WebAuthn's relying party is the console's public origin. It must come from configuration, never
 * the request (a client could name another site), and browsers refuse IP addresses as RP IDs.
 */
export function relyingParty(http: Pick<GatewayConfig["http"], "public_url">): RelyingParty {
  let url: URL | undefined;
  try {
    url = http.public_url ? new URL(http.public_url) : undefined;
  } catch {
    url = undefined;
  }
  const host = url?.hostname.replace(/^\[|\]$/g, "") ?? "";
  if (!url || !host || isIP(host) !== 0)
    throw new OrchError(
      "FAILED_PRECONDITION",
      "passkeys_unavailable",
      "passkeys need http.public_url set to a URL with a host name, not an IP address",
    );
  return { rpId: host.toLowerCase(), origin: url.origin };
}
