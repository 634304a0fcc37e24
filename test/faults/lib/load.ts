// A steady mixed load against the gateway while a fault happens: audited writes on two services,
// reads, a fleet run across the agents every few seconds and a live terminal echoing. Every request
// is recorded with its outcome so the invariants can judge what the clients saw.
import { attach, type Attached } from "../../../services/terminal/test/harness.js";
import type { AckedWrite, FaultStack, LoadKind, LoadReport, LoadRequest, MixedLoad } from "./types.js";

export interface MixedLoadOptions {
  /** Pause between two writes of the write loop (ms, default 200). */
  writeEveryMs?: number;
  /**
   * Write loops running side by side (default 1). More lanes give a fault more writes to judge: a
   * lane stuck on one request's timeout sends nothing else for those seconds.
   */
  writeLanes?: number;
  /** Pause between two reads (ms, default 150). */
  readEveryMs?: number;
  /** Pause between two fleet runs (ms, default 3000). */
  applyEveryMs?: number;
  /** Pause between two terminal echoes (ms, default 200); 0 turns the terminal off. */
  echoEveryMs?: number;
  /** Client timeout of every request (ms, default 15 s: above the gateway's RPC timeout). */
  timeoutMs?: number;
}

export interface MixedLoadHandle extends MixedLoad {
  /** Timestamps of the marks, in order. */
  marks: Array<{ label: "fault" | "healed"; at: number }>;
  /**
   * Resolves once a write sent after the last mark succeeded (or after `timeoutMs`): a scenario
   * waits for it before the next fault or the end, so each fault's recovery is really measured.
   */
  recovered(timeoutMs?: number): Promise<void>;
}

type Answer = { status: number; body: any; headers?: Headers };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function startMixedLoad(stack: FaultStack, opts: MixedLoadOptions = {}): MixedLoadHandle {
  const o = {
    writeEveryMs: 200,
    writeLanes: 1,
    readEveryMs: 150,
    applyEveryMs: 3000,
    echoEveryMs: 200,
    timeoutMs: 15_000,
    ...opts,
  };
  const requests: LoadRequest[] = [];
  const acked: AckedWrite[] = [];
  const operations: string[] = [];
  const terminal = { echoes: 0, failures: 0, reopened: 0 };
  const marks: MixedLoadHandle["marks"] = [];
  let running = true;
  const tag = Date.now().toString(36);

  async function call(kind: LoadKind, method: string, path: string, body?: unknown): Promise<Answer> {
    const at = Date.now();
    const rec: LoadRequest = { kind, method, path, status: 0, at, ms: 0 };
    requests.push(rec);
    try {
      const res = await fetch(`${stack.system.url}/api/v1${path}`, {
        method,
        headers: {
          authorization: `Bearer ${stack.token}`,
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(o.timeoutMs),
      });
      const text = await res.text();
      let json: any;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = text;
      }
      rec.status = res.status;
      if (res.status >= 400 && typeof json?.code === "string") rec.code = json.code;
      const ra = res.headers.get("retry-after");
      if (ra !== null) rec.retryAfter = ra;
      return { status: res.status, body: json, headers: res.headers };
    } catch (err) {
      rec.code = (err as Error).name === "TimeoutError" ? "client_timeout" : "connection_failed";
      return { status: 0, body: undefined };
    } finally {
      rec.ms = Date.now() - at;
    }
  }

  async function writes(lane: number) {
    for (let n = 0; running; n++) {
      if (n % 2 === 0) {
        const name = `fault_${tag}_l${lane}_s${n}`;
        const r = await call("write", "POST", "/secrets", { name, value: `v-${n}` });
        if (r.status === 201)
          acked.push({
            kind: "secret.created",
            checkPath: `/api/v1/secrets/${name}`,
            auditType: "secret.created",
            resourceId: name,
          });
      } else {
        const name = `fault-${tag}-l${lane}-m${n}`;
        const content = `name: ${name}\nresources:\n  - { id: ok, type: exec, command: 'true' }\n`;
        const r = await call("write", "POST", "/modules", { name, content });
        if (r.status === 201)
          acked.push({
            kind: "module.uploaded",
            checkPath: `/api/v1/modules/${name}`,
            auditType: "module.uploaded",
            resourceId: name,
          });
      }
      await sleep(o.writeEveryMs);
    }
  }

  async function reads() {
    const paths = ["/agents?limit=20", "/secrets?limit=20", "/runs?limit=5", "/modules", "/notifications?limit=5"];
    for (let n = 0; running; n++) {
      const agent = stack.agents[n % stack.agents.length];
      if (n % 3 === 0 && agent) await call("read", "GET", `/agents/${agent.nodeId}/metrics/latest`);
      else if (n % 7 === 1) await call("audit", "GET", "/audit?limit=10");
      else await call("read", "GET", paths[n % paths.length]!);
      await sleep(o.readEveryMs);
    }
  }

  async function applies() {
    while (running) {
      const r = await call("apply", "POST", "/runs", { selector: "fault=on", command: ["true"], timeout_s: 30 });
      if ((r.status === 202 || r.status === 200) && typeof r.body?.id === "string") {
        operations.push(r.body.id);
        acked.push({
          kind: "run.started",
          checkPath: `/api/v1/runs/${r.body.id}`,
          auditType: "run.started",
          resourceId: r.body.id,
        });
      }
      const until = Date.now() + o.applyEveryMs;
      while (running && Date.now() < until) await sleep(100);
    }
  }

  let session: Attached | undefined;
  async function openTerminal(node: string): Promise<Attached | undefined> {
    const r = await call("terminal", "POST", `/terminal/${node}`);
    if (r.status !== 201) return undefined;
    try {
      const a = await Promise.race([
        attach(r.body.ws_url as string, { token: stack.token }),
        sleep(o.timeoutMs).then(() => ({ ok: false as const, status: 0, body: "attach timed out" })),
      ]);
      return a.ok ? a.a : undefined;
    } catch {
      return undefined;
    }
  }

  async function terminalLoop() {
    const node = stack.agents[0]?.nodeId;
    if (!node || o.echoEveryMs <= 0) return;
    let opened = 0;
    let gone = true;
    for (let n = 0; running; n++) {
      if (gone) {
        session = await openTerminal(node);
        if (!session) {
          await sleep(500);
          continue;
        }
        if (opened++ > 0) terminal.reopened++;
        gone = false;
        session.closed.then(() => (gone = true));
      }
      const word = `fk${n}x`;
      const start = session!.text().length;
      // The shell echoes the line and prints the word once more: both must arrive.
      session!.send(`echo ${word}\r`);
      const until = Date.now() + 3000;
      let seen = false;
      while (!gone && Date.now() < until) {
        const out = session!.text().slice(start);
        if (out.split(word).length > 2) {
          seen = true;
          break;
        }
        await sleep(20);
      }
      if (seen) terminal.echoes++;
      else terminal.failures++;
      await sleep(o.echoEveryMs);
    }
  }

  const writeLoops = Array.from({ length: o.writeLanes }, (_, lane) => writes(lane));
  const loops = [...writeLoops, reads(), applies(), terminalLoop()];
  return {
    marks,
    mark(label) {
      marks.push({ label, at: Date.now() });
    },
    async recovered(timeoutMs = 30_000) {
      const since = marks.at(-1)?.at ?? 0;
      const until = Date.now() + timeoutMs;
      const ok = () => requests.some((r) => r.kind === "write" && r.at >= since && r.status >= 200 && r.status < 300);
      while (!ok() && Date.now() < until) await sleep(100);
    },
    async stop(): Promise<LoadReport> {
      running = false;
      await Promise.all(loops);
      if (session) {
        session.send("exit\r");
        await Promise.race([session.closed, sleep(2000)]);
        session.ws.terminate();
      }
      return { requests, acked, operations, terminal, marks };
    },
  };
}
