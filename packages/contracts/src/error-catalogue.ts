/**
 * The error catalogue: every problem+json `code` the API can answer with, once. `OrchError`, the
 * kit's shorthands, the agent's `AgentError` and the gateway's `problem()` accept only these names
 * (a compile-time check), a test scans the sources for literals that bypass the types, and
 * docs/errors.md and the OpenAPI document are generated from this list. Add a code here before
 * throwing it.
 */

/** The closed status set shared by the bus, the HTTP mapping and the agent link (gRPC's names). */
export const GRPC_CODES = [
  "INVALID_ARGUMENT",
  "UNAUTHENTICATED",
  "PERMISSION_DENIED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "FAILED_PRECONDITION",
  "RESOURCE_EXHAUSTED",
  "UNAVAILABLE",
  "DEADLINE_EXCEEDED",
  "INTERNAL",
] as const;
export type GrpcCode = (typeof GRPC_CODES)[number];

export interface ErrorEntry {
  /** The HTTP status a client sees. */
  readonly status: number;
  /**
   * The status an OrchError with this reason carries on the bus; null for the gateway's own
   * HTTP-layer answers (routing, framing, upgrades), which never cross the bus.
   */
  readonly grpc: GrpcCode | null;
  /** One line for operators: when a client sees this code. */
  readonly meaning: string;
}

export const ERROR_CATALOGUE = {
  // Fallbacks: an OrchError without a reason of its own gets its status's name.
  invalid_argument: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "The request was refused as invalid." },
  unauthenticated: {
    status: 401,
    grpc: "UNAUTHENTICATED",
    meaning: "No bearer token was sent (orchctl login), or the caller could not be authenticated.",
  },
  permission_denied: { status: 403, grpc: "PERMISSION_DENIED", meaning: "The caller may not do this." },
  not_found: { status: 404, grpc: "NOT_FOUND", meaning: "The thing asked for does not exist." },
  already_exists: { status: 409, grpc: "ALREADY_EXISTS", meaning: "The thing to create exists already." },
  failed_precondition: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "The request is valid but the current state does not allow it.",
  },
  resource_exhausted: { status: 429, grpc: "RESOURCE_EXHAUSTED", meaning: "A limit was reached; retry later." },
  unavailable: { status: 503, grpc: "UNAVAILABLE", meaning: "A dependency is not available; retry." },
  deadline_exceeded: {
    status: 504,
    grpc: "DEADLINE_EXCEEDED",
    meaning: "The request expired before it could be answered (also: expired before it reached the agent).",
  },
  internal: {
    status: 500,
    grpc: "INTERNAL",
    meaning: "A bug. The body carries `request_id`; the gateway logs the cause with that id.",
  },

  // The service runtime (packages/kit): bus, database, input rules, pagination, idempotency.
  service_unavailable: {
    status: 503,
    grpc: "UNAVAILABLE",
    meaning: "No replica of the service answered on the bus (not running or not yet subscribed).",
  },
  timeout: { status: 504, grpc: "DEADLINE_EXCEEDED", meaning: "The service did not answer within the RPC timeout." },
  bus_unavailable: { status: 503, grpc: "UNAVAILABLE", meaning: "The connection to NATS is down." },
  bus_permission_denied: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning: "NATS refused the request subject for this service's credentials (docs/deploy.md).",
  },
  database_unavailable: { status: 503, grpc: "UNAVAILABLE", meaning: "Postgres refused or dropped the connection." },
  invalid_characters: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A string holds a NUL character or an unpaired UTF-16 surrogate (`location` and `field` name it).",
  },
  invalid_limit: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "`limit` is not an integer in the allowed range." },
  invalid_cursor: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A cursor (or `after_seq`, `Last-Event-ID`) is not one a page handed out.",
  },
  invalid_idempotency_key: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The Idempotency-Key header does not have the allowed form.",
  },
  idempotency_key_reused: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "This Idempotency-Key was used for a different request; use a new key.",
  },
  idempotency_key_in_flight: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "A request with this Idempotency-Key is still running; retry later.",
  },
  idempotency_store_unavailable: {
    status: 503,
    grpc: "UNAVAILABLE",
    meaning: "The idempotency store could not be read or written; retry.",
  },
  admin_required: { status: 403, grpc: "PERMISSION_DENIED", meaning: "The operation requires the admin role." },
  operator_required: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning: "The operation belongs to an operator (notifications, terminals); a system caller cannot make it.",
  },

  // The gateway: request framing, routing, validation, authentication.
  invalid_request: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "A path, query or body field fails the route's schema (`errors[]` names each); also other 4xx request errors fastify raises, with their own status.",
  },
  invalid_json: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "The request body is not valid JSON." },
  invalid_encoding: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The JSON request body is not valid UTF-8 (refused, never stored with replacement characters).",
  },
  too_deep: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "The body nests objects/arrays deeper than allowed." },
  invalid_url: { status: 400, grpc: null, meaning: "The URL path is not validly percent-encoded." },
  malformed_request: {
    status: 400,
    grpc: null,
    meaning: "The request is not valid HTTP (the connection is closed after the answer).",
  },
  route_not_found: { status: 404, grpc: null, meaning: "No route (or WebSocket endpoint) has this path." },
  method_not_allowed: {
    status: 405,
    grpc: null,
    meaning: "The path exists but not with this method (`Allow` lists the methods).",
  },
  request_timeout: { status: 408, grpc: null, meaning: "The request was not received in time." },
  body_too_large: { status: 413, grpc: null, meaning: "The body is larger than `http.body_limit`." },
  uri_too_long: { status: 414, grpc: null, meaning: "A path segment of the URL is too long." },
  unsupported_media_type: { status: 415, grpc: null, meaning: "A body that is not `application/json`." },
  upgrade_required: {
    status: 426,
    grpc: null,
    meaning: "The endpoint is a WebSocket; connect with `Upgrade: websocket`.",
  },
  headers_too_large: { status: 431, grpc: null, meaning: "The request line plus headers exceed Node's limit." },
  rate_limited: {
    status: 429,
    grpc: "RESOURCE_EXHAUSTED",
    meaning: "Too many login attempts from this address (`gateway.auth_rate_limit_per_minute`); see Retry-After.",
  },
  origin_not_allowed: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning:
      "A browser Origin not in `http.allowed_origins` tried to open a terminal WebSocket or to sign in to the console.",
  },
  csrf_token_invalid: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning: "A console (cookie) request that changes state came without the session's `x-orch-csrf` header.",
  },
  console_unavailable: {
    status: 404,
    grpc: null,
    meaning: "The web console is not built or `http.console_dir` names no directory; the API still works.",
  },
  ticket_required: {
    status: 401,
    grpc: null,
    meaning: "A terminal WebSocket was opened without the ticket of its `ws_url`.",
  },

  // Operators and login (auth).
  invalid_token: { status: 401, grpc: "UNAUTHENTICATED", meaning: "The bearer token is invalid, expired or revoked." },
  unknown_operator: { status: 401, grpc: "UNAUTHENTICATED", meaning: "The operator is unknown or inactive." },
  invalid_login_code: {
    status: 401,
    grpc: "UNAUTHENTICATED",
    meaning: "The console login code is unknown or was already used; run `orchctl console` again.",
  },
  login_code_expired: {
    status: 401,
    grpc: "UNAUTHENTICATED",
    meaning: "The console login code is older than 60 s; run `orchctl console` again.",
  },
  passkeys_unavailable: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "Passkeys need `http.public_url` set to a URL with a host name (not an IP address).",
  },
  invalid_passkey_response: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The authenticator's WebAuthn response could not be verified.",
  },
  invalid_webauthn_challenge: {
    status: 401,
    grpc: "UNAUTHENTICATED",
    meaning: "The WebAuthn challenge is unknown, used or expired; start again.",
  },
  invalid_passkey: {
    status: 401,
    grpc: "UNAUTHENTICATED",
    meaning: "The passkey is not registered (or was removed), or its signature did not verify.",
  },
  passkey_exists: { status: 409, grpc: "ALREADY_EXISTS", meaning: "This authenticator is already registered." },
  passkey_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No such passkey for this operator." },
  identity_provider_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No identity provider has this name." },
  sso_unavailable: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning:
      "Single sign-on needs `auth.sso_keys` (ORCH_AUTH_SSO_KEYS), the keyring sealing client secrets, and `http.public_url` for the redirect.",
  },
  issuer_discovery_failed: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The issuer's /.well-known/openid-configuration could not be read or does not name this issuer.",
  },
  sso_provider_disabled: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "The identity provider is disabled for sign-in; an admin can enable it.",
  },
  sso_provider_unreachable: {
    status: 503,
    grpc: "UNAVAILABLE",
    meaning: "The identity provider did not answer; sign-in cannot complete now. Existing sessions follow docs/sso.md.",
  },
  sso_state_invalid: {
    status: 401,
    grpc: "UNAUTHENTICATED",
    meaning: "The sign-in's state is unknown, used or expired (a replayed or forged redirect); sign in again.",
  },
  sso_code_invalid: {
    status: 401,
    grpc: "UNAUTHENTICATED",
    meaning: "The provider refused the authorization code (used already, expired, or for another client).",
  },
  sso_token_invalid: {
    status: 401,
    grpc: "UNAUTHENTICATED",
    meaning:
      "The provider's ID token did not validate (signature, algorithm, issuer, audience, expiry or nonce); nothing was created.",
  },
  sso_claims_invalid: {
    status: 401,
    grpc: "UNAUTHENTICATED",
    meaning:
      "The ID token's claims lack a subject or carry unexpected types (groups not a list of strings, email not a string).",
  },
  sso_login_refused: {
    status: 401,
    grpc: "UNAUTHENTICATED",
    meaning: "The identity provider answered the sign-in with an error (the user cancelled or was refused there).",
  },
  sso_mapping_refused: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning:
      "No mapping rule of the provider matches the user's claims, or the email domain is not allowed; ask an admin.",
  },
  sso_device_expired: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "The device code expired or was denied at the provider; run `orchctl login --sso` again.",
  },
  sso_device_unsupported: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning:
      "The provider does not offer the device authorization grant; `orchctl login --sso` uses a loopback redirect instead.",
  },
  invalid_logout_token: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "The back-channel logout token did not validate (signature, issuer, audience, events claim, or a nonce present).",
  },
  sso_required: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning:
      "Operators of this role sign in through single sign-on (`auth.require_sso_for_roles`); key login is refused.",
  },
  // Approval policies and change requests (docs/approvals.md).
  invalid_approval_policy: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "An approval policy is malformed: approvals_required outside 1..10, an unknown action, a bad selector, no approvers, or an expiry outside 60..2592000 seconds (`field` names it).",
  },
  unknown_approver: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "An approver is not `operator:<existing operator>`, `role:admin`, `role:operator`, or `group:<group>` named by an identity provider's mapping rule or an SSO identity.",
  },
  approval_policy_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No approval policy has this name." },
  approval_not_required: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "No approval policy matches this action and these agents: execute it directly.",
  },
  change_request_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No change request has this id." },
  change_request_not_pending: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "The change request was already approved, denied, cancelled, expired or executed.",
  },
  change_request_expired: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "The change request was not decided in time and is now expired; submit it again.",
  },
  not_an_approver: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning: "The caller is not among the approvers of the policy that holds this change request.",
  },
  own_change_request: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning: "The requester may not approve their own change request (the policy's requester_may_approve is false).",
  },
  not_change_requester: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning: "Only the requester or an admin may cancel a change request.",
  },
  already_decided: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "The caller already approved or denied this change request.",
  },
  plan_changed: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning:
      "The request's content changed since it was submitted (modules, values or targets); nothing was executed and the approval was not recorded: re-plan it (POST /api/v1/change-requests/{id}/replan) and approve the new plan.",
  },
  replan_impossible: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning:
      "The change request cannot be planned again: what it acts on (the assignment, the agent or a module) is gone; cancel it.",
  },
  invalid_access_request: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "An access request is malformed: neither an agent selector nor a role, a role other than admin, a bad selector, no reason, a duration that is not a positive whole number, or an admin asking (`field` names it).",
  },
  access_duration_too_long: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The access asked for lasts longer than the policy's max_access_seconds (in the problem's details).",
  },
  access_requests_disabled: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "No approval policy covers access.request, so nobody could grant it: an admin adds one (selector *).",
  },
  access_grant_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No access grant has this id." },
  access_grant_ended: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "The access grant already expired or was revoked.",
  },
  break_glass_forbidden: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning: "Only an admin may execute without the approval a policy asks for (break-glass).",
  },
  break_glass_reason_required: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A break-glass execution needs a reason (`reason`, up to 500 characters): it is audited as critical.",
  },
  held_run_env: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning:
      "An approval policy holds this command run, and a held run cannot keep `env` values (they are never stored): drop `env`, or have an admin run it now with break-glass. Nothing was submitted.",
  },
  invalid_nonce: {
    status: 401,
    grpc: "UNAUTHENTICATED",
    meaning: "The login nonce is unknown, used or expired; request a new challenge.",
  },
  invalid_signature: {
    status: 401,
    grpc: "UNAUTHENTICATED",
    meaning: "The login signature does not verify with the public key.",
  },
  invalid_signature_format: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The signature is not a hex-encoded 64-byte Ed25519 signature.",
  },
  invalid_public_key: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The public key is not a hex-encoded 32-byte Ed25519 public key.",
  },
  invalid_selector: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "An agent selector does not parse (`position` points at the problem).",
  },
  admin_cannot_be_scoped: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "Admins reach every agent; an agent selector applies to the operator role only.",
  },
  operator_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No operator with this id." },
  operator_exists: { status: 409, grpc: "ALREADY_EXISTS", meaning: "An operator with this name exists already." },
  public_key_in_use: { status: 409, grpc: "ALREADY_EXISTS", meaning: "Another operator already uses this public key." },
  last_admin: { status: 409, grpc: "FAILED_PRECONDITION", meaning: "The last active admin cannot be removed." },

  // Agents: registry, tags, metrics, discovery, the link relay.
  agent_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No agent with this node id or name." },
  invalid_node_id: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The agent node id or name is missing or malformed.",
  },
  invalid_status: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A status filter or target status is not one of the allowed values.",
  },
  name_required: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "Approving an agent requires a name." },
  invalid_name: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The name does not follow the naming rule of its kind (agent: DNS label; secret: see docs/secrets.md).",
  },
  name_immutable: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "The agent is named already; its name cannot change.",
  },
  name_taken: { status: 409, grpc: "ALREADY_EXISTS", meaning: "Another agent has this name." },
  join_token_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No join token with this id." },
  invalid_ttl: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A join token's ttl_s is missing or outside the allowed range.",
  },
  invalid_max_uses: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "max_uses must be 0 (unlimited) or a positive count.",
  },
  invalid_name_prefix: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A join token's name_prefix must be a short DNS label.",
  },
  invalid_version: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "An orch-agent version must look like 1.2.3 (optionally -suffix).",
  },
  agent_version_not_found: {
    status: 404,
    grpc: "NOT_FOUND",
    meaning: "No orch-agent release with this version is published in the server's releases directory.",
  },
  agent_packages_unavailable: {
    status: 404,
    grpc: "NOT_FOUND",
    meaning:
      "The server publishes no signed orch-agent packages (releases.dir is empty, or no stored signature verifies); build them with npm run build:agent-package.",
  },
  release_signing_unavailable: {
    status: 503,
    grpc: "UNAVAILABLE",
    meaning:
      "The gateway has no release public key (releases.public_key_file), so it cannot check and serve the signed releases.",
  },
  agent_not_rejected: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "Only a rejected agent's record can be removed; reject it first.",
  },
  agent_not_approved: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "The agent is pending or rejected; the operation needs an approved agent.",
  },
  agent_not_connected: { status: 409, grpc: "FAILED_PRECONDITION", meaning: "The agent's link is down." },
  agent_busy: {
    status: 429,
    grpc: "RESOURCE_EXHAUSTED",
    meaning: "Too many requests are in flight to this agent; retry later.",
  },
  agent_timeout: { status: 504, grpc: "DEADLINE_EXCEEDED", meaning: "The agent did not answer in time." },
  agent_disconnected: {
    status: 503,
    grpc: "UNAVAILABLE",
    meaning: "The agent's link went down before it answered.",
  },
  invalid_tag_key: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "A tag key does not follow the tag key rule." },
  invalid_tag_value: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A tag value is too long or holds control characters.",
  },
  too_many_tags: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "An agent would have more tags than allowed." },
  tag_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "The agent has no tag with this key." },
  invalid_since: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "`since` is not a valid time." },
  invalid_until: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "`until` is not a valid time." },
  invalid_range: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "`since` is not before `until`." },
  no_metrics: { status: 404, grpc: "NOT_FOUND", meaning: "The agent has not reported metrics yet." },
  invalid_target: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A discovery target is not host:port or does not resolve.",
  },
  discovery_port_not_allowed: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "Discovery datagrams go to `agents.discovery_port` only.",
  },
  discovery_target_refused: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning:
      "The discovery target is outside `agents.discovery_networks` and of a kind (loopback, link-local, …) only those networks may reach.",
  },
  discovery_target_not_allowed: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning: "Unicast discovery outside `agents.discovery_networks` requires the admin role.",
  },
  discovery_failed: { status: 503, grpc: "UNAVAILABLE", meaning: "The discovery datagram could not be sent." },

  // State: modules, assignments, runs, operations, drift.
  module_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No state module with this name." },
  invalid_module: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The module content is empty or does not have the module's shape (`path`, `line` point at it).",
  },
  module_too_large: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "The module content exceeds 256 KiB." },
  invalid_yaml: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "The module content is not valid YAML." },
  name_mismatch: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The module's `name` differs from the name it is uploaded under.",
  },
  invalid_template: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "A template names an unknown namespace (a typo, e.g. `secret.` for `secrets.`); in a version-2 module also a template syntax error, an unknown tag, filter or variable, or a secret read by a computed name (`line`, `path` name where).",
  },
  secret_in_argument: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A secret reference is used where it would be visible (a command argument); see docs/modules.md.",
  },
  secret_in_path: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "A secret reference is used in a field that becomes a file name (path, symlink target, cron name); see docs/modules.md.",
  },
  unknown_resource_type: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A resource has a type no provider serves.",
  },
  duplicate_resource_id: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "Two resources of a module share an id." },
  unknown_requirement: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A resource's `requires` (or `onchanges`, `notify`, `watch`) names a resource that does not exist.",
  },
  cyclic_requires: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "Resources' `requires` (with `onchanges`, `notify`, `watch`) form a cycle (module upload, or the agent's own check).",
  },
  module_in_use: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "The module is used by assignments (`assignments` lists them); delete or change those first.",
  },
  unknown_parameter: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "An assignment passes a parameter none of its modules declares (`parameter` names it).",
  },
  missing_parameter: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A module's required parameter was not given (`parameter` names it).",
  },
  invalid_parameter: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A parameter's value is not of its declared type (`parameter` names it; the message says the type).",
  },
  module_breaks_assignments: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning:
      "The new module version would make assignments' parameters invalid (`assignments` lists them); change those first.",
  },
  assignment_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No assignment with this name." },
  assignment_exists: { status: 409, grpc: "ALREADY_EXISTS", meaning: "An assignment with this name exists already." },
  run_not_found: {
    status: 404,
    grpc: "NOT_FOUND",
    meaning: "No run with this id (a fleet command run, or a run of this assignment).",
  },
  invalid_batch: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: 'The fan-out batch is not a positive integer or a percentage such as "25%".',
  },
  operation_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No operation with this id (on this agent)." },
  drift_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No drift record for this agent or id." },
  no_snapshot: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "The agent has no successful apply to check drift against.",
  },

  // Values (layered data per agent: docs/modules.md#values).
  invalid_values: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "A value set or an agent's values are refused: not YAML or not a map, a key breaking the key rule, a selector on `defaults` or none on another set, a bad priority (`line`, `path` name where).",
  },
  secret_in_values: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "A value holds `{{ secrets.… }}`: secrets stay in the secret store; a module reads them as `{{ secrets.x }}` itself.",
  },
  values_too_large: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "A value set's YAML exceeds 256 KiB." },
  value_set_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No value set with this name." },
  value_set_scoped_operator: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning:
      "A scoped operator may not change value sets: a set reaches every agent its selector matches, inside the scope or not (an agent's own values are allowed).",
  },

  // Blobs (content-addressed files that modules name as file sources).
  invalid_digest: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A blob digest is not `sha256:` followed by 64 lowercase hex digits.",
  },
  blob_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No blob with this digest is stored." },
  blob_in_use: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning:
      "The blob is named by a module, or by a module version still kept for snapshots and drift checks (`modules` lists up to five): change or delete those modules first; an old version is kept until no snapshot uses it.",
  },
  unknown_blob: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "A file resource's `source:` names a blob that is not stored (`path` and `line` say where): upload it first (PUT /api/v1/blobs/<digest>).",
  },
  unknown_bundle_file: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "A `source: files/<path>` names a file the module's bundle does not have, or the module was uploaded as YAML, without files (`path` and `line` say where).",
  },
  invalid_bundle: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "The body is not a module bundle: not a tar, tar.gz or zip archive, corrupt, without module.yaml at its root (or under one top-level directory), or holding an entry that is not a file, directory or symlink (`entry` names it). Nothing was stored.",
  },
  unsafe_bundle_path: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "A bundle entry's path is absolute, has a `..` segment or appears twice, or a symlink points out of the bundle's tree (`entry` names it). Nothing was stored.",
  },
  bundle_too_large: {
    status: 413,
    grpc: null,
    meaning:
      "The bundle is larger than allowed, compressed or expanded, has too many entries, or expands more than 100 times its size (a zip bomb); `limit` says which. Nothing was stored.",
  },
  blob_too_large: {
    status: 413,
    // No gRPC code has 413: the service sends INVALID_ARGUMENT and the gateway answers this status.
    grpc: null,
    meaning: "The upload is larger than state.blob_max_bytes (`max_bytes` says how large); nothing was stored.",
  },
  blob_digest_mismatch: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "The uploaded bytes do not hash to the digest in the path (`actual` gives what they hash to); nothing was stored.",
  },
  blob_size_mismatch: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "The upload ended before (or went past) its declared Content-Length: a cut-off request. Nothing was stored.",
  },
  upload_not_found: {
    status: 404,
    grpc: "NOT_FOUND",
    meaning: "No blob upload in progress has this id (it was committed, aborted, or swept as stale).",
  },
  invalid_chunk: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "A blob chunk is out of order, empty (except to finish a zero-byte blob on an agent), larger than the service takes, or past the blob's size; or an offset lies outside the blob.",
  },

  // Git sources (modules and assignments synced from a repository).
  managed_by_source: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning:
      "The module, assignment, value set or approval policy is managed by a git source (`source`, `commit` name it): change it in the repository, or delete the source to release it.",
  },
  source_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No git source with this name." },
  source_exists: { status: 409, grpc: "ALREADY_EXISTS", meaning: "A git source with this name exists already." },
  invalid_source: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "The source's url, branch, path, interval or credentials are refused (`field` names which): credentials inside the URL, an unknown scheme, a token with an ssh URL.",
  },
  source_url_not_allowed: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "A file:// source URL, refused unless state.sources_allow_file_urls (ORCH_STATE_SOURCES_ALLOW_FILE_URLS) permits it.",
  },
  source_keys_unset: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning:
      "No keyring to seal source credentials and webhook secrets: set state.source_keys (ORCH_STATE_SOURCE_KEYS).",
  },
  source_unreachable: {
    status: 503,
    grpc: "UNAVAILABLE",
    meaning:
      "The source's repository could not be fetched (unreachable, refused the credentials, or timed out); retry.",
  },
  source_ref_not_found: {
    status: 404,
    grpc: "NOT_FOUND",
    meaning: "The branch or commit asked for is not in the repository.",
  },
  invalid_ref: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The ref is not a branch name or a commit SHA (git's ref-name rules).",
  },
  webhook_signature_invalid: {
    status: 401,
    grpc: "UNAUTHENTICATED",
    meaning:
      "The push notification's signature or token is missing or does not match the source's webhook secret (also the answer for a source that does not exist).",
  },
  invalid_webhook: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The push notification is not a GitHub, GitLab or Gitea webhook, or its body is not the JSON it says.",
  },

  // Fleet command runs (POST /api/v1/runs).
  invalid_command: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning:
      "The run's command, script or env is refused (`field` names which): both or neither given, a non-string argument, over 64 KiB, a bad variable name.",
  },
  invalid_timeout: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The run's timeout_s is not a whole number of seconds from 1 to 86400 (24 h).",
  },
  run_finished: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "The run has already ended, so there is nothing to cancel (the problem's `run_status` says how it ended).",
  },

  // State on the agent: what orch-agent refuses in an execute request.
  invalid_mode: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The agent was asked for a mode other than plan or apply.",
  },
  invalid_resource: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "The agent was sent a resource without an id." },
  duplicate_resource: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "The agent was sent the same resource twice." },
  unknown_requires: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The agent was sent a resource requiring one that is not in the request.",
  },

  // The agent link: what orch-agent answers to any request.
  invalid_payload: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The agent could not decode the request payload.",
  },
  unknown_method: {
    status: 500,
    grpc: "INTERNAL",
    meaning: "The agent does not serve this method (an agent older than the services).",
  },

  // Secrets.
  secret_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No secret with this name." },
  secret_exists: { status: 409, grpc: "ALREADY_EXISTS", meaning: "A secret with this name exists already." },
  invalid_value: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "The secret value is empty or not well-formed Unicode.",
  },
  value_too_large: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "The secret value is larger than allowed." },
  invalid_description: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "The description is too long." },
  invalid_expires_at: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "`expires_at` is not a valid time." },
  expires_at_in_past: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "`expires_at` is not in the future." },
  invalid_restriction: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A secret's restriction (which agents may receive it) is malformed (`field` names it).",
  },
  nothing_to_update: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "An update that changes nothing." },
  restriction_widening_requires_admin: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning: "Only an admin may widen or remove a secret's restriction; operators may only narrow it.",
  },
  expiry_extension_requires_admin: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning: "Only an admin may move a secret's expiry later or remove it; operators may only bring it forward.",
  },
  secret_expired: { status: 409, grpc: "FAILED_PRECONDITION", meaning: "The secret has expired." },
  secret_not_permitted: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning: "The secret's restriction does not admit this agent.",
  },
  secret_key_unavailable: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "The secret is sealed with a key that is not in the keyring (`ORCH_SECRETS_KEYS`).",
  },
  secret_undecryptable: {
    status: 500,
    grpc: "INTERNAL",
    meaning: "The secret does not decrypt with its key (corrupted data or a wrong key under a known id).",
  },

  // Terminals: sessions, tickets, transcripts, and the agent side of opening a PTY.
  session_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No terminal session with this id." },
  session_not_open: { status: 409, grpc: "FAILED_PRECONDITION", meaning: "The terminal session has ended." },
  transcript_not_found: {
    status: 404,
    grpc: "NOT_FOUND",
    meaning: "The session's transcript is not on the terminal service's storage.",
  },
  invalid_ticket: { status: 401, grpc: "UNAUTHENTICATED", meaning: "The terminal ticket is unknown or already used." },
  ticket_expired: {
    status: 401,
    grpc: "UNAUTHENTICATED",
    meaning: "The terminal ticket has expired; request a new one.",
  },
  terminal_pass_invalid: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning:
      "No terminal pass of the caller's for this agent: the change request is unknown, not an executed terminal.open, someone else's, for another agent or shell, or its pass expired.",
  },
  terminal_pass_used: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "The terminal pass of this change request already opened a session; it opens one only.",
  },
  ticket_operator_mismatch: {
    status: 403,
    grpc: "PERMISSION_DENIED",
    meaning: "The terminal ticket was issued to another operator.",
  },
  terminal_disabled: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "Remote terminals are disabled on this agent (`--no-terminal`).",
  },
  invalid_session_id: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "The agent was sent a malformed session id." },
  session_exists: { status: 409, grpc: "ALREADY_EXISTS", meaning: "The agent already runs a PTY for this session." },
  too_many_sessions: {
    status: 429,
    grpc: "RESOURCE_EXHAUSTED",
    meaning: "The agent runs as many terminal sessions as it allows.",
  },
  no_shell_configured: { status: 409, grpc: "FAILED_PRECONDITION", meaning: "The agent allows no shell." },
  shell_not_allowed: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "The shell is not in the agent's allow-list." },
  shell_not_found: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning: "The shell is not an executable on the agent.",
  },

  // Notifications, channels, maintenance windows.
  notification_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No notification with this id." },
  channel_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No notification channel with this id." },
  channel_exists: { status: 409, grpc: "ALREADY_EXISTS", meaning: "A channel with this name exists already." },
  invalid_channel_type: { status: 400, grpc: "INVALID_ARGUMENT", meaning: "The channel type is not a known one." },
  channel_type_immutable: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A channel's type cannot change; create a new channel instead.",
  },
  invalid_config: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A channel config field is invalid, or masked with no stored value to keep (`field` names it).",
  },
  channel_credentials_unavailable: {
    status: 409,
    grpc: "FAILED_PRECONDITION",
    meaning:
      "The channel's credentials were sealed with a key no longer in `ORCH_NOTIFY_CREDENTIALS_KEYS` (`key_id` names it).",
  },
  invalid_window: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A maintenance window does not start before it ends.",
  },
  window_not_found: { status: 404, grpc: "NOT_FOUND", meaning: "No maintenance window with this id." },

  // Audit.
  invalid_filter: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "An audit filter parameter is unknown, repeated, empty or malformed (`parameter` names it).",
  },
  invalid_timestamp: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "A time parameter is missing or not an RFC 3339 time after 1970.",
  },
  invalid_retention: {
    status: 400,
    grpc: "INVALID_ARGUMENT",
    meaning: "`retention_days` is not an integer in range, or null.",
  },
} as const satisfies Record<string, ErrorEntry>;

export type ErrorReason = keyof typeof ERROR_CATALOGUE;

/** Every catalogued code, sorted. */
export const ERROR_REASONS: readonly ErrorReason[] = (Object.keys(ERROR_CATALOGUE) as ErrorReason[]).sort();

/** The reasons an OrchError with status `C` may carry. */
export type ReasonFor<C extends GrpcCode> = {
  [R in ErrorReason]: (typeof ERROR_CATALOGUE)[R]["grpc"] extends C ? R : never;
}[ErrorReason];

export function isErrorReason(v: unknown): v is ErrorReason {
  return typeof v === "string" && Object.hasOwn(ERROR_CATALOGUE, v);
}

/** The HTTP status of a catalogued code. */
export const errorStatus = (reason: ErrorReason): number => ERROR_CATALOGUE[reason].status;
