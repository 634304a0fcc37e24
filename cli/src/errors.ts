/**
 * Errors the CLI reports. Everything a command throws ends up in `reportError` (program.ts),
 * which prints `error: <detail> (<code>)` to stderr and, with --json, the problem object to
 * stdout, then exits with the error's `exitCode` (1 unless a command documents another).
 */

/** RFC 9457 problem details, as the API returns them (plus our stable `code`). */
export interface Problem {
  type: string;
  title: string;
  status?: number;
  detail: string;
  code: string;
  [extra: string]: unknown;
}

/** A failure with a human message and a stable snake_case code. */
export class CliError extends Error {
  readonly code: string;
  /** The process exit status; a command whose exit statuses carry meaning (drift --check) sets its own. */
  exitCode = 1;
  constructor(message: string, code = "error", options?: { cause?: unknown }) {
    super(message, options);
    this.name = "CliError";
    this.code = code;
  }

  /** The problem object printed on stdout with --json. */
  toProblem(): Problem {
    return { type: "about:blank", title: "orchctl error", detail: this.message, code: this.code };
  }
}

/**
 * A command that ran and reported its outcome itself (`orchctl run`'s summary or NDJSON) but must
 * exit with a status other than 0 or 1 is not an error to print again: with --json no problem
 * document follows the command's own output.
 */
export class ExitStatus extends CliError {
  /** `message` is printed as `error: …` without --json; an empty one prints nothing (the output said it). */
  constructor(message: string, code: string, exitCode: number) {
    super(message, code);
    this.name = "ExitStatus";
    this.exitCode = exitCode;
  }
}

/**
 * The stderr line for an error: the message, then its code in parentheses unless the message
 * already ends with it (`plan failed (secret_not_permitted)` must not repeat the code).
 */
export function errorLine(message: string, code: string): string {
  return message.endsWith(`(${code})`) ? `error: ${message}` : `error: ${message} (${code})`;
}

/** An error response from the API. `message` is what we show; `problem` is what the server sent. */
export class ProblemError extends CliError {
  readonly status: number;
  readonly problem: Problem;
  constructor(problem: Problem, message?: string) {
    super(message ?? problem.detail, problem.code);
    this.name = "ProblemError";
    this.status = problem.status ?? 0;
    this.problem = problem;
  }

  override toProblem(): Problem {
    return this.problem;
  }
}

/** Shown whenever a bearer token is missing, expired or rejected. */
export const SESSION_EXPIRED = "session expired or revoked; run orchctl login";
