/**
 * The event catalogue: every audit event type the system emits, with its default severity.
 * `emit()` only accepts these names (a compile-time check), and a test keeps docs/events.md in
 * step with this list. Add a type here before emitting it.
 */
export const Severities = ["info", "warning", "error", "critical"] as const;
export type Severity = (typeof Severities)[number];

export const EVENT_TYPES = {
  "auth.login.succeeded": { severity: "info", description: "An operator logged in." },
  "auth.login.failed": {
    severity: "warning",
    description:
      "A login attempt failed (bad signature, unknown key, expired nonce). warning only for the first failure of a known operator in `auth.login_failure_window_seconds`; repeats and unknown keys are info and notify nobody.",
  },
  "auth.logout": { severity: "info", description: "An operator revoked its session token." },
  "auth.login_code.created": {
    severity: "info",
    description: "An operator asked for a one-time console login link (`orchctl console`).",
  },
  "auth.passkey.registered": { severity: "info", description: "An operator registered a passkey for the console." },
  "auth.passkey.removed": {
    severity: "warning",
    description: "A passkey was removed (by its operator or an admin) and the console sessions it opened revoked.",
  },
  "auth.sso.login_succeeded": {
    severity: "info",
    description:
      "An operator signed in through an identity provider (console or CLI); metadata names the provider and the matched rule.",
  },
  "auth.sso.login_failed": {
    severity: "warning",
    description:
      "A single sign-on attempt was refused (bad state, code or ID token, provider error or down); metadata carries the problem code. Nothing was created.",
  },
  "auth.sso.mapping_refused": {
    severity: "warning",
    description:
      "A user authenticated at the provider but no mapping rule matched (or the email domain is not allowed).",
  },
  "auth.sso.logout": {
    severity: "info",
    description: "An identity provider's back-channel logout ended an operator's sessions.",
  },
  "approval_policy.created": {
    severity: "info",
    description:
      "An admin, or a git source's sync (actor `source:<name>`, metadata `source`, `commit`), added an approval policy.",
  },
  "approval_policy.updated": {
    severity: "info",
    description:
      "An admin or a source's sync changed an approval policy; or deleting its source released it to the API (`released_from`).",
  },
  "approval_policy.deleted": {
    severity: "warning",
    description: "An admin removed an approval policy, or a source's sync did (its file left the tree).",
  },
  "change_request.created": {
    severity: "info",
    description:
      "An action matched an approval policy and is held as a pending change request; `notify_operator_ids` names the operators who may approve it.",
  },
  "change_request.approval_recorded": {
    severity: "info",
    description: "An approver approved a change request that needs more approvals; it stays pending.",
  },
  "change_request.approved": {
    severity: "info",
    description:
      "The last approval a change request needed was given; metadata names the requester and the approvers. Without an executor in the auth service it waits for the executing service.",
  },
  "change_request.denied": { severity: "info", description: "An approver denied a change request; it ends." },
  "change_request.cancelled": {
    severity: "info",
    description: "The requester (or an admin) withdrew a change request.",
  },
  "change_request.replanned": {
    severity: "info",
    description:
      "A pending change request was frozen again as it would run now, with a fresh plan; approvals given before are cleared (`approvals_cleared`) and `notify_operator_ids` asks the approvers again.",
  },
  "change_request.expired": {
    severity: "info",
    description: "A change request was not decided before its expiry; nothing was executed.",
  },
  "change_request.executed": {
    severity: "info",
    description:
      "An approved change request was executed once, as its requester; metadata names the requester and the approvers.",
  },
  "change_request.failed": {
    severity: "error",
    description: "An approved change request's execution failed; `error` says why.",
  },
  "approval.bypassed": {
    severity: "critical",
    description:
      "An admin executed an action that an approval policy holds without approval (break-glass), with the mandatory `reason`; `notify_operator_ids` names the policy's approvers, who are notified.",
  },
  "access.requested": {
    severity: "info",
    description:
      "An operator asked for temporary access (an agent selector and/or the admin role) for a duration, with a reason; the change request that holds it notifies the approvers.",
  },
  "access.granted": {
    severity: "warning",
    description:
      "An approval granted an operator temporary access until `expires_at`; live connections are re-checked at once.",
  },
  "access.expired": {
    severity: "info",
    description:
      "An access grant reached its expiry and ended; the holder's terminals and streams it allowed are closed (scope_changed).",
  },
  "access.revoked": {
    severity: "warning",
    description: "An admin (or the holder) ended an access grant before its expiry; what it allowed is closed at once.",
  },
  "identity_provider.created": { severity: "info", description: "An admin added an identity provider." },
  "identity_provider.updated": { severity: "info", description: "An admin changed an identity provider." },
  "identity_provider.deleted": {
    severity: "warning",
    description: "An admin removed an identity provider; the operators it provisioned were deprovisioned.",
  },
  "operator.provisioned": {
    severity: "info",
    description:
      "Single sign-on created an operator on first sign-in (just-in-time), or changed its role or scope on a later one.",
  },
  "operator.deprovisioned": {
    severity: "warning",
    description:
      "An SSO operator lost access: the provider refused a refresh (user disabled or removed), no rule maps its claims any more, or its provider was removed. Its sessions, streams and terminals ended.",
  },
  "operator.created": { severity: "info", description: "An operator was added." },
  "operator.removed": { severity: "warning", description: "An operator was removed and its tokens revoked." },
  "operator.updated": {
    severity: "warning",
    description: "An operator's agent selector (scope) was set, changed or cleared.",
  },

  "agent.registered": {
    severity: "info",
    description: "A new agent connected for the first time and is pending approval.",
  },
  "agent.approved": { severity: "info", description: "An agent was approved and named." },
  "agent.rejected": { severity: "warning", description: "An agent was rejected." },
  "agent.removed": { severity: "info", description: "A rejected agent's record was deleted." },
  "agent.connected": { severity: "info", description: "An agent's link came up." },
  "agent.disconnected": {
    severity: "warning",
    description: "An agent's link went down (warning for approved agents).",
  },
  "agent.tags.updated": { severity: "info", description: "An agent's tags changed." },
  "agent.upgrade.requested": {
    severity: "info",
    description: "An operator asked an agent to upgrade to a published orch-agent version.",
  },
  "agent.upgrade.succeeded": {
    severity: "info",
    description: "An agent linked up again on the version it was asked to run.",
  },
  "agent.upgrade.failed": {
    severity: "warning",
    description:
      "An agent refused an upgrade (bad signature or checksum, unsupported install) or missed its deadline; it keeps its version.",
  },
  "join_token.created": {
    severity: "info",
    description: "An admin created a join token (the token itself is never recorded).",
  },
  "join_token.revoked": { severity: "info", description: "An admin revoked a join token." },
  "discovery.sent": { severity: "info", description: "A UDP discovery datagram was sent." },

  "module.uploaded": { severity: "info", description: "A state module was created or replaced." },
  "module.deleted": { severity: "info", description: "A state module was deleted." },
  "assignment.created": { severity: "info", description: "An assignment was created." },
  "assignment.updated": {
    severity: "info",
    description: "An assignment's selector, modules or description was changed.",
  },
  "assignment.deleted": { severity: "info", description: "An assignment was deleted." },
  "values.set_updated": {
    severity: "info",
    description: "A value set was created or replaced (its selector, priority or values).",
  },
  "values.set_deleted": { severity: "info", description: "A value set was deleted." },
  "values.agent_updated": { severity: "info", description: "An agent's own values were set or cleared." },
  "blob.uploaded": {
    severity: "info",
    description: "A content-addressed blob (a module file source) was uploaded and verified against its digest.",
  },
  "blob.deleted": {
    severity: "info",
    description:
      "A blob was deleted, by an admin or by the collector of blobs no module names (actor `system:blob-gc`, metadata `reason: unreferenced`).",
  },
  "source.created": { severity: "info", description: "A git source of modules and assignments was registered." },
  "source.deleted": {
    severity: "warning",
    description: "A git source was deleted; the objects it managed stay, no longer managed.",
  },
  "source.synced": {
    severity: "info",
    description: "A git source's tree was applied: its commit and counts of created, updated and removed objects.",
  },
  "source.sync_failed": {
    severity: "error",
    description:
      "A git source could not be synced (fetch failed or an invalid file): nothing changed, the previous commit stays in force.",
  },
  "assignment.applied": { severity: "info", description: "An assignment apply or plan fanned out to its agents." },
  "state.apply.succeeded": { severity: "info", description: "An apply operation finished without failures." },
  "state.apply.failed": {
    severity: "error",
    description: "An apply operation failed, timed out or found the agent unreachable.",
  },
  "state.plan.completed": { severity: "info", description: "A plan operation finished." },
  "drift.detected": {
    severity: "warning",
    description: "A drift check found resources that no longer match the last apply.",
  },
  "drift.cleared": { severity: "info", description: "A previously drifted agent matches its snapshot again." },
  "drift.remediated": {
    severity: "info",
    description:
      "Enforcement re-applied the drifted resources of an enforced assignment on an agent (actor `system:enforce`; metadata links the drift record and the operation).",
  },
  "drift.remediation_failed": {
    severity: "error",
    description:
      "Enforcement tried to re-apply drifted resources and the apply failed, timed out or found the agent unreachable.",
  },

  "run.started": {
    severity: "info",
    description:
      "A fleet command run started (metadata: command or script digest, selector or node list, target count, active maintenance window; env values never).",
  },
  "run.finished": {
    severity: "info",
    description:
      "A fleet command run ended; metadata counts the targets per status (outputs are stored, not in the event).",
  },
  "run.cancelled": { severity: "warning", description: "An operator cancelled a fleet command run." },

  "secret.created": { severity: "info", description: "A secret was created (metadata only)." },
  "secret.updated": { severity: "info", description: "A secret's value or metadata changed (metadata only)." },
  "secret.deleted": { severity: "info", description: "A secret was deleted." },
  "secret.used": { severity: "info", description: "A secret was resolved for an agent's operation." },
  "secret.denied": {
    severity: "warning",
    description: "A secret resolution was refused (restriction, expiry, agent status).",
  },
  "secret.reencrypted": { severity: "info", description: "Secrets were re-encrypted with the active key." },

  "terminal.session.opened": { severity: "info", description: "A remote terminal session was opened." },
  "terminal.session.closed": { severity: "info", description: "A remote terminal session ended." },
  "terminal.session.attached": {
    severity: "info",
    description: "A client attached to a terminal session (its opener re-attaching, or an admin joining).",
  },

  "maintenance.window.created": { severity: "info", description: "A maintenance window was created." },
  "maintenance.window.updated": {
    severity: "info",
    description: "A maintenance window was changed (e.g. ended early).",
  },
  "maintenance.window.deleted": { severity: "info", description: "A maintenance window was deleted." },
  "channel.created": { severity: "info", description: "A notification channel was created." },
  "channel.updated": { severity: "info", description: "A notification channel was changed." },
  "channel.deleted": { severity: "info", description: "A notification channel was deleted." },
  "channel.disabled": {
    severity: "warning",
    description: "A channel was disabled because its receiver answered 410 Gone.",
  },
  "channel.tested": { severity: "info", description: "A test notification was sent through a channel." },
  "channel.delivery.failed": { severity: "error", description: "A delivery exhausted its retries." },
  "notification.read": {
    severity: "info",
    description: "An operator marked one notification, or all of theirs, read.",
  },

  "audit.pruned": { severity: "info", description: "Audit events older than a cutoff were deleted." },
  "audit.retention.updated": { severity: "info", description: "The audit retention setting changed." },
} as const satisfies Record<string, { severity: Severity; description: string }>;

export type EventType = keyof typeof EVENT_TYPES;

export function isEventType(s: string): s is EventType {
  return Object.hasOwn(EVENT_TYPES, s);
}
