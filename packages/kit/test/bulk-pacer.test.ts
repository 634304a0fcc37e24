import t from "tap";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { BULK_BUFFER_BUDGET, BULK_MIN_PIECE, newPacerState, pace } from "../src/bulk-pacer.js";

const MiB = 1024 * 1024;

t.test("pace: nothing until buffers grow a budget past their low, then a young collection", async (t) => {
  const s = newPacerState();
  t.equal(pace(s, 10 * MiB), undefined, "the first look sets the low");
  t.equal(pace(s, 10 * MiB + BULK_BUFFER_BUDGET - 1), undefined, "a byte short of the budget");
  t.equal(pace(s, 10 * MiB + BULK_BUFFER_BUDGET), "minor");
  // What the collection freed is the new low: the next budget counts from there.
  t.equal(pace(s, 12 * MiB), undefined);
  t.equal(pace(s, 12 * MiB + BULK_BUFFER_BUDGET - 1), undefined);
  t.equal(pace(s, 12 * MiB + BULK_BUFFER_BUDGET), "minor");
});

t.test("pace: a low that young collections leave rising by two budgets calls for a full one", async (t) => {
  const s = newPacerState();
  let low = 10 * MiB;
  pace(s, low);
  const kinds: string[] = [];
  // Each young collection leaves 6 MiB more behind (buffers promoted while in flight).
  for (let i = 0; i < 12; i++) {
    kinds.push(pace(s, low + BULK_BUFFER_BUDGET) ?? "none");
    low += 6 * MiB;
    t.equal(pace(s, low), undefined, "the drop after a collection is only looked at");
  }
  const first = kinds.indexOf("major");
  t.ok(first > 0, `young collections first (${kinds.join(",")})`);
  // The first full collection comes once the low is two budgets above where it started.
  t.equal(first, Math.ceil((2 * BULK_BUFFER_BUDGET) / (6 * MiB)), "when the low has risen two budgets");
  // After it the baseline is what it leaves: the count starts again.
  const s2 = newPacerState();
  pace(s2, 50 * MiB);
  t.equal(pace(s2, 50 * MiB + BULK_BUFFER_BUDGET), "minor");
  t.equal(pace(s2, 20 * MiB), undefined, "a full collection's low");
  t.equal(pace(s2, 20 * MiB + BULK_BUFFER_BUDGET), "minor", "counted from the new low, not the old base");
});

/**
 * Runs the streaming workload of fixtures/pacer-workload.ts in a fresh node (pacing is process-wide) and
 * returns what it measured.
 */
function workload(mode: "unpaced" | "paced" | "small"): { peakMiB: number; minors: number; majors: number } {
  const script = fileURLToPath(new URL("./fixtures/pacer-workload.ts", import.meta.url));
  const out = execFileSync(process.execPath, ["--conditions=orch-source", "--import=tsx", script, mode], {
    encoding: "utf8",
    timeout: 120_000,
  });
  return JSON.parse(out.trim().split("\n").pop()!) as { peakMiB: number; minors: number; majors: number };
}

t.test("a paced transfer's dead buffers stay within its budget; unpaced they pile up", async (t) => {
  const unpaced = workload("unpaced");
  const paced = workload("paced");
  const small = workload("small");
  t.ok(paced.minors > 0, `the pacer collected the young generation (${paced.minors} times)`);
  t.ok(
    paced.peakMiB < 3 * (BULK_BUFFER_BUDGET / MiB) + 8,
    `paced peak ${paced.peakMiB.toFixed(0)} MiB of buffers (budget ${BULK_BUFFER_BUDGET / MiB} MiB)`,
  );
  t.ok(
    unpaced.peakMiB > paced.peakMiB * 1.5,
    `unpaced peak ${unpaced.peakMiB.toFixed(0)} MiB, paced ${paced.peakMiB.toFixed(0)} MiB`,
  );
  t.ok(
    small.peakMiB > paced.peakMiB * 1.5,
    `pieces under ${BULK_MIN_PIECE / 1024} KiB are not paced: peak ${small.peakMiB.toFixed(0)} MiB`,
  );
});
