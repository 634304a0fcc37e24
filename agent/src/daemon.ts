import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import { createStepper, type Stepper } from "@orch/kit/stepper";
import { collectAttributes } from "./attributes.js";
import { listenForDiscovery, readSavedServer, saveServer } from "./discovery.js";
import type { Identity } from "./identity.js";
import { openLink, type LinkAttempt, type Send } from "./link/client.js";
import { createDispatcher } from "./link/dispatch.js";
import { initialAgentState, step, type AgentEffect, type AgentEvent, type AgentState } from "./link/machine.js";
import { linkChannelOptions, linkCredentials } from "./link/trust.js";
import { createSampler } from "./metrics.js";
import type { DaemonOptions } from "./options.js";
import { agentMetrics } from "./prometheus.js";
import type { AgentHandlers, AgentLogger, AgentRuntime, Feature } from "./runtime.js";
import { AGENT_VERSION } from "./version.js";

export { REJECTED_RETRY_MS } from "./link/machine.js";

const ATTRIBUTE_RECHECK_MS = 60_000;

export interface Agent extends AgentRuntime {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface AgentDeps {
  options: DaemonOptions;
  identity: Identity;
  log: AgentLogger;
  features: Feature[];
  /** Ends the process once the agent has stopped (runtime.exit); tests inject their own. */
  exitProcess?: (code: number) => void;
  /** The backoff's jitter draws in [0, 1) (Math.random unless a test fixes them). */
  random?: () => number;
}

/**
 * The daemon: owns the link (reconnecting with jittered backoff), the metrics and attribute
 * loops, and the AgentRuntime that features register on. When to connect, wait or stop is decided
 * by the state machine in link/machine.ts; this driver feeds it the results of I/O and performs
 * the effects it returns.
 */
export function createAgent(deps: AgentDeps): Agent {
  return new AgentDriver(deps).agent;
}

class AgentDriver {
  private readonly machine: Stepper<AgentState, AgentEvent>;
  private readonly dispatcher: ReturnType<typeof createDispatcher>;
  /** Given, or saved when an earlier run discovered it. */
  private readonly server: string | undefined;
  private readonly subscriptions = new Map<string, Set<(data: Uint8Array) => void>>();
  private readonly featureAttributes: Record<string, string> = {};
  private readonly linkUpListeners: Array<() => void> = [];
  private readonly sample = createSampler();
  private readonly random: () => number;
  /** Where frames go while the link is up. */
  private send: Send | undefined;
  private attempt: LinkAttempt | undefined;
  private discovery: Promise<{ close(): void }> | undefined;
  private metricsTimer: NodeJS.Timeout | undefined;
  private attrTimer: NodeJS.Timeout | undefined;
  private attrPending = false;
  private sleepTimer: NodeJS.Timeout | undefined;
  private startError: Error | undefined;
  private readonly stopped: Promise<void>;
  private markStopped!: () => void;
  readonly agent: Agent;

  constructor(private readonly deps: AgentDeps) {
    this.dispatcher = createDispatcher(deps.log);
    this.random = deps.random ?? Math.random;
    this.server = deps.options.server ?? readSavedServer(deps.options.dataDir);
    this.machine = createStepper(initialAgentState(deps.options.metricsIntervalSeconds), step, (f) => this.perform(f));
    this.stopped = new Promise((resolve) => {
      this.markStopped = resolve;
    });
    const runtime = this.runtime();
    this.agent = { ...runtime, start: () => this.start(runtime), stop: () => this.stop() };
  }

  private attributes(): Record<string, string> {
    return { ...collectAttributes({ terminalEnabled: this.deps.options.terminalEnabled }), ...this.featureAttributes };
  }

  private get state(): AgentState {
    return this.machine.state;
  }

  private dispatch(event: AgentEvent): void {
    this.machine.dispatch(event);
  }

  /** Collecting reads the system: done only when a link is up to receive them. */
  private checkAttributes = () => {
    if (this.send) this.dispatch({ type: "attributes", attributes: this.attributes() });
  };

  private sendMetrics = () => this.send?.({ frame: { case: "metrics", value: this.sample() } });

  private async start(runtime: AgentRuntime): Promise<void> {
    const { options, log, identity } = this.deps;
    for (const f of this.deps.features) await f(runtime);
    log.info(
      { node_id: identity.nodeId, version: AGENT_VERSION, methods: this.dispatcher.methods() },
      "orch-agent starting",
    );
    this.attrTimer = setInterval(this.checkAttributes, ATTRIBUTE_RECHECK_MS);
    this.dispatch({ type: "start", server: this.server, discover: options.discover });
    if (this.startError) throw this.startError;
    await this.discovery;
  }

  private async stop(): Promise<void> {
    this.dispatch({ type: "stop" });
    return this.stopped;
  }

  private perform(e: AgentEffect): void {
    const { log } = this.deps;
    switch (e.type) {
      case "log":
        log[e.level](e.fields, e.message);
        return;
      case "listen_discovery":
        this.listen();
        return;
      case "save_server":
        saveServer(this.deps.options.dataDir, e.server);
        return;
      case "secure":
        void this.secure(e.server);
        return;
      case "open_link":
        this.open(e);
        return;
      case "link_up":
        this.linkUp(e.send);
        return;
      case "schedule_metrics":
        clearInterval(this.metricsTimer);
        this.metricsTimer = setInterval(this.sendMetrics, e.everyMs);
        return;
      case "send_attributes":
        this.send?.({ frame: { case: "attributes", value: { values: e.attributes } } });
        return;
      case "link_down":
        agentMetrics().linkConnected(false);
        this.attempt = undefined;
        this.send = undefined;
        clearInterval(this.metricsTimer);
        return;
      case "sleep":
        this.sleepTimer = setTimeout(() => this.dispatch({ type: "wake" }), e.ms);
        return;
      case "cancel_sleep":
        clearTimeout(this.sleepTimer);
        return;
      case "halt":
        clearInterval(this.attrTimer);
        clearInterval(this.metricsTimer);
        void this.discovery?.then(
          (d) => d.close(),
          () => undefined,
        );
        return;
      case "close_link":
        this.attempt?.close();
        return;
      case "stopped":
        this.markStopped();
        return;
      case "fail":
        this.startError = new Error(e.message);
        return;
    }
  }

  private listen(): void {
    const { options, log } = this.deps;
    this.discovery = listenForDiscovery({
      port: options.discoveryPort,
      log,
      onServer: (server) => this.dispatch({ type: "discovered", server }),
    });
    // A failure to listen is start()'s error; it is awaited there.
    this.discovery.catch(() => undefined);
  }

  private async secure(server: string): Promise<void> {
    const attributes = this.attributes();
    const result = await linkCredentials(this.deps.options.trust, server);
    this.dispatch({ type: "credentials", result, attributes, jitter: this.random() });
  }

  private open(e: Extract<AgentEffect, { type: "open_link" }>): void {
    const { options, identity, log } = this.deps;
    const attempt = openLink({
      server: e.server,
      credentials: e.credentials,
      channelOptions: linkChannelOptions(e.server),
      identity,
      hello: {
        version: AGENT_VERSION,
        attributes: e.attributes,
        ...(options.joinToken ? { joinToken: options.joinToken } : {}),
      },
      log,
      handlers: {
        onWelcome: (welcome, send) => this.dispatch({ type: "welcome", welcome, send }),
        onRequest: (r, send) => {
          const approved = this.state.phase === "up" && this.state.status === "approved";
          void this.dispatcher.handle(r, { approved }).then((res) => send({ frame: { case: "response", value: res } }));
        },
        onMessage: (m) => this.deliver(m.subject, m.data),
      },
    });
    this.attempt = attempt;
    void attempt.done.then((outcome) => this.dispatch({ type: "link_ended", outcome, jitter: this.random() }));
  }

  private linkUp(send: Send): void {
    this.send = send;
    for (const subject of this.subscriptions.keys()) send({ frame: { case: "subscribe", value: { subject } } });
    this.sendMetrics();
    agentMetrics().linkConnected(true);
    for (const fn of this.linkUpListeners) fn();
  }

  private deliver(subject: string, data: Uint8Array): void {
    for (const fn of this.subscriptions.get(subject) ?? []) {
      try {
        fn(data);
      } catch (err) {
        this.deps.log.error({ err, subject }, "bus message handler failed");
      }
    }
  }

  private runtime(): AgentRuntime {
    const { options, identity, log } = this.deps;
    const { dispatcher, subscriptions } = this;
    return {
      nodeId: identity.nodeId,
      dataDir: options.dataDir,
      options,
      log,
      serve<S extends GenService<GenServiceMethods>>(service: S, handlers: AgentHandlers<S>) {
        dispatcher.serve(service, handlers);
      },
      publish: (subject, data) => {
        if (this.send) this.send({ frame: { case: "publish", value: { subject, data } } });
        else log.debug({ subject }, "publish dropped: link down");
      },
      subscribe: (subject, onMessage) => {
        let set = subscriptions.get(subject);
        if (!set) {
          set = new Set();
          subscriptions.set(subject, set);
          this.send?.({ frame: { case: "subscribe", value: { subject } } });
        }
        set.add(onMessage);
        return () => {
          const s = subscriptions.get(subject);
          if (!s?.delete(onMessage) || s.size) return;
          subscriptions.delete(subject);
          this.send?.({ frame: { case: "unsubscribe", value: { subject } } });
        };
      },
      onLinkUp: (listener) => {
        this.linkUpListeners.push(listener);
      },
      exit: (code) => {
        log.info({ code }, "orch-agent exiting");
        const exitProcess = this.deps.exitProcess ?? ((c: number) => process.exit(c));
        // A stop that hangs must not keep the process (and an upgrade's restart) waiting forever.
        setTimeout(() => exitProcess(code), 5000).unref();
        void this.stop().finally(() => exitProcess(code));
      },
      setAttribute: (key, value) => {
        this.featureAttributes[key] = value;
        if (this.attrPending) return;
        this.attrPending = true;
        setImmediate(() => {
          this.attrPending = false;
          this.checkAttributes();
        });
      },
    };
  }
}
