import type { GatewayContext } from "../context.js";
import type { RouteSpec } from "../route.js";
import { agentUpgradeRoutes } from "./agent-upgrades.js";
import { agentRoutes } from "./agents.js";
import { assignmentRoutes } from "./assignments.js";
import { asyncApiRoutes } from "./asyncapi.js";
import { auditRoutes } from "./audit.js";
import { authRoutes } from "./auth.js";
import { channelRoutes } from "./channels.js";
import { installRoutes } from "./install.js";
import { joinTokenRoutes } from "./join-tokens.js";
import { maintenanceRoutes } from "./maintenance.js";
import { moduleRoutes } from "./modules.js";
import { notificationRoutes } from "./notifications.js";
import { operatorRoutes } from "./operators.js";
import { passkeyRoutes } from "./passkeys.js";
import { ssoRoutes } from "./sso.js";
import { identityProviderRoutes } from "./identity-providers.js";
import { approvalPolicyRoutes } from "./approval-policies.js";
import { changeRequestRoutes } from "./change-requests.js";
import { accessRoutes } from "./access.js";
import { runRoutes } from "./runs.js";
import { secretRoutes } from "./secrets.js";
import { stateRoutes } from "./state.js";
import { sourceRoutes } from "./sources.js";
import { statusRoutes } from "./status.js";
import { terminalRoutes } from "./terminal.js";
import { valueRoutes } from "./values.js";
import { blobRoutes } from "./blobs.js";

/** Every route module, one line each. A module builds its own RPC client from ctx.nc. */
export function allRoutes(ctx: GatewayContext): RouteSpec[] {
  return [
    ...statusRoutes(ctx),
    ...channelRoutes(ctx),
    ...notificationRoutes(ctx),
    ...maintenanceRoutes(ctx),
    ...authRoutes(ctx),
    ...passkeyRoutes(ctx),
    ...ssoRoutes(ctx),
    ...identityProviderRoutes(ctx),
    ...approvalPolicyRoutes(ctx),
    ...changeRequestRoutes(ctx),
    ...accessRoutes(ctx),
    ...operatorRoutes(ctx),
    ...agentRoutes(ctx),
    ...agentUpgradeRoutes(ctx),
    ...joinTokenRoutes(ctx),
    ...secretRoutes(ctx),
    ...auditRoutes(ctx),
    ...asyncApiRoutes(),
    ...terminalRoutes(ctx),
    ...moduleRoutes(ctx),
    ...assignmentRoutes(ctx),
    ...stateRoutes(ctx),
    ...runRoutes(ctx),
    ...sourceRoutes(ctx),
    ...valueRoutes(ctx),
    ...blobRoutes(ctx),
    ...installRoutes(ctx),
  ];
}
