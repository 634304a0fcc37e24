/**
 * Test scaffolding: runs agent-side features (the real terminal feature, real PTYs) on a plain NATS
 * connection instead of the gRPC link. It does what the agents service does for a linked agent —
 * serves `orch.agent.<node_id>.<Method>` with no queue group, turns AgentError into the error reply,
 * and refuses bus subjects outside AGENT_PUBLISH_ALLOWED / AGENT_SUBSCRIBE_ALLOWED — and nothing else.
 */
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import { AGENT_PUBLISH_ALLOWED, AGENT_SUBSCRIBE_ALLOWED, AgentTerminalService } from "@orch/contracts";
import { OrchError, rpcClient, serveRpc, type Handlers, type RpcServer } from "@orch/kit";
import { eventually, silentLogger, type NatsHandle } from "@orch/kit/testing";
import { AgentError, type AgentOptions, type AgentRuntime, type Feature } from "../../../agent/src/runtime.js";

export interface BridgedAgent {
  nodeId: string;
  rt: AgentRuntime;
  attributes: Map<string, string>;
  /** Subjects the feature tried to use outside the allow-lists (must stay empty). */
  refused: string[];
  stop(): Promise<void>;
  /** Drops off the bus at once, PTYs left running (a link that died). */
  crash(): Promise<void>;
}

export async function startBridgedAgent(
  nats: NatsHandle,
  opts: { nodeId: string; features: Feature[]; options?: Partial<AgentOptions> },
): Promise<BridgedAgent> {
  const nc = await nats.connect(`agent-${opts.nodeId}`);
  const log = silentLogger();
  const servers: RpcServer[] = [];
  const attributes = new Map<string, string>();
  const refused: string[] = [];
  const options: AgentOptions = {
    server: undefined,
    discover: false,
    discoveryPort: 0,
    terminalEnabled: true,
    shells: ["/bin/bash", "/bin/sh"],
    metricsIntervalSeconds: 15,
    trust: { kind: "system" },
    ...opts.options,
  };
  const rt: AgentRuntime = {
    nodeId: opts.nodeId,
    dataDir: "",
    options,
    log,
    onLinkUp() {},
    exit() {},
    serve<S extends GenService<GenServiceMethods>>(service: S, handlers: Parameters<AgentRuntime["serve"]>[1]) {
      const wrapped: Record<string, (req: unknown, ctx: { deadline: number }) => Promise<unknown>> = {};
      for (const [name, h] of Object.entries(
        handlers as Record<string, (req: unknown, ctx: { deadline: number }) => Promise<unknown>>,
      )) {
        wrapped[name] = async (req, ctx) => {
          try {
            return await h(req, { deadline: ctx.deadline });
          } catch (err) {
            if (err instanceof AgentError) throw new OrchError(err.code, err.reason, err.message);
            throw err;
          }
        };
      }
      servers.push(
        serveRpc({
          nc,
          name: "agent",
          service,
          handlers: wrapped as unknown as Handlers<S>,
          log,
          subjectBase: `orch.agent.${opts.nodeId}`,
          queue: null,
        }),
      );
    },
    publish(subject, data) {
      if (!AGENT_PUBLISH_ALLOWED.some((re) => re.test(subject))) {
        refused.push(`publish ${subject}`);
        return;
      }
      if (!nc.isClosed()) nc.publish(subject, data);
    },
    subscribe(subject, onMessage) {
      if (!AGENT_SUBSCRIBE_ALLOWED.some((re) => re.test(subject))) {
        refused.push(`subscribe ${subject}`);
        return () => {};
      }
      const sub = nc.subscribe(subject, { callback: (err, msg) => void (err ? undefined : onMessage(msg.data)) });
      return () => {
        if (!nc.isClosed()) sub.unsubscribe();
      };
    },
    setAttribute(key, value) {
      attributes.set(key, value);
    },
  };
  for (const f of opts.features) await f(rt);
  await nc.flush();
  return {
    nodeId: opts.nodeId,
    rt,
    attributes,
    refused,
    async crash() {
      await nc.close().catch(() => {});
    },
    async stop() {
      // End the PTYs the test left running (through the agent's own API), so the process can exit.
      const agentApi = rpcClient(nc, "", AgentTerminalService, {
        timeoutMs: 5000,
        subjectBase: `orch.agent.${opts.nodeId}`,
      });
      const running = await agentApi.listTerminals({}).then(
        (r) => r.sessionIds,
        () => [] as string[],
      );
      for (const id of running)
        await agentApi.closeTerminal({ sessionId: id, reason: "test_teardown" }).catch(() => undefined);
      if (running.length)
        await eventually(async () => (await agentApi.listTerminals({})).sessionIds.length === 0, 10_000).catch(
          () => undefined,
        );
      for (const s of servers) await s.stop();
      await nc.close().catch(() => {});
    },
  };
}
