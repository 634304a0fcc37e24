/** Secret metadata as table rows and fields (pure; values never reach the CLI). */
import type { Reencryption, SecretMeta } from "@orch/client";
import { count } from "./units.js";
import { idsOnly, type OperatorNames } from "../operator-names.js";

/**
 * Who may receive a secret: agents and/or tags, or any approved agent when unrestricted. Agents
 * are shown by name where `agentName` knows it (`secrets show`), else by node id.
 */
export function restrictionText(
  r: SecretMeta["restriction"],
  agentName: (nodeId: string) => string = (id) => id,
): string {
  if (!r) return "any approved agent";
  const parts = [];
  if (r.node_ids.length) parts.push(`nodes: ${r.node_ids.map(agentName).join(",")}`);
  const tags = Object.entries(r.tags);
  if (tags.length) parts.push(`tags: ${tags.map(([k, v]) => `${k}=${v}`).join(",")}`);
  return parts.join("; ");
}

export const SECRET_COLUMNS = ["NAME", "RESTRICTION", "EXPIRES", "UPDATED", "DESCRIPTION"];

export function secretRows(secrets: readonly SecretMeta[]): unknown[][] {
  return secrets.map((s) => [
    s.name,
    restrictionText(s.restriction),
    s.expires_at ?? "never",
    s.updated_at,
    s.description,
  ]);
}

export function secretFields(
  s: SecretMeta,
  names: OperatorNames = idsOnly,
  agentName?: (nodeId: string) => string,
): [string, unknown][] {
  return [
    ["name", s.name],
    ["description", s.description],
    ["expires_at", s.expires_at ?? "never"],
    ["restriction", restrictionText(s.restriction, agentName)],
    ["created_at", s.created_at],
    ["created_by", names(s.created_by)],
    ["updated_at", s.updated_at],
    ["updated_by", names(s.updated_by)],
  ];
}

export const reencryptedLine = (r: Reencryption) =>
  `Re-encrypted ${count(r.reencrypted, "secret")} with key ${r.active_key}`;

/** The secrets the active key set could not decrypt, or null when there were none. */
export const reencryptFailedNote = (r: Reencryption) =>
  r.failed.length ? `could not decrypt (left unchanged): ${r.failed.join(", ")}` : null;
