import { escapeBytes } from "./runs.js";

/** The frozen content of a command.run change request (services/state/src/approvals/command-run.ts). */
interface CommandRunContent {
  command?: string[] | null;
  script?: string | null;
  script_sha256?: string;
  timeout_s?: number;
  batch?: string | null;
  max_failures?: number | null;
  selector?: string | null;
  node_ids?: string[] | null;
  targets?: { node_id: string; name: string }[];
}

/** The requester wrote this text: the approver's terminal shows its control characters, never obeys them. */
const safe = (s: string) => escapeBytes(Buffer.from(s, "utf8"));

/**
 * What a command.run request would run and on which agents, for `orchctl requests show`. The argv
 * is shown as JSON so every argument's bounds are exact; a script is shown whole, line by line.
 */
export function commandRunRequestLines(content: unknown): string[] {
  const c = (content ?? {}) as CommandRunContent;
  const lines = ["frozen run:"];
  if (c.command) lines.push(`  command:  ${safe(JSON.stringify(c.command))}`);
  if (typeof c.script === "string") {
    const bytes = Buffer.byteLength(c.script, "utf8");
    lines.push(`  script:   ${bytes} bytes, sha256 ${c.script_sha256 ?? "?"}`);
    for (const l of safe(c.script).replace(/\n$/, "").split("\n")) lines.push(`    | ${l}`);
  }
  lines.push(`  timeout:  ${c.timeout_s ?? "?"} s`);
  lines.push(`  rollout:  batch ${c.batch || "all"}, max failures ${c.max_failures ?? "none"}`);
  if (c.selector) lines.push(`  selector: ${safe(c.selector)}`);
  if (c.node_ids?.length) lines.push(`  agents asked for: ${safe(c.node_ids.join(", "))}`);
  const targets = c.targets ?? [];
  lines.push(`  targets (${targets.length}):`);
  for (const t of targets) lines.push(`    ${safe(t.name || "-")}  ${safe(t.node_id)}`);
  return lines;
}
