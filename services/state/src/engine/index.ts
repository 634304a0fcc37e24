import type { CommandDriver } from "../commands/driver.js";
import type { Clients, StateDeps } from "../deps.js";
import type { FanOut } from "./fanout.js";
import type { ModuleCache } from "./modules.js";
import type { Runner } from "./operation.js";

/** The moving parts handlers share; built once in service.ts. */
export interface Engine {
  deps: StateDeps;
  clients: Clients;
  runner: Runner;
  fanout: FanOut;
  cache: ModuleCache;
  /** Drives fleet command runs started on this replica (commands/driver.ts). */
  commands: CommandDriver;
}
