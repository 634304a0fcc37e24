/** The orchestrator's status, the tag index and discovery announcements (pure). */
import type { Discovery, Status, TagIndex } from "@orch/client";

export function statusFields(st: Status, server: string): [string, unknown][] {
  return [
    ["server", server],
    ["status", st.status],
    ["api_version", st.api_version],
    ["protocol_version", st.protocol_version],
  ];
}

export const SERVICE_COLUMNS = ["SERVICE", "STATUS"];

/** Services by name. */
export function serviceRows(services: Status["services"]): unknown[][] {
  return Object.entries(services ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, state]) => [name, state]);
}

export const TAG_COLUMNS = ["KEY", "VALUES"];

/** Tag keys in order, each with its values comma-separated as the server lists them. */
export function tagIndexRows(tags: TagIndex["tags"]): unknown[][] {
  return Object.keys(tags)
    .sort()
    .map((k) => [k, tags[k]!.join(",")]);
}

export const announcedLine = (r: Discovery) =>
  `Announced ${r.announced} to ${r.sent_to.length ? r.sent_to.join(", ") : "nobody"}`;
