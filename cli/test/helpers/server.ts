/**
 * A small in-test orchestrator API (node:http) implementing the auth challenge/verify flow with
 * real Ed25519 verification (node:crypto), operators CRUD with cursor paging, status, and
 * problem+json errors. Only for CLI unit tests; the real server e2e lives elsewhere.
 */
import { createPublicKey, randomBytes, randomUUID, verify } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface TestOperator {
  id: string;
  name: string;
  role: "admin" | "operator";
  public_key: string;
  active: boolean;
  created_at: string;
  created_by: string | null;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  authorization: string | undefined;
  body: unknown;
}

const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

function verifyEd25519(publicKeyHex: string, data: Buffer, sigHex: string): boolean {
  try {
    const key = createPublicKey({
      key: Buffer.concat([SPKI_PREFIX, Buffer.from(publicKeyHex, "hex")]),
      format: "der",
      type: "spki",
    });
    return verify(null, data, key, Buffer.from(sigHex, "hex"));
  } catch {
    return false;
  }
}

export class TestServer {
  readonly operators: TestOperator[] = [];
  readonly tokens = new Map<string, { operatorId: string; expiresAt: number }>();
  readonly challenges = new Map<string, { publicKey: string; expiresAt: number }>();
  readonly requests: RecordedRequest[] = [];
  tokenTtlMs = 3600_000;
  /** Extra per-path handlers (tests that need odd responses). */
  readonly overrides = new Map<string, (req: IncomingMessage, res: ServerResponse) => void>();
  private server: Server | undefined;
  url = "";

  addOperator(
    name: string,
    publicKeyHex: string,
    role: "admin" | "operator" = "operator",
    active = true,
  ): TestOperator {
    const op: TestOperator = {
      id: randomUUID(),
      name,
      role,
      public_key: publicKeyHex,
      active,
      created_at: new Date(Date.UTC(2025, 0, 1 + this.operators.length)).toISOString(),
      created_by: null,
    };
    this.operators.push(op);
    return op;
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err) => this.problem(res, 500, "internal", String(err)));
    });
    await new Promise<void>((r) => this.server!.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => this.server?.close(() => r()) ?? r());
  }

  private problem(res: ServerResponse, status: number, code: string, detail: string): void {
    res.writeHead(status, { "content-type": "application/problem+json" });
    res.end(
      JSON.stringify({
        type: `https://orch.example/problems/${code}`,
        title: code.replace(/_/g, " "),
        status,
        detail,
        code,
      }),
    );
  }

  private send(res: ServerResponse, status: number, body?: unknown): void {
    if (body === undefined) {
      res.writeHead(status);
      res.end();
      return;
    }
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  }

  private caller(req: IncomingMessage): TestOperator | undefined {
    const m = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "");
    const t = m && this.tokens.get(m[1]!);
    if (!t || t.expiresAt <= Date.now()) return undefined;
    return this.operators.find((o) => o.id === t.operatorId && o.active);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://x");
    let raw = "";
    for await (const chunk of req) raw += chunk;
    let body: unknown;
    if (raw) {
      try {
        body = JSON.parse(raw);
      } catch {
        return this.problem(res, 400, "invalid_json", "request body is not JSON");
      }
    }
    this.requests.push({
      method: req.method ?? "",
      path: url.pathname,
      query: url.searchParams,
      authorization: req.headers.authorization,
      body,
    });
    const override = this.overrides.get(`${req.method} ${url.pathname}`);
    if (override) return override(req, res);

    const p = url.pathname.replace(/^\/api\/v1/, "");
    const b = (body ?? {}) as Record<string, string>;
    if (!url.pathname.startsWith("/api/v1/")) return this.problem(res, 404, "not_found", "no such route");

    if (req.method === "POST" && p === "/auth/challenge") {
      if (!/^[0-9a-f]{64}$/.test(b.public_key ?? ""))
        return this.problem(res, 400, "invalid_public_key", "public_key must be 64 lowercase hex characters");
      if (!this.operators.some((o) => o.public_key === b.public_key && o.active))
        return this.problem(res, 401, "unknown_operator", "unknown or inactive operator");
      const nonce = randomBytes(32).toString("hex");
      const expiresAt = Date.now() + 60_000;
      this.challenges.set(nonce, { publicKey: b.public_key!, expiresAt });
      return this.send(res, 200, { nonce, expires_at: new Date(expiresAt).toISOString() });
    }
    if (req.method === "POST" && p === "/auth/verify") {
      const ch = this.challenges.get(b.nonce ?? "");
      this.challenges.delete(b.nonce ?? "");
      if (!ch || ch.publicKey !== b.public_key || ch.expiresAt <= Date.now())
        return this.problem(res, 401, "invalid_challenge", "unknown or expired challenge");
      if (!verifyEd25519(b.public_key!, Buffer.from(b.nonce!, "hex"), b.signature ?? ""))
        return this.problem(res, 401, "invalid_signature", "signature verification failed");
      const op = this.operators.find((o) => o.public_key === b.public_key && o.active);
      if (!op) return this.problem(res, 401, "unknown_operator", "no active operator has this public key");
      const token = randomBytes(24).toString("base64url");
      const expiresAt = Date.now() + this.tokenTtlMs;
      this.tokens.set(token, { operatorId: op.id, expiresAt });
      return this.send(res, 200, { token, expires_at: new Date(expiresAt).toISOString(), operator: op });
    }
    if (req.method === "GET" && p === "/status") {
      return this.send(res, 200, {
        status: "degraded",
        protocol_version: 1,
        api_version: "v1",
        services: { gateway: "ok", auth: "ok", scheduler: "unavailable" },
      });
    }

    const me = this.caller(req);
    if (!me) return this.problem(res, 401, "unauthenticated", "missing, expired or revoked token");

    if (req.method === "POST" && p === "/auth/logout") {
      this.tokens.delete(req.headers.authorization!.slice(7));
      return this.send(res, 204);
    }
    if (req.method === "GET" && p === "/auth/whoami") return this.send(res, 200, me);

    if (p === "/operators" || p.startsWith("/operators/")) {
      if (me.role !== "admin")
        return this.problem(res, 403, "admin_required", "this operation requires the admin role");
      if (req.method === "GET" && p === "/operators") {
        const limit = Number(url.searchParams.get("limit") ?? 50);
        const start = Number(url.searchParams.get("cursor") ?? 0);
        const page = this.operators.slice(start, start + limit);
        const more = start + limit < this.operators.length;
        return this.send(res, 200, {
          operators: page,
          has_more: more,
          next_cursor: more ? String(start + limit) : null,
        });
      }
      if (req.method === "POST" && p === "/operators") {
        if (!b.name || !/^[0-9a-f]{64}$/.test(b.public_key ?? ""))
          return this.problem(res, 400, "invalid_argument", "name and a hex public_key are required");
        if (b.role !== "admin" && b.role !== "operator")
          return this.problem(res, 400, "invalid_role", "role must be admin or operator");
        if (this.operators.some((o) => o.name === b.name))
          return this.problem(res, 409, "operator_exists", `operator ${b.name} already exists`);
        const op = this.addOperator(b.name, b.public_key!, b.role);
        op.created_by = me.id;
        return this.send(res, 201, op);
      }
      const ref = decodeURIComponent(p.slice("/operators/".length));
      const idx = this.operators.findIndex((o) => o.id === ref || (req.method === "GET" && o.name === ref));
      if (idx < 0) return this.problem(res, 404, "operator_not_found", `no operator ${ref}`);
      if (req.method === "GET") return this.send(res, 200, this.operators[idx]);
      if (req.method === "DELETE") {
        this.operators.splice(idx, 1);
        return this.send(res, 204);
      }
    }
    return this.problem(res, 404, "not_found", "no such route");
  }
}
