import type { FastifyBaseLogger } from "fastify";

type Bindings = Record<string, unknown>;
type ChildOptions = Parameters<FastifyBaseLogger["child"]>[1];
type Level = "fatal" | "error" | "warn" | "info" | "debug" | "trace";

/**
 * The per-request logger fastify gives `req.log`: the same child (parent bindings plus the request
 * id) as fastify's own, built on the first line written at an enabled level. pino serializes a
 * child's bindings when it is made, a measurable share of a request's CPU; with request logging
 * off most requests never write a line, so most never pay it.
 */
class RequestLogger {
  #made: FastifyBaseLogger | undefined;
  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  #child(): FastifyBaseLogger {
    this.#made ??= this.parent.child(this.bindings, this.options);
    return this.#made;
  }

  /** Disabled levels cost nothing; a route's own level (options.level) always builds the child. */
  #write(level: Level, args: unknown[]): void {
    if (!this.#made && !this.options?.level) {
      const parent = this.parent as { isLevelEnabled?(l: string): boolean };
      if (parent.isLevelEnabled && !parent.isLevelEnabled(level)) return;
    }
    (this.#child()[level] as (...a: unknown[]) => void)(...args);
  }

  get level(): string {
    return this.#made?.level ?? this.options?.level ?? this.parent.level;
  }
  set level(level: string) {
    this.#child().level = level;
  }
  fatal(...args: unknown[]): void {
    this.#write("fatal", args);
  }
  error(...args: unknown[]): void {
    this.#write("error", args);
  }
  warn(...args: unknown[]): void {
    this.#write("warn", args);
  }
  info(...args: unknown[]): void {
    this.#write("info", args);
  }
  debug(...args: unknown[]): void {
    this.#write("debug", args);
  }
  trace(...args: unknown[]): void {
    this.#write("trace", args);
  }
  silent(): void {}
  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.#child().child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`. */
export function requestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildOptions): FastifyBaseLogger {
  return new RequestLogger(logger, bindings, options) as unknown as FastifyBaseLogger;
}
