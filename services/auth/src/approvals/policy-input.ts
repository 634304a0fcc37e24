// The shape rules of an approval policy (`invalid_approval_policy`); approvers are checked against
// the database apart (approvers.ts).
import {
  ACCESS_SECONDS,
  APPROVAL_ACTIONS,
  checkName,
  isApprovalAction,
  parseSelector,
  SelectorError,
  type PutApprovalPolicyRequest,
} from "@orch/contracts";
import { invalid } from "@orch/kit";

export const DEFAULT_EXPIRY_SECONDS = 86_400;
const MIN_EXPIRY = 60;
const MAX_EXPIRY = 2_592_000;
const MAX_APPROVERS = 100;

export interface PolicyInput {
  name: string;
  description: string;
  actions: string[];
  selector: string;
  approvalsRequired: number;
  approvers: string[];
  requesterMayApprove: boolean;
  expiresAfterSeconds: number;
  maxAccessSeconds: number;
}

const bad = (field: string, message: string) => invalid("invalid_approval_policy", message, { field });

function checkActions(actions: readonly string[]): string[] {
  if (actions.length === 0) throw bad("actions", `actions must name at least one of ${APPROVAL_ACTIONS.join(", ")}`);
  const unknown = actions.find((a) => !isApprovalAction(a));
  if (unknown !== undefined) throw bad("actions", `unknown action '${unknown}': one of ${APPROVAL_ACTIONS.join(", ")}`);
  return [...new Set(actions)].sort();
}

function checkSelectorText(text: string): string {
  const source = text.trim() || "*";
  try {
    return parseSelector(source).source;
  } catch (err) {
    if (err instanceof SelectorError) throw bad("selector", `selector: ${err.message}`);
    throw err;
  }
}

function checkNumbers(
  req: Pick<PutApprovalPolicyRequest, "approvalsRequired" | "expiresAfterSeconds" | "maxAccessSeconds">,
) {
  if (!Number.isInteger(req.approvalsRequired) || req.approvalsRequired < 1 || req.approvalsRequired > 10)
    throw bad("approvals_required", "approvals_required must be between 1 and 10");
  const expiry = req.expiresAfterSeconds || DEFAULT_EXPIRY_SECONDS;
  if (expiry < MIN_EXPIRY || expiry > MAX_EXPIRY)
    throw bad("expires_after_seconds", `expires_after_seconds must be between ${MIN_EXPIRY} and ${MAX_EXPIRY}`);
  const maxAccess = req.maxAccessSeconds || ACCESS_SECONDS.default;
  if (maxAccess < ACCESS_SECONDS.min || maxAccess > ACCESS_SECONDS.max)
    throw bad(
      "max_access_seconds",
      `max_access_seconds must be between ${ACCESS_SECONDS.min} and ${ACCESS_SECONDS.max}`,
    );
  return { approvalsRequired: req.approvalsRequired, expiresAfterSeconds: expiry, maxAccessSeconds: maxAccess };
}

export function checkPolicyInput(req: PutApprovalPolicyRequest): PolicyInput {
  const v = checkName(req.name);
  if (v) throw invalid("invalid_request", `name ${v.message}`, { field: "name" });
  const approvers = [...new Set(req.approvers.map((a) => a.trim()).filter(Boolean))];
  if (approvers.length === 0) throw bad("approvers", "approvers must name at least one operator, role or group");
  if (approvers.length > MAX_APPROVERS) throw bad("approvers", `at most ${MAX_APPROVERS} approvers`);
  if (req.description.length > 1000) throw bad("description", "description is longer than 1000 characters");
  return {
    name: req.name,
    description: req.description,
    actions: checkActions(req.actions),
    selector: checkSelectorText(req.selector),
    approvers,
    requesterMayApprove: req.requesterMayApprove,
    ...checkNumbers(req),
  };
}
