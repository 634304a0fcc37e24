import { accessSync, constants } from "node:fs";
import { basename } from "node:path";
import { AgentTerminalService, TERMINAL_DEFAULT_COLS, TERMINAL_DEFAULT_ROWS, clampTerminalDim } from "@orch/contracts";
import { AgentError, type AgentRuntime, type Feature } from "../runtime.js";
import { countBuffersInHeapLimit } from "@orch/kit/bulk-gc";
import { startSession, type PtySession, type SessionTuning } from "./session.js";

const SESSION_ID_RE = /^[0-9A-Za-z]{1,64}$/;
const MAX_SESSIONS = 32;
const LOGIN_SHELLS = new Set(["bash", "zsh", "sh", "dash", "ksh", "fish"]);

/** Environment for the shell: the agent's own, minus its configuration (which may hold credentials). */
function shellEnv(sessionId: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || k.startsWith("ORCH_") || k.startsWith("NATS_")) continue;
    env[k] = v;
  }
  env.TERM = "xterm-256color";
  env.ORCH_TERMINAL_SESSION = sessionId;
  return env;
}

const clampMs = (v: number, def: number, min: number) => (Number.isFinite(v) && v > 0 ? Math.max(v, min) : def);

/**
 * Remote terminals: AgentTerminalService spawns PTYs for the terminal service. Refused when the
 * agent runs with --no-terminal; shells are limited to the agent's allow-list.
 */
export function createTerminalFeature(tuning?: SessionTuning): Feature {
  return (rt: AgentRuntime) => {
    if (rt.options.terminalEnabled) countBuffersInHeapLimit();
    const sessions = new Map<string, PtySession>();
    rt.setAttribute("terminal_enabled", String(rt.options.terminalEnabled));
    rt.setAttribute("terminal_shells", rt.options.shells.join(","));

    rt.serve(AgentTerminalService, {
      async openTerminal(req) {
        if (!rt.options.terminalEnabled)
          throw new AgentError(
            "FAILED_PRECONDITION",
            "terminal_disabled",
            "remote terminals are disabled on this agent (--no-terminal)",
          );
        if (!SESSION_ID_RE.test(req.sessionId))
          throw new AgentError("INVALID_ARGUMENT", "invalid_session_id", "session_id must be 1-64 letters and digits");
        if (sessions.has(req.sessionId))
          throw new AgentError("ALREADY_EXISTS", "session_exists", "this session already has a PTY");
        if (sessions.size >= MAX_SESSIONS)
          throw new AgentError(
            "RESOURCE_EXHAUSTED",
            "too_many_sessions",
            `at most ${MAX_SESSIONS} terminal sessions per agent`,
          );
        const allowed = rt.options.shells;
        const shell = req.shell || allowed[0];
        if (!shell) throw new AgentError("FAILED_PRECONDITION", "no_shell_configured", "this agent allows no shell");
        if (!allowed.includes(shell))
          throw new AgentError(
            "INVALID_ARGUMENT",
            "shell_not_allowed",
            `shell ${shell} is not in this agent's allow-list`,
          );
        try {
          accessSync(shell, constants.X_OK);
        } catch {
          throw new AgentError(
            "FAILED_PRECONDITION",
            "shell_not_found",
            `shell ${shell} is not an executable on this agent`,
          );
        }
        const cols = req.cols > 0 ? clampTerminalDim(req.cols) : TERMINAL_DEFAULT_COLS;
        const rows = req.rows > 0 ? clampTerminalDim(req.rows) : TERMINAL_DEFAULT_ROWS;
        const session = startSession(
          {
            sessionId: req.sessionId,
            shell,
            args: LOGIN_SHELLS.has(basename(shell)) ? ["-l"] : [],
            cols,
            rows,
            cwd: process.env.HOME || "/",
            env: shellEnv(req.sessionId),
            heartbeatMs: clampMs(req.heartbeatIntervalMs, 5000, 100),
            orphanTimeoutMs:
              Number.isFinite(req.orphanTimeoutMs) && req.orphanTimeoutMs > 0 ? Math.max(req.orphanTimeoutMs, 1000) : 0,
            attachTimeoutMs: clampMs(req.attachTimeoutMs, 30_000, 100),
            detachGraceMs: Number.isFinite(req.detachGraceMs) && req.detachGraceMs > 0 ? req.detachGraceMs : 0,
          },
          { publish: (s, d) => rt.publish(s, d), subscribe: (s, f) => rt.subscribe(s, f) },
          rt.log,
          () => sessions.delete(req.sessionId),
          tuning,
        );
        sessions.set(req.sessionId, session);
        rt.log.info({ session: req.sessionId, shell, cols, rows, pid: session.pid }, "terminal session opened");
        return { pid: session.pid, shell };
      },

      async closeTerminal(req) {
        const s = sessions.get(req.sessionId);
        if (!s) return { closed: false };
        s.close(req.reason || "closed");
        return { closed: true };
      },

      async listTerminals() {
        return { sessionIds: [...sessions.keys()] };
      },
    });
  };
}

export const terminalFeature: Feature = createTerminalFeature();
