import type { AgentStatus, LinkUp } from "../db/agents.js";

/** One live agent link held by this replica. */
export interface HeldLink {
  readonly up: LinkUp;
  status: AgentStatus;
  name: string;
  /** Ends the link; resolves once the registry shows it disconnected. */
  close(reason: string, refusal?: { reason: string; message: string }): Promise<void>;
}

/** The links this process holds, by node id. */
export function createHub() {
  const links = new Map<string, HeldLink>();
  return {
    get: (nodeId: string) => links.get(nodeId),
    /** Adds a link, returning the one it replaces (the same agent reconnecting before we noticed). */
    add(link: HeldLink): HeldLink | undefined {
      const prev = links.get(link.up.nodeId);
      links.set(link.up.nodeId, link);
      return prev === link ? undefined : prev;
    },
    remove(link: HeldLink) {
      if (links.get(link.up.nodeId) === link) links.delete(link.up.nodeId);
    },
    all: () => [...links.values()],
    size: () => links.size,
  };
}
export type Hub = ReturnType<typeof createHub>;
