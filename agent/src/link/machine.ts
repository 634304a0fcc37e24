import type { Welcome } from "@orch/contracts";
import { backoffDelay, LINK_BACKOFF } from "./backoff.js";
import type { LinkOutcome, Send } from "./client.js";
import type { LinkCredentials } from "./trust.js";

/**
 * The agent's side of the link as a pure transition function: `step(state, event)` returns the
 * next state and the effects the driver (daemon.ts) must perform, in order. Nothing here does I/O;
 * results of I/O (credentials, a Welcome, the end of a link, a timer) come back as events.
 *
 *   idle → (discovering →) securing → linking → up → waiting → securing → …
 *
 * `securing` asks for the link's credentials, `linking` has a connection open without a Welcome
 * yet, `waiting` is the backoff between attempts. A stop goes to `stopping` while credentials or a
 * link are still in flight (their result is awaited, not abandoned) and to `stopped` otherwise.
 */

/** A rejected agent must not hammer the server: it asks again this rarely. */
export const REJECTED_RETRY_MS = 5 * 60_000;

/** Kept across connections: the interval the metrics timer runs at. */
interface Base {
  /** Used when the server does not set an interval. */
  defaultMetricsMs: number;
  metricsEveryMs: number;
}

/** A server is known: failures counts attempts since the link was last up (the backoff's exponent). */
interface Dialling extends Base {
  server: string;
  failures: number;
}

export type AgentState =
  | (Base & { phase: "idle" | "discovering" | "stopping" | "stopped" })
  | (Dialling & { phase: "securing" | "waiting" })
  /** `helloAttributes` were sent in the Hello: what the server has once the link is up. */
  | (Dialling & { phase: "linking"; helloAttributes: Record<string, string> })
  | (Dialling & {
      phase: "up";
      /** The approval status of the last Welcome. */
      status: string;
      /** The attributes the server last received. */
      sentAttributes: Record<string, string>;
    });

/** `jitter` is a draw in [0, 1) for the backoff, made by the driver so that the step stays pure. */
export type AgentEvent =
  | { type: "start"; server: string | undefined; discover: boolean }
  | { type: "discovered"; server: string }
  /** `attributes` were collected before the credentials were asked for; they go into the Hello. */
  | { type: "credentials"; result: LinkCredentials; attributes: Record<string, string>; jitter: number }
  | { type: "welcome"; welcome: Welcome; send: Send }
  | { type: "link_ended"; outcome: LinkOutcome; jitter: number }
  /** The backoff between attempts is over. */
  | { type: "wake" }
  /** The current attributes (a feature's changed, or the periodic recheck). */
  | { type: "attributes"; attributes: Record<string, string> }
  | { type: "stop" };

export type LogLevel = "debug" | "info" | "warn" | "error";

export type AgentEffect =
  | { type: "log"; level: LogLevel; fields: Record<string, unknown>; message: string }
  | { type: "listen_discovery" }
  | { type: "save_server"; server: string }
  /** Collect the attributes, ask for credentials to `server`, report `credentials`. */
  | { type: "secure"; server: string }
  /** Open the link (Hello with these attributes); report each `welcome`, then `link_ended`. */
  | {
      type: "open_link";
      server: string;
      credentials: Extract<LinkCredentials, { ok: true }>["credentials"];
      attributes: Record<string, string>;
    }
  /** The first Welcome: frames go out through `send` from now on; bus subscriptions are renewed. */
  | { type: "link_up"; send: Send }
  | { type: "schedule_metrics"; everyMs: number }
  | { type: "send_attributes"; attributes: Record<string, string> }
  /** The link is gone: nothing goes out, the metrics timer stops. */
  | { type: "link_down" }
  | { type: "sleep"; ms: number }
  | { type: "cancel_sleep" }
  /** Stop the periodic timers and stop listening for discovery. */
  | { type: "halt" }
  /** Half-close the open link; its end still comes back as `link_ended`. */
  | { type: "close_link" }
  /** Everything has ended: `stop()` may return. */
  | { type: "stopped" }
  /** `start` without a server to dial or to discover. */
  | { type: "fail"; message: string };

export interface Transition {
  state: AgentState;
  effects: AgentEffect[];
}

export function initialAgentState(metricsIntervalSeconds: number): AgentState {
  const ms = metricsIntervalSeconds * 1000;
  return { phase: "idle", defaultMetricsMs: ms, metricsEveryMs: ms };
}

const go = (state: AgentState, ...effects: AgentEffect[]): Transition => ({ state, effects });
const log = (level: LogLevel, message: string, fields: Record<string, unknown> = {}): AgentEffect => ({
  type: "log",
  level,
  fields,
  message,
});
const baseOf = (s: Base): Base => ({ defaultMetricsMs: s.defaultMetricsMs, metricsEveryMs: s.metricsEveryMs });

export const sameAttributes = (a: Record<string, string>, b: Record<string, string>) => {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
};

/** The one place an attempt is made; every attempt is logged. */
function secure(s: Base, server: string, failures: number): Transition {
  return go(
    { ...baseOf(s), phase: "securing", server, failures },
    log("info", "connecting to the agents service", { server, attempt: failures + 1 }),
    { type: "secure", server },
  );
}

/** Waits `ms` before the next attempt. */
const retry = (s: Dialling, failures: number, ms: number, ...effects: AgentEffect[]): Transition =>
  go({ ...baseOf(s), phase: "waiting", server: s.server, failures }, ...effects, { type: "sleep", ms });

const jittered = (failures: number, jitter: number) =>
  backoffDelay(failures, { ...LINK_BACKOFF, random: () => jitter });

function onStart(s: AgentState, server: string | undefined, discover: boolean): Transition {
  if (s.phase !== "idle") return go(s);
  if (server) return secure(s, server, 0);
  if (!discover) return go(s, { type: "fail", message: "no server: pass --server host:port or --discover" });
  return go({ ...baseOf(s), phase: "discovering" }, { type: "listen_discovery" });
}

function onDiscovered(s: AgentState, server: string): Transition {
  if (s.phase !== "discovering") return go(s);
  const t = secure(s, server, 0);
  return { state: t.state, effects: [{ type: "save_server", server }, ...t.effects] };
}

function onCredentials(s: AgentState, e: Extract<AgentEvent, { type: "credentials" }>): Transition {
  if (s.phase === "stopping") return stopped(s);
  if (s.phase !== "securing") return go(s);
  const { result } = e;
  if (result.ok)
    return go(
      { ...baseOf(s), phase: "linking", server: s.server, failures: s.failures, helloAttributes: e.attributes },
      { type: "open_link", server: s.server, credentials: result.credentials, attributes: e.attributes },
    );
  // Not this server (or not reachable as one): never sign its challenge; ask again later, since a
  // pinned server may be mid-redeploy, but say loudly why nothing connects.
  const delay = jittered(s.failures, e.jitter);
  const record = { server: s.server, reason: result.reason, detail: result.detail, retry_in_ms: delay };
  const said =
    result.reason !== "server_fingerprint_mismatch"
      ? log("warn", "could not connect; retrying", record)
      : log("error", "refusing to connect: the server is not the one this agent trusts", record);
  return retry(s, s.failures + 1, delay, said);
}

function onWelcome(s: AgentState, w: Welcome, send: Send): Transition {
  if (s.phase !== "linking" && s.phase !== "up") return go(s);
  const first = s.phase === "linking";
  const effects: AgentEffect[] = first ? [{ type: "link_up", send }] : [];
  if (first || w.status !== s.status)
    effects.push(
      log("info", first ? "link up" : "approval status changed", {
        status: w.status,
        name: w.name || undefined,
        node_id: w.nodeId,
      }),
    );
  const wanted = w.metricsIntervalSeconds > 0 ? w.metricsIntervalSeconds * 1000 : s.defaultMetricsMs;
  if (first || wanted !== s.metricsEveryMs) effects.push({ type: "schedule_metrics", everyMs: wanted });
  const sentAttributes = s.phase === "linking" ? s.helloAttributes : s.sentAttributes;
  const next: AgentState = {
    ...baseOf(s),
    metricsEveryMs: wanted,
    phase: "up",
    server: s.server,
    failures: s.failures,
    status: w.status,
    sentAttributes,
  };
  return go(next, ...effects);
}

function onLinkEnded(s: AgentState, outcome: LinkOutcome, jitter: number): Transition {
  if (s.phase === "stopping") {
    const t = stopped(s);
    return { state: t.state, effects: [{ type: "link_down" }, ...t.effects] };
  }
  if (s.phase !== "linking" && s.phase !== "up") return go(s);
  const failures = outcome.wasUp ? 0 : s.failures;
  if (outcome.kind === "refused" && outcome.reason === "agent_rejected")
    return retry(
      s,
      failures,
      REJECTED_RETRY_MS,
      { type: "link_down" },
      log(
        "error",
        "this agent was REJECTED by an operator; it will not be able to connect unless an operator approves it",
        { server: s.server, retry_in_s: REJECTED_RETRY_MS / 1000 },
      ),
    );
  const delay = jittered(failures, jitter);
  const detail = outcome.kind === "refused" ? `refused: ${outcome.reason}` : outcome.detail;
  return retry(
    s,
    failures + 1,
    delay,
    { type: "link_down" },
    log("warn", outcome.wasUp ? "link lost; reconnecting" : "could not connect; retrying", {
      server: s.server,
      detail,
      retry_in_ms: delay,
    }),
  );
}

function onAttributes(s: AgentState, attributes: Record<string, string>): Transition {
  // Only a link that is up has attributes to bring up to date; a new one sends them in its Hello.
  if (s.phase !== "up" || sameAttributes(attributes, s.sentAttributes)) return go(s);
  return go({ ...s, sentAttributes: attributes }, { type: "send_attributes", attributes });
}

const stopped = (s: Base): Transition =>
  go({ ...baseOf(s), phase: "stopped" }, log("info", "orch-agent stopped"), { type: "stopped" });

function onStop(s: AgentState): Transition {
  const halt: AgentEffect = { type: "halt" };
  switch (s.phase) {
    case "stopping":
    case "stopped":
      return go(s);
    // In flight: stopped once its result comes back.
    case "securing":
      return go({ ...baseOf(s), phase: "stopping" }, halt);
    case "linking":
    case "up":
      return go({ ...baseOf(s), phase: "stopping" }, halt, { type: "close_link" });
    case "waiting": {
      const t = stopped(s);
      return { state: t.state, effects: [halt, { type: "cancel_sleep" }, ...t.effects] };
    }
    default: {
      const t = stopped(s);
      return { state: t.state, effects: [halt, ...t.effects] };
    }
  }
}

export function step(s: AgentState, e: AgentEvent): Transition {
  switch (e.type) {
    case "start":
      return onStart(s, e.server, e.discover);
    case "discovered":
      return onDiscovered(s, e.server);
    case "credentials":
      return onCredentials(s, e);
    case "welcome":
      return onWelcome(s, e.welcome, e.send);
    case "link_ended":
      return onLinkEnded(s, e.outcome, e.jitter);
    case "wake":
      return s.phase === "waiting" ? secure(s, s.server, s.failures) : go(s);
    case "attributes":
      return onAttributes(s, e.attributes);
    case "stop":
      return onStop(s);
  }
}
