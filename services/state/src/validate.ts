import { invalid } from "@orch/kit";
import { NAME_RE, NAME_RULE } from "@orch/contracts";

/** Validates a module or assignment name (the service re-checks what the gateway checked). */
export function validName(name: string, field: string, what: string): string {
  if (!NAME_RE.test(name)) throw invalid("invalid_request", `${what} ${field} must be ${NAME_RULE}`, { field });
  return name;
}

export const MAX_WAIT_SECONDS = 300;

export function waitMs(seconds: number): number {
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_WAIT_SECONDS)
    throw invalid("invalid_request", `wait must be an integer between 0 and ${MAX_WAIT_SECONDS} seconds`, {
      field: "wait",
    });
  return seconds * 1000;
}

export function kindOf(kind: string): "apply" | "plan" {
  if (kind !== "apply" && kind !== "plan")
    throw invalid("invalid_request", "kind must be apply or plan", { field: "kind" });
  return kind;
}
