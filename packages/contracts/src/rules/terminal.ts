import type { Violation } from "./violation.js";

/** Largest value of an int32, the type the API gives a terminal's cols and rows. */
export const INT32_MAX = 2_147_483_647;

/**
 * The widest and tallest PTY an agent opens: any int32 size is accepted, and a larger one is
 * clamped to this rather than refused (the window a client asks for may simply be big), and the
 * open-session answer says so (`clamped`).
 */
export const PTY_DIM_MAX = 1000;

/** The size a session gets when the request names none. */
export const TERMINAL_DEFAULT_COLS = 80;
export const TERMINAL_DEFAULT_ROWS = 24;

/** The range a requested width or height may take: any positive int32. */
export const TERMINAL_DIM_MIN = 1;
export const TERMINAL_DIM_MAX = INT32_MAX;
export const TERMINAL_DIM_RULE = `an integer from ${TERMINAL_DIM_MIN} to ${TERMINAL_DIM_MAX} (larger than ${PTY_DIM_MAX} is clamped to ${PTY_DIM_MAX})`;

/** A requested terminal width or height. */
export function checkTerminalDim(v: number): Violation | null {
  return Number.isInteger(v) && v >= TERMINAL_DIM_MIN && v <= TERMINAL_DIM_MAX
    ? null
    : { reason: "invalid_request", message: `must be ${TERMINAL_DIM_RULE}` };
}

/** What the PTY is opened (or resized) with for an accepted size. */
export const clampTerminalDim = (v: number): number => Math.min(v, PTY_DIM_MAX);

/** A resize that can be applied as is (control messages are not clamped: a bad one is dropped). */
export const isPtyDim = (n: unknown): n is number =>
  typeof n === "number" && Number.isInteger(n) && n >= 1 && n <= PTY_DIM_MAX;

/**
 * Ends the terminal service imposes on a session (its limits). The shell is ended by SIGHUP, so the
 * session also records exit 129; clients name the limit, not that exit, which would read as the
 * shell's own.
 */
export const TERMINAL_LIMIT_ENDS: ReadonlySet<string> = new Set(["idle_timeout", "max_duration"]);
