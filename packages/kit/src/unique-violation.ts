/** Postgres's SQLSTATE for a unique or primary-key constraint an insert or update would break. */
const UNIQUE_VIOLATION = "23505";

/**
 * Whether `err` is pg's unique-violation error, and, when `constraint` is given, one raised by that
 * constraint only: handlers map it to a 409 where a concurrent writer won the race past their pre-check.
 */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  if (typeof err !== "object" || err === null) return false;
  const e = err as { code?: unknown; constraint?: unknown };
  return e.code === UNIQUE_VIOLATION && (constraint === undefined || e.constraint === constraint);
}
