import type { Actor } from "@orch/kit";
import type { NewOperation, OperationKind, OperationRow } from "../db/operations.js";
import type { AgentInfo } from "../deps.js";
import type { ModuleSource } from "./render.js";

/** Everything one operation needs to run. */
export interface OperationInput {
  agent: AgentInfo;
  kind: OperationKind;
  sources: ModuleSource[];
  actor: Actor;
  runId?: string;
  assignment?: string;
  /** Called after the operation starts running and after it ends (a fan-out publishes its progress). */
  onChange?: () => void;
  /**
   * Enforcement: apply only these resources (`<module>/<id>`); `requires` edges to the others are
   * dropped (they were in sync). Such an apply leaves the snapshot alone (engine/finish.ts).
   */
  only?: ReadonlySet<string>;
  /** Enforcement: the drift record the apply corrects. */
  remediates?: string;
  /** The approved change request this apply executes (unique: it runs once). */
  changeRequestId?: string;
}

export interface Runner {
  /** The row of a new pending operation (not yet inserted). */
  newOperation(input: OperationInput): NewOperation;
  /** Inserts and runs one operation in the background. */
  start(input: OperationInput): Promise<{ op: OperationRow; done: Promise<OperationRow | undefined> }>;
  /** Runs an inserted pending operation to its end. Never throws; resolves with the final row. */
  execute(op: NewOperation, input: OperationInput): Promise<OperationRow | undefined>;
  /** Waits up to `ms` for an operation this replica runs; then returns its current row. */
  waitFor(id: string, ms: number): Promise<OperationRow | undefined>;
  /** Resolves when every operation this replica runs has ended. */
  drain(): Promise<void>;
}
