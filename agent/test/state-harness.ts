import { create, type JsonObject } from "@bufbuild/protobuf";
import { AgentStateService, ExecuteRequestSchema, type ResourceResult } from "@orch/contracts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentCallContext, AgentHandlers, AgentRuntime } from "../src/runtime.js";
import { stateFeature } from "../src/state/feature.js";

/**
 * Test scaffolding standing in for the link: records what stateFeature serves and publishes.
 * The providers behind it are the real ones, acting on the real filesystem and processes.
 */
export function stubRuntime(dataDir = "/nonexistent") {
  const served = new Map<string, unknown>();
  const published: { subject: string; data: unknown }[] = [];
  const attributes = new Map<string, string>();
  const silent = { debug() {}, info() {}, warn() {}, error() {} };
  const rt: AgentRuntime = {
    nodeId: "node-test",
    dataDir,
    options: {
      server: undefined,
      discover: false,
      discoveryPort: 0,
      terminalEnabled: false,
      shells: [],
      metricsIntervalSeconds: 60,
      trust: { kind: "insecure" },
    },
    log: silent,
    onLinkUp() {},
    exit() {},
    serve(service, handlers) {
      served.set(service.typeName, handlers);
    },
    publish(subject, data) {
      published.push({ subject, data: JSON.parse(new TextDecoder().decode(data)) });
    },
    subscribe: () => () => {},
    setAttribute(key, value) {
      attributes.set(key, value);
    },
  };
  return { rt, served, published, attributes };
}

export interface Res {
  id: string;
  type: string;
  spec: JsonObject;
  module?: string;
  requires?: string[];
  onchanges?: string[];
  triggeredBy?: string[];
}

/** The served Execute handler, called the way the link calls it (data dir: see stubRuntime). */
export async function stateHarness(dataDir?: string) {
  const { rt, served, published, attributes } = stubRuntime(dataDir);
  await stateFeature(rt);
  const handlers = served.get(AgentStateService.typeName) as AgentHandlers<typeof AgentStateService> | undefined;
  if (!handlers) throw new Error("stateFeature did not serve AgentStateService");
  const execute = async (
    mode: string,
    resources: Res[],
    opts: { mask?: string[]; operationId?: string; timeoutMs?: number } = {},
  ) => {
    const req = create(ExecuteRequestSchema, {
      operationId: opts.operationId ?? "",
      mode,
      mask: opts.mask ?? [],
      resources: resources.map((r) => ({
        id: r.id,
        module: r.module ?? "m",
        type: r.type,
        spec: r.spec,
        requires: r.requires ?? [],
        onchanges: r.onchanges ?? [],
        triggeredBy: r.triggeredBy ?? [],
      })),
    });
    const ctx: AgentCallContext = { deadline: Date.now() + (opts.timeoutMs ?? 60_000) };
    const res = await handlers.execute(req, ctx);
    return (res.results ?? []) as ResourceResult[];
  };
  return { execute, published, handlers, attributes };
}

export const byId = (results: ResourceResult[]) => Object.fromEntries(results.map((r) => [r.id, r]));

/** A scratch directory removed when the test ends. */
export function scratch(t: { teardown(fn: () => void): void }, prefix = "orch-state-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
