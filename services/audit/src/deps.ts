import type { ServiceDeps } from "@orch/kit";
import type { AuditConfig } from "./config.js";

export type AuditDeps = ServiceDeps<Readonly<AuditConfig>>;
