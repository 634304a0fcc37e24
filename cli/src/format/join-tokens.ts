/** Join tokens as table rows and fields, and the one-line install (pure). */
import type { ResponseBody } from "@orch/client";

export type JoinToken = ResponseBody<"/api/v1/join-tokens/{id}", "delete">;
export type CreatedJoinToken = ResponseBody<"/api/v1/join-tokens", "post">;
export type JoinTokenPage = ResponseBody<"/api/v1/join-tokens", "get">;
/** What the server publishes under /install: whether the install line can install anything. */
export type AgentPackages = ResponseBody<"/api/v1/agent-packages", "get">;

export const JOIN_TOKEN_COLUMNS = ["ID", "STATE", "USES", "EXPIRES", "TAGS", "BY"];

const tagText = (tags: Record<string, string>) =>
  Object.entries(tags)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");

const usesText = (t: JoinToken) => (t.max_uses > 0 ? `${t.uses}/${t.max_uses}` : `${t.uses}`);

export function joinTokenRows(tokens: JoinTokenPage["join_tokens"]): unknown[][] {
  return tokens.map((t) => [t.id, t.state, usesText(t), t.expires_at, tagText(t.tags), t.created_by_name]);
}

export function joinTokenFields(t: JoinToken): [string, unknown][] {
  return [
    ["id", t.id],
    ["state", t.state],
    ["uses", usesText(t) + (t.max_uses > 0 ? "" : " (unlimited)")],
    ["expires_at", t.expires_at],
    ["tags", tagText(t.tags)],
    ["name_prefix", t.name_prefix],
    ["description", t.description],
    ["created_at", t.created_at],
    ["created_by", t.created_by_name || t.created_by],
    ["revoked_at", t.revoked_at],
  ];
}

/** What an operator pastes on a machine: the gateway serves the script at <server>/install/agent.sh. */
export const installLine = (server: string, token: string) =>
  `curl -fsSL ${server}/install/agent.sh | sudo sh -s -- --token ${token}`;

/**
 * The note printed with an install line that cannot work yet (nothing published, no release key),
 * or when the CLI could not ask; undefined when the line works. The reason and how to fix it are the
 * server's words, the same the install script prints.
 */
export function installNote(p: AgentPackages | null, checkError?: string): string | undefined {
  if (!p)
    return `note: could not check whether this server publishes orch-agent packages (${checkError ?? "no answer"})`;
  if (!p.unavailable) return undefined;
  return [
    `note: this install line cannot install an agent yet (${p.unavailable.code}); run now, it only says why:`,
    `  ${p.unavailable.detail}`,
    "  The token is valid already: once a package is published (before the token expires), the same line works.",
  ].join("\n");
}
