// One machine-readable line per scenario (the docs' fault table is filled from these) and the
// same figures as a readable row.
import type { Figures } from "./types.js";

const COLUMNS: Array<keyof Figures> = [
  "scenario",
  "requests",
  "faults",
  "acked",
  "lost",
  "duplicates",
  "stuck",
  "nonRetryable",
  "recoverySeconds",
];

export function figuresLine(f: Figures): string {
  return `FAULT-FIGURES ${JSON.stringify(f)}`;
}

export function figuresRow(f: Figures): string {
  const head = COLUMNS.map((c) => c.padEnd(Math.max(c.length, String(f[c]).length))).join("  ");
  const row = COLUMNS.map((c) => String(f[c]).padEnd(Math.max(c.length, String(f[c]).length))).join("  ");
  return `${head}\n${row}`;
}

export function printFigures(f: Figures): void {
  console.log(figuresLine(f));
  console.log(figuresRow(f));
}
