/**
 * Typed client for the orchestrator API, generated from the gateway's OpenAPI document
 * (`npm run generate -w @orch/client`). Browser-safe: the CLI and the web console share it.
 *
 *   const api = createOrchClient({ baseUrl: "https://orch.example.com", token });
 *   const agent = unwrap(await api.GET("/api/v1/agents/{node_id}", { params: { path: { node_id } } }));
 */
import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./gen/api.js";

export type { components, paths } from "./gen/api.js";

export type OrchClient = Client<paths>;

export interface OrchClientOptions {
  /** The server's origin, e.g. `https://orch.example.com` (paths carry the `/api/v1` prefix). */
  baseUrl: string;
  /** Bearer token from `POST /api/v1/auth/verify`. */
  token?: string | undefined;
  /** Replaces the global fetch (the CLI supplies its own transport). */
  fetch?: ((input: Request) => Promise<Response>) | undefined;
}

export function createOrchClient(opts: OrchClientOptions): OrchClient {
  return createClient<paths>({
    baseUrl: opts.baseUrl.replace(/\/+$/, ""),
    ...(opts.token ? { headers: { authorization: `Bearer ${opts.token}` } } : {}),
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
}

// ---- types derived from the generated document ----

export type ApiPath = keyof paths;
export type ApiMethod = "get" | "put" | "post" | "delete" | "patch";
type Operation<P extends ApiPath, M extends ApiMethod> = NonNullable<paths[P][M]>;
type JsonContent<R> = R extends { content: { "application/json": infer B } } ? B : undefined;
type Responses<P extends ApiPath, M extends ApiMethod> = Operation<P, M> extends { responses: infer R } ? R : never;

/** The JSON body of an operation's 2xx answers (`undefined` for 204). */
export type ResponseBody<P extends ApiPath, M extends ApiMethod> = {
  [S in keyof Responses<P, M>]: S extends 200 | 201 | 202 ? JsonContent<Responses<P, M>[S]> : never;
}[keyof Responses<P, M>];

/** The JSON request body of an operation. */
export type RequestBody<P extends ApiPath, M extends ApiMethod> =
  Operation<P, M> extends {
    requestBody?: { content: { "application/json": infer B } };
  }
    ? B
    : never;

/** The query parameters of an operation. */
export type QueryParams<P extends ApiPath, M extends ApiMethod> =
  Operation<P, M> extends {
    parameters: { query?: infer Q };
  }
    ? NonNullable<Q>
    : never;

type Item<A> = A extends readonly (infer T)[] ? T : never;

export type Status = ResponseBody<"/api/v1/status", "get">;
export type Challenge = ResponseBody<"/api/v1/auth/challenge", "post">;
export type Verified = ResponseBody<"/api/v1/auth/verify", "post">;
export type Whoami = ResponseBody<"/api/v1/auth/whoami", "get">;

export type Agent = ResponseBody<"/api/v1/agents/{node_id}", "get">;
export type AgentPage = ResponseBody<"/api/v1/agents", "get">;
export type AgentAttributes = ResponseBody<"/api/v1/agents/{node_id}/attributes", "get">;
export type MetricsSample = Item<ResponseBody<"/api/v1/agents/{node_id}/metrics", "get">["samples"]>;
export type MetricsLatest = ResponseBody<"/api/v1/agents/{node_id}/metrics/latest", "get">;
export type MetricsHistory = ResponseBody<"/api/v1/agents/{node_id}/metrics", "get">;
export type TagIndex = ResponseBody<"/api/v1/tags", "get">;
export type Discovery = ResponseBody<"/api/v1/discover", "post">;

export type Operator = ResponseBody<"/api/v1/operators/{operator_id}", "get">;
export type OperatorPage = ResponseBody<"/api/v1/operators", "get">;

export type SecretMeta = ResponseBody<"/api/v1/secrets/{name}", "get">;
export type SecretPage = ResponseBody<"/api/v1/secrets", "get">;
export type Reencryption = ResponseBody<"/api/v1/secrets/reencrypt", "post">;

export type Channel = ResponseBody<"/api/v1/channels/{id}", "get">;
export type ChannelPage = ResponseBody<"/api/v1/channels", "get">;
export type ChannelTest = ResponseBody<"/api/v1/channels/{id}/test", "post">;
export type DeliveryPage = ResponseBody<"/api/v1/channels/{id}/deliveries", "get">;

export type Notification = Item<NotificationPage["notifications"]>;
export type NotificationPage = ResponseBody<"/api/v1/notifications", "get">;
export type MaintenanceWindow = ResponseBody<"/api/v1/maintenance-windows/{id}", "get">;
export type MaintenanceWindowPage = ResponseBody<"/api/v1/maintenance-windows", "get">;

export type AuditEvent = Item<AuditPage["events"]>;
export type AuditPage = ResponseBody<"/api/v1/audit", "get">;
export type AuditRetention = ResponseBody<"/api/v1/audit/retention", "get">;

export type ModuleInfo = ResponseBody<"/api/v1/modules/{name}", "get">;
export type ModulePage = ResponseBody<"/api/v1/modules", "get">;
export type BlobInfo = ResponseBody<"/api/v1/blobs/{digest}", "get">;
export type BlobPage = ResponseBody<"/api/v1/blobs", "get">;
export type ValueSet = ResponseBody<"/api/v1/values/{name}", "get">;
export type ValueSetPage = ResponseBody<"/api/v1/values", "get">;
export type AgentValues = ResponseBody<"/api/v1/agents/{node_id}/values", "get">;
export type Assignment = ResponseBody<"/api/v1/assignments/{name}", "get">;
export type AssignmentPage = ResponseBody<"/api/v1/assignments", "get">;
export type AssignmentRun = ResponseBody<"/api/v1/assignments/{name}/runs/{run_id}", "get">;
export type AssignmentRunPage = ResponseBody<"/api/v1/assignments/{name}/runs", "get">;
export type StateOperation = ResponseBody<"/api/v1/state/operations/{operation_id}", "get">;
export type StateOperationPage = ResponseBody<"/api/v1/state/operations", "get">;
export type OperationOutput = ResponseBody<"/api/v1/agents/{node_id}/state/operations/{operation_id}/output", "get">;
export type BelievedState = ResponseBody<"/api/v1/agents/{node_id}/state", "get">;
export type DriftRecord = ResponseBody<"/api/v1/agents/{node_id}/drift/latest", "get">;
export type DriftCheck = ResponseBody<"/api/v1/agents/{node_id}/drift", "post">;

export type TerminalSession = ResponseBody<"/api/v1/terminal/session/{session_id}", "get">;
export type OpenedTerminal = ResponseBody<"/api/v1/terminal/{node_id}", "post">;

// ---- problem+json ----

type ProblemBody = components["schemas"]["Problem"];
/** A catalogued error code (docs/errors.md), or `http_<status>` for an answer that was not problem+json. */
export type ProblemCode = ProblemBody["code"] | `http_${number}`;
/** RFC 9457 problem details as the API sends them; `code` is the stable machine-readable reason. */
export type Problem = {
  [K in keyof ProblemBody as string extends K ? never : K]: K extends "code" ? ProblemCode : ProblemBody[K];
} & { [key: string]: unknown };

export function isProblem(value: unknown): value is Problem {
  if (!value || typeof value !== "object") return false;
  const v = value as Record<string, unknown>;
  return typeof v.code === "string" && typeof v.detail === "string";
}

/** A problem for any failed response, synthesised when the body is not problem+json. */
export function problemOf(response: Pick<Response, "status" | "statusText">, body: unknown): Problem {
  if (body && typeof body === "object") {
    const b = body as Partial<Problem>;
    if (typeof b.detail === "string" || typeof b.title === "string") {
      return {
        ...b,
        type: b.type ?? "about:blank",
        title: b.title ?? response.statusText,
        status: b.status ?? response.status,
        detail: b.detail ?? b.title ?? response.statusText,
        code: b.code ?? `http_${response.status}`,
      };
    }
  }
  const text = typeof body === "string" ? body.trim().slice(0, 200) : "";
  return {
    type: "about:blank",
    title: response.statusText || `HTTP ${response.status}`,
    status: response.status,
    detail: text || `${response.status} ${response.statusText}`.trim(),
    code: `http_${response.status}`,
  };
}

/** Thrown by `unwrap` for a non-2xx answer. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(readonly problem: Problem) {
    super(problem.detail);
    this.name = "ApiError";
    this.status = problem.status;
    this.code = problem.code;
  }
}

/** The data of a successful call, or an `ApiError` carrying the problem. */
export function unwrap<D>(result: { data?: D; error?: unknown; response: Response }): D {
  if (result.response.ok) return result.data as D;
  throw new ApiError(problemOf(result.response, result.error));
}

export { followPages, PagingError } from "./pages.js";
