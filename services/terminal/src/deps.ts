import type { ServiceDeps } from "@orch/kit";
import type { TerminalConfig } from "./config.js";

export type TerminalDeps = ServiceDeps<Readonly<TerminalConfig>>;
