import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import { collectAttributes } from "./attributes.js";
import { listenForDiscovery, readSavedServer, saveServer } from "./discovery.js";
import type { Identity } from "./identity.js";
import { backoffDelay } from "./link/backoff.js";
import { openLink, type LinkAttempt, type Send } from "./link/client.js";
import { createDispatcher } from "./link/dispatch.js";
import { linkCredentials } from "./link/trust.js";
import { createSampler } from "./metrics.js";
import type { DaemonOptions } from "./options.js";
import { agentMetrics } from "./prometheus.js";
import type { AgentHandlers, AgentLogger, AgentRuntime, Feature } from "./runtime.js";
import { AGENT_VERSION } from "./version.js";

/** A rejected agent must not hammer the server: it asks again this rarely. */
export const REJECTED_RETRY_MS = 5 * 60_000;
const ATTRIBUTE_RECHECK_MS = 60_000;

export interface Agent extends AgentRuntime {
  start(): Promise<void>;
  stop(): Promise<void>;
}

const sameMap = (a: Record<string, string>, b: Record<string, string>) => {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
};

/**
 * The daemon: owns the link (reconnecting with jittered backoff), the metrics and attribute
 * loops, and the AgentRuntime that features register on.
 */
export function createAgent(opts: {
  options: DaemonOptions;
  identity: Identity;
  log: AgentLogger;
  features: Feature[];
  /** Ends the process once the agent has stopped (runtime.exit); tests inject their own. */
  exitProcess?: (code: number) => void;
}): Agent {
  const { options, identity, log } = opts;
  const dispatcher = createDispatcher(log);
  const subscriptions = new Map<string, Set<(data: Uint8Array) => void>>();
  const featureAttributes: Record<string, string> = {};
  const sample = createSampler();

  let server = options.server ?? readSavedServer(options.dataDir);
  let stopped = false;
  let send: Send | undefined;
  let status = "";
  let attempt: LinkAttempt | undefined;
  let lastSentAttributes: Record<string, string> = {};
  let metricsTimer: NodeJS.Timeout | undefined;
  let metricsEveryMs = options.metricsIntervalSeconds * 1000;
  let wake: (() => void) | undefined;
  let loop: Promise<void> | undefined;
  let discovery: { close(): void } | undefined;
  let attrTimer: NodeJS.Timeout | undefined;
  let attrPending = false;
  const linkUpListeners: Array<() => void> = [];
  let stopAgent: () => Promise<void> = async () => undefined;

  const attributes = () => ({
    ...collectAttributes({ terminalEnabled: options.terminalEnabled }),
    ...featureAttributes,
  });

  const sendAttributesIfChanged = () => {
    if (!send) return;
    const now = attributes();
    if (sameMap(now, lastSentAttributes)) return;
    lastSentAttributes = now;
    send({ frame: { case: "attributes", value: { values: now } } });
  };

  const sendMetrics = () => {
    send?.({ frame: { case: "metrics", value: sample() } });
  };

  const scheduleMetrics = (everyMs: number) => {
    clearInterval(metricsTimer);
    metricsEveryMs = everyMs;
    metricsTimer = setInterval(sendMetrics, everyMs);
  };

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(t);
        resolve();
      };
    }).finally(() => (wake = undefined));

  const runtime: AgentRuntime = {
    nodeId: identity.nodeId,
    dataDir: options.dataDir,
    options,
    log,
    serve<S extends GenService<GenServiceMethods>>(service: S, handlers: AgentHandlers<S>) {
      dispatcher.serve(service, handlers);
    },
    publish(subject, data) {
      if (send) send({ frame: { case: "publish", value: { subject, data } } });
      else log.debug({ subject }, "publish dropped: link down");
    },
    subscribe(subject, onMessage) {
      let set = subscriptions.get(subject);
      if (!set) {
        set = new Set();
        subscriptions.set(subject, set);
        send?.({ frame: { case: "subscribe", value: { subject } } });
      }
      set.add(onMessage);
      return () => {
        const s = subscriptions.get(subject);
        if (!s?.delete(onMessage) || s.size) return;
        subscriptions.delete(subject);
        send?.({ frame: { case: "unsubscribe", value: { subject } } });
      };
    },
    onLinkUp(listener) {
      linkUpListeners.push(listener);
    },
    exit(code) {
      log.info({ code }, "orch-agent exiting");
      const exitProcess = opts.exitProcess ?? ((c: number) => process.exit(c));
      // A stop that hangs must not keep the process (and an upgrade's restart) waiting forever.
      setTimeout(() => exitProcess(code), 5000).unref();
      void stopAgent().finally(() => exitProcess(code));
    },
    setAttribute(key, value) {
      featureAttributes[key] = value;
      if (attrPending) return;
      attrPending = true;
      setImmediate(() => {
        attrPending = false;
        sendAttributesIfChanged();
      });
    },
  };

  async function connectLoop() {
    let failures = 0;
    while (!stopped && server) {
      const target = server;
      const hello = {
        version: AGENT_VERSION,
        attributes: attributes(),
        ...(options.joinToken ? { joinToken: options.joinToken } : {}),
      };
      log.info({ server: target, attempt: failures + 1 }, "connecting to the agents service");
      const creds = await linkCredentials(options.trust, target);
      if (stopped) break;
      if (!creds.ok) {
        // Not this server (or not reachable as one): never sign its challenge; ask again later,
        // since a pinned server may be mid-redeploy, but say loudly why nothing connects.
        const delay = backoffDelay(failures++);
        const record = { server: target, reason: creds.reason, detail: creds.detail, retry_in_ms: delay };
        if (creds.reason !== "server_fingerprint_mismatch") log.warn(record, "could not connect; retrying");
        else log.error(record, "refusing to connect: the server is not the one this agent trusts");
        await sleep(delay);
        continue;
      }
      attempt = openLink({
        server: target,
        credentials: creds.credentials,
        identity,
        hello,
        log,
        handlers: {
          onWelcome(w, linkSend, first) {
            if (first) {
              send = linkSend;
              lastSentAttributes = hello.attributes;
              for (const subject of subscriptions.keys())
                linkSend({ frame: { case: "subscribe", value: { subject } } });
              sendMetrics();
              agentMetrics().linkConnected(true);
              for (const fn of linkUpListeners) fn();
            }
            if (w.status !== status || first)
              log.info(
                { status: w.status, name: w.name || undefined, node_id: w.nodeId },
                first ? "link up" : "approval status changed",
              );
            status = w.status;
            const wanted =
              (w.metricsIntervalSeconds > 0 ? w.metricsIntervalSeconds : options.metricsIntervalSeconds) * 1000;
            if (first || wanted !== metricsEveryMs) scheduleMetrics(wanted);
          },
          onRequest(r, linkSend) {
            void dispatcher
              .handle(r, { approved: status === "approved" })
              .then((res) => linkSend({ frame: { case: "response", value: res } }));
          },
          onMessage(m) {
            for (const fn of subscriptions.get(m.subject) ?? []) {
              try {
                fn(m.data);
              } catch (err) {
                log.error({ err, subject: m.subject }, "bus message handler failed");
              }
            }
          },
        },
      });
      const outcome = await attempt.done;
      agentMetrics().linkConnected(false);
      attempt = undefined;
      send = undefined;
      status = "";
      clearInterval(metricsTimer);
      if (stopped) break;
      if (outcome.wasUp) failures = 0;
      if (outcome.kind === "refused" && outcome.reason === "agent_rejected") {
        log.error(
          { server: target, retry_in_s: REJECTED_RETRY_MS / 1000 },
          "this agent was REJECTED by an operator; it will not be able to connect unless an operator approves it",
        );
        await sleep(REJECTED_RETRY_MS);
        continue;
      }
      const delay = backoffDelay(failures++);
      const detail = outcome.kind === "refused" ? `refused: ${outcome.reason}` : outcome.detail;
      log.warn(
        { server: target, detail, retry_in_ms: delay },
        outcome.wasUp ? "link lost; reconnecting" : "could not connect; retrying",
      );
      await sleep(delay);
    }
  }

  const agent: Agent = {
    ...runtime,
    async start() {
      for (const f of opts.features) await f(runtime);
      log.info(
        { node_id: identity.nodeId, version: AGENT_VERSION, methods: dispatcher.methods() },
        "orch-agent starting",
      );
      attrTimer = setInterval(sendAttributesIfChanged, ATTRIBUTE_RECHECK_MS);
      if (server) {
        loop = connectLoop();
        return;
      }
      if (!options.discover) throw new Error("no server: pass --server host:port or --discover");
      discovery = await listenForDiscovery({
        port: options.discoveryPort,
        log,
        onServer(found) {
          discovery = undefined;
          if (stopped) return;
          server = found;
          saveServer(options.dataDir, found);
          loop = connectLoop();
        },
      });
    },
    async stop() {
      stopped = true;
      clearInterval(attrTimer);
      clearInterval(metricsTimer);
      discovery?.close();
      attempt?.close();
      wake?.();
      await loop;
      log.info("orch-agent stopped");
    },
  };
  stopAgent = () => agent.stop();
  return agent;
}
