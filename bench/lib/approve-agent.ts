import { eventually, type SystemHandle } from "@orch/kit/testing";

/**
 * Waits for a freshly spawned agent's link, then approves it under `name`, failing loudly if the
 * approval is refused: a bench measures a terminal, so its setup must not pass on quietly.
 * The wait is no figure of the bench; it is wide because a busy machine starts agents slowly.
 */
export async function approveAgent(sys: SystemHandle, token: string, nodeId: string, name: string): Promise<void> {
  await eventually(
    async () => (await sys.api("GET", `/api/v1/agents/${nodeId}`, { token })).body?.connected === true,
    60_000,
  );
  const r = await sys.api("POST", `/api/v1/agents/${nodeId}`, { token, body: { status: "approved", name } });
  if (r.status !== 200) throw new Error(`approving the bench agent: ${r.status} ${r.text}`);
}
