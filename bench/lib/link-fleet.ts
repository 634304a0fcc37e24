/**
 * The parent side of a link fleet (bench/lib/sim-link.ts run through sim-command-agent.ts or
 * sim-state-agent.ts): fork it against the agents service's link port, then wait for its links.
 */
import { children } from "./children.js";
import { forkFleet, type Fleet } from "./fork-fleet.js";
import type { LinkFleetCommand, LinkFleetReport } from "./sim-link.js";

export type LinkFleet<Stats> = Fleet<LinkFleetReport<Stats>, LinkFleetCommand>;

export function forkLinkFleet<Stats>(
  script: string,
  linkPort: number,
  count: number,
  execMs: number,
): LinkFleet<Stats> {
  const fleet = forkFleet<LinkFleetReport<Stats>, LinkFleetCommand>(script, [
    "--target",
    `127.0.0.1:${linkPort}`,
    "--count",
    String(count),
    "--exec-ms",
    String(execMs),
  ]);
  children.add(fleet.child);
  return fleet;
}

/** Waits for every link's Welcome (any refusal fails the bench); returns the fleet's node ids. */
export async function linksUp(fleet: LinkFleet<unknown>, count: number): Promise<string[]> {
  const keys = await fleet.next("keys", 120_000);
  const welcomed = await fleet.next("welcomed", 120_000 + count * 50);
  if (welcomed.failed) throw new Error(`${welcomed.failed} links failed: ${welcomed.firstError}`);
  console.error(`  ${welcomed.count} links up in ${(welcomed.ms / 1000).toFixed(2)} s`);
  return keys.nodeIds;
}
