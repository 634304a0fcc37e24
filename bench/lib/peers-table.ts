/**
 * The side-by-side table of the peers bench: per phase, wall seconds and CPU-seconds per tool,
 * each peer's ratio to this project (>1: the peer took longer / more CPU), and whether this
 * project is ahead of every peer on both figures.
 */
import type { Phase, PhaseResult } from "./peers-phase.js";

export const SELF = "orch";

export type PhaseFigures = Record<string, Pick<PhaseResult, "wallS" | "cpuS">>;

export interface Verdict {
  ahead: boolean;
  /** Why not, e.g. "ansible wall 0.8x": one entry per figure where a peer did better. */
  behind: string[];
}

export const ratio = (peer: number, self: number): number => (self > 0 ? peer / self : Number.POSITIVE_INFINITY);

export const fmtRatio = (r: number): string => (Number.isFinite(r) ? `${r.toFixed(r < 10 ? 2 : 1)}x` : "inf");

/** Ahead = faster and cheaper than every peer that ran; ties count as behind. */
export function verdict(figures: PhaseFigures): Verdict {
  const self = figures[SELF];
  if (!self) return { ahead: false, behind: [`${SELF} did not run`] };
  const behind: string[] = [];
  for (const [tool, f] of Object.entries(figures)) {
    if (tool === SELF) continue;
    if (f.wallS <= self.wallS) behind.push(`${tool} wall ${fmtRatio(ratio(f.wallS, self.wallS))}`);
    if (f.cpuS <= self.cpuS) behind.push(`${tool} CPU ${fmtRatio(ratio(f.cpuS, self.cpuS))}`);
  }
  return { ahead: behind.length === 0, behind };
}

const pad = (s: string, n: number) => s.padStart(n);
/** Column width: the widest header ("ansible wall s") and a space. */
const W = 16;

/** Table lines for one host count; `tools` in column order, SELF first when present. */
export function formatTable(hosts: number, tools: string[], rows: { phase: Phase; figures: PhaseFigures }[]): string[] {
  const peers = tools.filter((t) => t !== SELF);
  const head = [
    "phase".padEnd(16),
    ...tools.map((t) => pad(`${t} wall s`, W) + pad(`${t} CPU s`, W)),
    ...(tools.includes(SELF) ? peers.map((p) => pad(`${p}/${SELF} wall`, 19) + pad("CPU", 8)) : []),
    tools.includes(SELF) && peers.length > 0 ? "  verdict" : "",
  ].join("");
  const lines = [`N = ${hosts} hosts`, head];
  for (const r of rows) {
    const self = r.figures[SELF];
    const cells = tools.map((t) => {
      const f = r.figures[t];
      return f ? pad(f.wallS.toFixed(2), W) + pad(f.cpuS.toFixed(2), W) : pad("-", W) + pad("-", W);
    });
    const ratios = self
      ? peers.map((p) => {
          const f = r.figures[p];
          return f
            ? pad(fmtRatio(ratio(f.wallS, self.wallS)), 19) + pad(fmtRatio(ratio(f.cpuS, self.cpuS)), 8)
            : pad("-", 27);
        })
      : [];
    let v = "";
    if (self && peers.length > 0) {
      const x = verdict(r.figures);
      v = x.ahead ? "  ahead" : `  behind (${x.behind.join(", ")})`;
    }
    lines.push([r.phase.padEnd(16), ...cells, ...ratios, v].join(""));
  }
  return lines;
}
