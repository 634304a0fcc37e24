/** Passkey listings as table rows (pure; unit-tested). */
import { ago } from "./time.js";

export interface PasskeyView {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
  backed_up: boolean;
  transports: string[];
}

export const PASSKEY_COLUMNS = ["ID", "NAME", "CREATED", "LAST USED", "SYNCED", "TRANSPORTS"];

/** Oldest first, as they were registered. */
export function passkeyRows(passkeys: readonly PasskeyView[], now: number): unknown[][] {
  return [...passkeys]
    .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))
    .map((p) => [
      p.id,
      p.name,
      p.created_at,
      p.last_used_at ? ago(p.last_used_at, now) : "never",
      p.backed_up ? "yes" : "no",
      p.transports.length ? [...p.transports].sort().join(",") : "-",
    ]);
}

/** Whose passkeys a listing shows: "your" or the operator's name. */
export const ownerLabel = (operator?: { name: string }) => (operator ? `${operator.name}'s` : "your");

export const NO_PASSKEYS_HINT =
  "no passkeys; register one in the web console (orchctl console, then Account): registration needs a browser";
