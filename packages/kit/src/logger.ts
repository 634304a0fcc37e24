import { pino, type Logger, type LoggerOptions, type DestinationStream } from "pino";

export type { Logger };

/**
 * Paths that may carry secrets. Redaction is a second line of defence: secret values should never
 * be handed to the logger in the first place.
 */
export const REDACT_PATHS = [
  "value",
  "*.value",
  "secret",
  "*.secret",
  "token",
  "*.token",
  "password",
  "*.password",
  "authorization",
  "*.authorization",
  "req.headers.authorization",
  "headers.authorization",
  "config.secret",
  "config.token",
  "plaintext",
  "*.plaintext",
  // Secret values nested one level deeper (e.g. a request body inside an error), and keyrings
  // such as `secrets.keys` inside a logged config.
  "*.*.value",
  "keys",
  "*.keys",
  "*.*.keys",
];

/**
 * Masks every occurrence of the given secret values in a text (plan diffs, captured output, error
 * messages) before it is stored, logged or returned. Longest values first, so a value that
 * contains another is masked whole.
 */
export function maskValues(text: string, values: Iterable<string>, mask = "[redacted]"): string {
  const sorted = [...new Set(values)].filter((v) => v.length > 0).sort((a, b) => b.length - a.length);
  let out = text;
  for (const v of sorted) out = out.split(v).join(mask);
  return out;
}

export function createLogger(opts: { name: string; level?: string; destination?: DestinationStream }): Logger {
  const options: LoggerOptions = {
    name: opts.name,
    level: opts.level ?? "info",
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    base: { service: opts.name },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}
