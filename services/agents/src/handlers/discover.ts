import { createSocket } from "node:dgram";
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { DISCOVERY_TARGET_RULE, parseDiscoveryTarget, type AgentsService } from "@orch/contracts";
import { invalid, unavailable, type Handlers } from "@orch/kit";
import type { AgentsDeps, LinkInfo } from "../deps.js";
import { discoveryPolicy, discoveryRefusal } from "../discovery-policy.js";

type DiscoverHandlers = Pick<Handlers<typeof AgentsService>, "discover">;

export const BROADCAST_ADDRESS = "255.255.255.255";

/** The datagram agents listen for (agent/src/discovery.ts parses the same shape). */
export const discoveryDatagram = (link: string) => Buffer.from(JSON.stringify({ type: "orch.discover", link }));

function sendDatagram(data: Buffer, host: string, port: number, broadcast: boolean): Promise<void> {
  const sock = createSocket(isIP(host) === 6 ? "udp6" : "udp4");
  return new Promise<void>((resolve, reject) => {
    sock.once("error", reject);
    sock.bind(0, () => {
      try {
        if (broadcast) sock.setBroadcast(true);
      } catch (err) {
        reject(err);
        return;
      }
      sock.send(data, port, host, (err) => (err ? reject(err) : resolve()));
    });
  }).finally(() => sock.close());
}

/** Name → addresses; injected so tests need no DNS. */
export type DiscoveryResolver = (host: string) => Promise<string[]>;
const systemResolver: DiscoveryResolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

export function discoverHandlers(
  deps: AgentsDeps,
  link: LinkInfo,
  resolve: DiscoveryResolver = systemResolver,
): DiscoverHandlers {
  const policy = discoveryPolicy(deps.config.agents);
  return {
    async discover(req, ctx) {
      const target = req.target.trim();
      let dest: { host: string; port: number };
      let address = BROADCAST_ADDRESS;
      if (target) {
        // The gateway checks the same rule (@orch/contracts); bus callers are held to it here.
        const t = parseDiscoveryTarget(target);
        if (!t) throw invalid("invalid_target", `target ${DISCOVERY_TARGET_RULE}`, { field: "target" });
        dest = t;
        // Every address a name resolves to must pass (a name that also points elsewhere is refused
        // as a whole), and the datagram goes to the checked address, never to a second lookup.
        const addrs = isIP(t.host) ? [t.host] : await resolve(t.host).catch(() => []);
        if (addrs.length === 0) throw invalid("invalid_target", `${t.host} does not resolve`, { field: "target" });
        for (const a of addrs) {
          const refusal = discoveryRefusal(policy, a, t.port, ctx.actor.role);
          if (refusal) throw refusal;
        }
        address = addrs[0]!;
      } else {
        dest = { host: BROADCAST_ADDRESS, port: policy.port };
      }
      const announced = link.announced();
      const sentTo = `${dest.host.includes(":") ? `[${dest.host}]` : dest.host}:${dest.port}`;
      try {
        await sendDatagram(discoveryDatagram(announced), address, dest.port, !target);
      } catch (err) {
        ctx.log.warn({ err: (err as Error).message, to: sentTo }, "discovery datagram not sent");
        throw unavailable("discovery_failed", "the discovery datagram could not be sent", { field: "target" });
      }
      await deps.events.tx(async (_db, emit) => {
        await emit({
          type: "discovery.sent",
          summary: `discovery ${target ? `sent to ${sentTo}` : "broadcast"} by ${ctx.actor.name}, announcing ${announced}`,
          actor: ctx.actor,
          target: { id: sentTo, name: sentTo, type: "discovery" },
          metadata: { sent_to: sentTo, broadcast: !target, announced, ...(target ? { address } : {}) },
        });
      });
      return { sentTo: [sentTo], announced };
    },
  };
}
