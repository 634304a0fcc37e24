import t from "tap";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "@orch/kit";
import { startNats } from "@orch/kit/testing";
import { startRecorder } from "../src/recorder.js";
import { openTranscript, outputLine, outputLineBytes, resizeLine, type TranscriptWriter } from "../src/transcript.js";

// The byte path for ASCII output must write exactly the line the string path writes.

const asString = (ms: number, data: Buffer) => Buffer.from(outputLine(ms, data.toString("utf8")), "utf8");

t.test("ASCII output becomes the same asciicast line as through JSON.stringify", async (t) => {
  const every = Buffer.from(Array.from({ length: 128 }, (_, i) => i));
  const samples = [
    Buffer.from("hello\r\n"),
    Buffer.from('quote " backslash \\ tab \t bell \x07 esc \x1b[31mred\x1b[0m del \x7f\r\n'),
    Buffer.from(Array.from({ length: 5000 }, () => randomBytes(57).toString("base64")).join("\r\n")),
    Buffer.concat([every, Buffer.alloc(2000, 0x61)]), // every ASCII byte once, within the escape budget
  ];
  for (let i = 0; i < 200; i++)
    samples.push(
      Buffer.from(
        Array.from({ length: 1 + ((i * 37) % 900) }, () =>
          Math.random() < 0.03 ? Math.floor(Math.random() * 32) : 32 + Math.floor(Math.random() * 96),
        ),
      ),
    );
  let same = 0;
  let declined = 0;
  for (const [i, data] of samples.entries()) {
    for (const ms of [0, 1, 12.3456789, 1234567.891]) {
      const line = outputLineBytes(ms, data);
      if (line === undefined)
        declined++; // over the escape budget: the string path writes it
      else if (line.equals(asString(ms, data))) same++;
      else t.fail(`sample ${i} at ${ms} ms differs`, { data: data.toString("latin1").slice(0, 80) });
    }
  }
  t.equal(same + declined, samples.length * 4);
  t.ok(same > samples.length * 3, `${same} lines built from bytes, ${declined} left to the string path`);
});

t.test("anything else is left to the string path", async (t) => {
  t.equal(outputLineBytes(5, Buffer.alloc(0)), undefined, "empty");
  t.equal(outputLineBytes(5, Buffer.from("naïve")), undefined, "non-ASCII");
  t.equal(outputLineBytes(5, Buffer.alloc(1000, 0x1b)), undefined, "mostly escapes");
});

t.test("the writer keeps text and byte lines in order", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "orch-transcript-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "x.cast");
  const w = await openTranscript(path, 10_000);
  w.append(resizeLine(1, 80, 24));
  w.append(outputLineBytes(2, Buffer.from("ab\r\n"))!);
  w.append(outputLine(3, "ünï"));
  await w.close();
  t.equal(readFileSync(path, "utf8"), `[0.001,"r","80x24"]\n[0.002,"o","ab\\r\\n"]\n[0.003,"o","ünï"]\n`);
});

t.test("output escaped into the writer's reused buffers is the string path's lines, in order", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "orch-transcript-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "x.cast");
  const w = await openTranscript(path, 10_000);
  const expected: string[] = [];
  const base64 = (lines: number) =>
    Buffer.from(Array.from({ length: lines }, () => randomBytes(57).toString("base64")).join("\r\n"));
  // Small lines, lines filling the buffers many times over (each refilled while earlier ones are
  // still being written) and one larger than a buffer; the file must hold every line intact.
  const sizes = [1, 10, 200, 3000, 5000, 3400, 3400, 3400, 3400, 3400, 3400, 12000, 3400, 3400, 20, 3400, 3400];
  for (const [i, lines] of sizes.entries()) {
    const data = base64(lines);
    t.ok(w.output(i, data), `line ${i} took the byte path`);
    expected.push(outputLine(i, data.toString("latin1")));
    if (i % 5 === 0) {
      w.append(resizeLine(i, 80 + i, 24));
      expected.push(resizeLine(i, 80 + i, 24));
    }
    if (i % 4 === 1) await w.flush();
  }
  t.notOk(w.output(99, Buffer.from("naïve")), "non-ASCII is declined");
  t.notOk(w.output(99, Buffer.alloc(0)), "empty is declined");
  await w.close();
  t.equal(readFileSync(path, "latin1"), expected.join(""));
});

t.test("a UTF-8 character split across messages is decoded whole, then ASCII goes on as bytes", async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  const nc = await nats.connect("agent");
  const lines: Array<string | Uint8Array> = [];
  const writer: TranscriptWriter = {
    append: (l) => void lines.push(l),
    output(ms, data) {
      const line = outputLineBytes(ms, data);
      if (line) lines.push(line);
      return line !== undefined;
    },
    flush: async () => {},
    close: async () => {},
  };
  const id = "SPLIT1";
  const rec = await startRecorder({
    nc,
    sessionId: id,
    openedAtMs: Date.now(),
    writer,
    clock: systemClock,
    hooks: { exit() {}, closeRequested() {} },
  });
  t.teardown(() => rec.stop());
  const euro = Buffer.from("€"); // three bytes
  for (const part of [
    Buffer.from("a"),
    euro.subarray(0, 1),
    euro.subarray(1, 2),
    Buffer.concat([euro.subarray(2), Buffer.from("b")]),
    Buffer.from("c\r\n"),
  ]) {
    nc.publish(`orch.term.${id}.out`, part);
  }
  await nc.flush();
  const deadline = Date.now() + 5000;
  while (lines.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const text = lines
    .map((l) => JSON.parse(Buffer.from(typeof l === "string" ? Buffer.from(l) : l).toString("utf8"))[2] as string)
    .join("");
  t.equal(text, "a€bc\r\n");
  t.equal(lines.length, 3, "the partial character waited for its last byte");
  t.type(lines[0], Uint8Array, "plain ASCII took the byte path");
  t.type(lines[1], "string", "the completed character took the decoder");
  t.type(lines[2], Uint8Array);
});
