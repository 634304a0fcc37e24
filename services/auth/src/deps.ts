import type { ServiceDeps } from "@orch/kit";
import type { AuthConfig } from "./config.js";

export type AuthDeps = ServiceDeps<Readonly<AuthConfig>>;
