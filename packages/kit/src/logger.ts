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
];

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
