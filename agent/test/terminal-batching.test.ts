import t from "tap";
import { randomBytes } from "node:crypto";
import { AgentTerminalService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import { eventually, startNats } from "@orch/kit/testing";
import { createTerminalFeature } from "../src/terminal/feature.js";
import { startBridgedAgent } from "../../services/terminal/test/agent-bridge.js";

// Output batching on the agent: a batching window far longer than any test waits for proves that
// interactive output does not wait for it, and that sustained output is cut at flushBytes.
const nats = await startNats({ owner: t });
const WINDOW_MS = 60_000;
const feature = createTerminalFeature({
  flushBytes: 64 * 1024,
  flushDelayMs: WINDOW_MS,
  holdLimitBytes: 1024 * 1024,
  killGraceMs: 300,
});
const agent = await startBridgedAgent(nats, {
  nodeId: "e".repeat(32),
  features: [feature],
  options: { shells: ["/bin/sh"] },
});
const nc = await nats.connect("observer");
t.teardown(async () => {
  await agent.stop();
});
const client = rpcClient(nc, "", AgentTerminalService, { timeoutMs: 5000, subjectBase: `orch.agent.${agent.nodeId}` });
const timers = { heartbeatIntervalMs: 100, orphanTimeoutMs: 0, attachTimeoutMs: 30_000, detachGraceMs: 0 };

/** A session; with `attached: false` the caller attaches (output is held until then). */
async function session({ attached = true } = {}) {
  const id = randomBytes(13).toString("hex").toUpperCase();
  const w = { out: "", messages: [] as number[], exited: false };
  nc.subscribe(`orch.term.${id}.out`, {
    callback: (_e, m) => {
      w.out += Buffer.from(m.data).toString("latin1");
      w.messages.push(m.data.length);
    },
  });
  nc.subscribe(`orch.term.${id}.ctl`, {
    callback: (_e, m) => void (JSON.parse(Buffer.from(m.data).toString()).type === "exit" && (w.exited = true)),
  });
  await nc.flush();
  await client.openTerminal({ sessionId: id, shell: "/bin/sh", cols: 80, rows: 24, ...timers });
  const send = (kind: "in" | "ctl", s: string) => nc.publish(`orch.term.${id}.${kind}`, Buffer.from(s));
  const attach = () => send("ctl", '{"type":"attach"}');
  if (attached) attach();
  return { w, input: (s: string) => send("in", s), attach };
}

t.test("a keystroke's echo after a pause is published at once, not after the batching window", async (t) => {
  // Set up before attaching: the echo of this line, the prompt and READY come out back to back,
  // which the batcher rightly takes for a program's output (it waits for the window); held until
  // the attach, they are published together by it.
  const { w, input, attach } = await session({ attached: false });
  input("stty raw -echo; echo RE''ADY; exec cat\n");
  await new Promise((r) => setTimeout(r, 200)); // the shell runs the line meanwhile (not an assertion)
  attach();
  await eventually(() => w.out.includes("READY"), 10_000);
  for (const ch of ["a", "b", "c"]) {
    await new Promise((r) => setTimeout(r, 50)); // a typist's pause; not a timing assertion
    input(ch);
    await eventually(() => w.out.endsWith(ch), 10_000);
  }
  t.match(w.out, /abc$/, "each echo arrived long before the 60 s window");
});

t.test("sustained output is published in messages of up to flushBytes, every byte before the exit", async (t) => {
  const { w, input } = await session();
  input("stty -echo; head -c 300000 /dev/zero | tr '\\0' x; exit 0\n");
  await eventually(() => w.exited, 15_000);
  const longestRun = Math.max(...(w.out.match(/x+/g) ?? [""]).map((r) => r.length));
  t.equal(longestRun, 300_000, "all bytes arrived");
  t.ok(Math.max(...w.messages) <= 64 * 1024, "no message is larger than flushBytes");
  // Four full messages and the tail at the exit, beside a few small ones before the output starts
  // (PTY reads are a few KiB each: unbatched this would be about a hundred).
  t.ok(w.messages.length <= 10, `batched into ${w.messages.length} messages`);
});

t.test("large output arrives complete and in order, byte for byte, across many batched messages", async (t) => {
  const { w, input } = await session();
  const count = 150_000; // about 1 MB: far more than flushBytes, so many messages
  input(`stty -echo; echo BEG''IN; seq 1 ${count}; echo EN''D; exit 0\n`);
  await eventually(() => w.exited, 30_000);
  const start = w.out.indexOf("BEGIN\r\n");
  const end = w.out.indexOf("END\r\n");
  t.ok(start >= 0 && end > start, "both markers arrived");
  const got = w.out.slice(start + "BEGIN\r\n".length, end);
  const want = Array.from({ length: count }, (_, i) => `${i + 1}\r\n`).join("");
  t.equal(got.length, want.length, "every byte arrived");
  t.ok(got === want, "in order, none duplicated or reordered");
  t.ok(w.messages.length > 10, `spread over ${w.messages.length} messages`);
});
