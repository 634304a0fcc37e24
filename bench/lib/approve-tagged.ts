/**
 * Approval and tags for the fleet a bench just connected (agents service RPCs over NATS, 32 at a
 * time), then a wait until the last agent answers a Ping through the bus, since approval reaches
 * the replica holding its link asynchronously.
 */
import { AgentControlService, AgentsService } from "@orch/contracts";
import { rpcClient, type Actor, type NatsConnection } from "@orch/kit";

async function pool<T>(items: T[], width: number, fn: (x: T, i: number) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (i < items.length) {
        const k = i++;
        await fn(items[k]!, k);
      }
    }),
  );
}

/** Names agent i `sim-0000i` and gives it `tags(i)`. */
export async function approveTagged(
  nc: NatsConnection,
  nodeIds: string[],
  actor: Actor,
  tags: (i: number) => Record<string, string>,
): Promise<void> {
  const agents = rpcClient(nc, "agents", AgentsService, { timeoutMs: 10_000 });
  await pool(nodeIds, 32, async (id, i) => {
    await agents.setApproval({ nodeId: id, status: "approved", name: `sim-${String(i).padStart(5, "0")}` }, { actor });
    await agents.replaceTags({ nodeId: id, tags: tags(i) }, { actor });
  });
  const last = rpcClient(nc, "", AgentControlService, {
    timeoutMs: 2000,
    subjectBase: `orch.agent.${nodeIds.at(-1)}`,
  });
  for (let i = 0; ; i++) {
    try {
      await last.ping({ payload: "ready" });
      return;
    } catch (err) {
      if (i > 30) throw new Error(`approved agents do not answer: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}
