import t from "tap";
import {
  countsLine,
  escapeBytes,
  escapeOutput,
  LinePrefixer,
  prefix,
  runCommandText,
  runDuration,
  runExitCode,
  SUMMARY_COLUMNS,
  summaryRows,
  type RunAgent,
} from "../src/format/runs.js";
import { formatTable } from "../src/output.js";
import { runCounts } from "./helpers/run-counts.js";

const b = (x: number[] | string) => (typeof x === "string" ? Buffer.from(x, "utf8") : Buffer.from(x));

t.test("unit: remote bytes are shown, never obeyed: control bytes and invalid UTF-8 escaped", async (t) => {
  t.equal(escapeBytes(b("plain héllo\tok\n")), "plain héllo\tok\n");
  t.equal(escapeBytes(b("\x1b[31mred\x1b[0m")), "\\x1b[31mred\\x1b[0m");
  t.equal(escapeBytes(b([0xff, 0x41, 0xc3])), "\\xffA\\xc3");
  t.equal(escapeBytes(b("a\rb\x07\x7f")), "a\\x0db\\x07\\x7f");
  // C1 controls (U+009B is a one-character CSI on some terminals) and overlong forms.
  t.equal(escapeBytes(b("\u009b31m")), "\\u{9b}31m");
  t.equal(escapeBytes(b([0xc0, 0xaf])), "\\xc0\\xaf");
  // Surrogates encoded in UTF-8 are not valid UTF-8.
  t.equal(escapeBytes(b([0xed, 0xa0, 0x80])), "\\xed\\xa0\\x80");
  t.equal(escapeBytes(b("emoji 😀")), "emoji 😀");
  t.equal(escapeOutput("/w==", "base64"), "\\xff");
  t.equal(escapeOutput("\u001b]0;title\u0007", "utf8"), "\\x1b]0;title\\x07");
});

t.test("unit: lines are prefixed by agent, partial lines wait for the rest", async (t) => {
  const p = new LinePrefixer(false);
  p.width = 5;
  t.same(p.push("web-1", "stdout", "one\ntw", "utf8"), ["web-1 | one"]);
  t.same(p.push("a", "stdout", "x\n", "utf8"), ["a     | x"]);
  t.same(p.push("web-1", "stderr", "err\n", "utf8"), ["web-1 | err"], "streams are kept apart");
  t.same(p.push("web-1", "stdout", "o\nthree", "utf8"), ["web-1 | two"]);
  t.same(p.names(), ["web-1"]);
  t.same(p.flush("web-1"), [{ stream: "stdout", line: "web-1 | three" }]);
  t.same(p.names(), []);
  t.same(p.push("b", "stdout", "/wo=", "base64"), ["b     | \\xff"]);
});

t.test("unit: names are coloured only when asked (a terminal), and escaped", async (t) => {
  t.equal(prefix("web-1", 6, false), "web-1  | ");
  const c = prefix("web-1", 6, true);
  t.match(c, /^\x1b\[\d+mweb-1 \x1b\[0m \| $/);
  t.equal(prefix("web-1", 0, true), prefix("web-1", 0, true), "the same name gets the same colour");
  t.equal(prefix("e\x1bvil", 0, false), "e\\x1bvil | ");
  t.notMatch(new LinePrefixer(false).push("n", "stdout", "x\n", "utf8")[0]!, /\x1b/);
});

const agent = (o: Partial<RunAgent>): RunAgent =>
  ({
    node_id: "n",
    name: "web-1",
    batch: 1,
    status: "succeeded",
    exit_code: 0,
    signal: null,
    started_at: null,
    finished_at: null,
    duration_ms: 1234,
    stdout_truncated: false,
    stderr_truncated: false,
    error: null,
    ...o,
  }) as RunAgent;

t.test("unit: the summary table", async (t) => {
  t.equal(
    formatTable(
      SUMMARY_COLUMNS,
      summaryRows([
        agent({ status: "failed", exit_code: 3 }),
        agent({ name: "web-2", status: "cancelled", exit_code: null, signal: "SIGTERM", duration_ms: 61_000 }),
        agent({ name: "db-1", status: "unreachable", exit_code: null, duration_ms: 0 }),
      ]),
    ),
    [
      "NAME   STATUS               EXIT  DURATION",
      "web-1  failed               3     1.2s",
      "web-2  cancelled (SIGTERM)  -     1m1s",
      "db-1   unreachable          -     -",
      "",
    ].join("\n"),
  );
  t.equal(runDuration(15), "15ms");
});

t.test("unit: exit code: 0 iff every agent succeeded, 130 when cancelled, else 1", async (t) => {
  t.equal(runExitCode({ status: "completed", counts: runCounts({ succeeded: 2 }) }), 0);
  t.equal(runExitCode({ status: "completed", counts: runCounts({}) }), 0, "no agent matched");
  t.equal(runExitCode({ status: "completed", counts: runCounts({ succeeded: 1, failed: 1 }) }), 1);
  t.equal(runExitCode({ status: "completed", counts: runCounts({ succeeded: 1, not_found: 1 }) }), 1);
  t.equal(runExitCode({ status: "stopped", counts: runCounts({ failed: 1, not_started: 3 }) }), 1);
  t.equal(runExitCode({ status: "interrupted", counts: runCounts({ succeeded: 1, lost: 1 }) }), 1);
  t.equal(runExitCode({ status: "cancelled", counts: runCounts({ cancelled: 2 }) }), 130);
  t.equal(
    countsLine({ status: "completed", targets: 2, counts: runCounts({ failed: 2 }) }),
    "run completed: 2 agents (2 failed)",
  );
});

t.test("unit: the command as one short line", async (t) => {
  t.equal(runCommandText({ command: ["sh", "-c", "hostname; exit 3"], script: null }), "sh -c 'hostname; exit 3'");
  t.equal(runCommandText({ command: null, script: "#!/bin/sh\nuptime\n" }), "script (17 bytes)");
  t.equal(runCommandText({ command: null, script: "\n" }), "script (1 byte)");
  t.equal(runCommandText({ command: ["printf", "\x1b[2J\n"], script: null }), "printf '\\x1b[2J\\n'");
  t.equal(runCommandText({ command: ["echo", "x".repeat(100)], script: null }).length, 60);
});
