import { fromBinary } from "@bufbuild/protobuf";
import { AuditEventSchema, RevocationSchema, SsoService, type AuditEvent, type Revocation } from "@orch/contracts";
import { OrchError, rpcClient, type Actor } from "@orch/kit";
import { eventually, type NatsHandle, type OidcTestProvider } from "@orch/kit/testing";

/** A bus client of the SSO RPCs, as the gateway holds one. */
export async function ssoClient(nats: NatsHandle, name = "sso-client") {
  return rpcClient(await nats.connect(name), "auth", SsoService, { timeoutMs: 20_000 });
}
export type SsoClient = Awaited<ReturnType<typeof ssoClient>>;

/** Every audit event (auth.*, operator.*, identity_provider.*) and every revocation broadcast. */
export async function auditObserver(nats: NatsHandle) {
  const nc = await nats.connect("sso-observer");
  const revocations: Revocation[] = [];
  const events: AuditEvent[] = [];
  nc.subscribe("orch.auth.revoked", {
    callback: (_e, m) => void revocations.push(fromBinary(RevocationSchema, m.data)),
  });
  nc.subscribe("audit.>", { callback: (_e, m) => void events.push(fromBinary(AuditEventSchema, m.data)) });
  await nc.flush();
  return { revocations, events };
}

export const reasonOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    if (err instanceof OrchError) return `${err.code}/${err.reason}`;
    throw err;
  }
  return "ok";
};

export const meta = (e: AuditEvent) => e.metadata as Record<string, unknown>;

export function eventsOf(
  bus: { events: AuditEvent[] },
  type: string,
  pred: (m: Record<string, unknown>) => boolean = () => true,
) {
  return eventually(() => {
    const evs = bus.events.filter((e) => e.eventType === type && pred(meta(e)));
    return evs.length > 0 ? evs : undefined;
  });
}

export const webRules = [
  { name: "admins", groups: ["ops-admin"], role: "admin" },
  { name: "web", groups: ["web"], role: "operator", agentSelector: "role=web" },
  { name: "db", groups: ["db"], role: "operator", agentSelector: "role=db" },
];

export async function putProvider(
  sso: SsoClient,
  op: OidcTestProvider,
  actor: Actor,
  o: { name?: string; refreshIntervalSeconds?: number; enabled?: boolean; issuer?: string } = {},
) {
  return sso.putIdentityProvider(
    {
      name: o.name ?? "corp",
      displayName: "Corp SSO",
      issuer: o.issuer ?? op.issuer,
      clientId: op.clientId,
      clientSecret: op.clientSecret,
      rules: webRules,
      refreshIntervalSeconds: o.refreshIntervalSeconds ?? 0,
      enabled: o.enabled ?? true,
    },
    { actor },
  );
}

/** Begins a code flow and drives the provider's login page: the redirect back, not yet redeemed. */
export async function authorize(
  sso: SsoClient,
  op: OidcTestProvider,
  login: string,
  o: { provider?: string; client?: "console" | "cli" } = {},
) {
  const client = o.client ?? "console";
  const begun = await sso.beginSsoLogin({
    provider: o.provider ?? "corp",
    redirectUri: client === "cli" ? "http://127.0.0.1:45999/callback" : "https://orch.example/api/v1/auth/sso/callback",
    client,
    returnTo: client === "console" ? "/agents" : "",
    remoteAddress: "192.0.2.9",
  });
  const back = await op.signInViaHttp(begun.authorizationUrl, login);
  const nonce = new URL(begun.authorizationUrl).searchParams.get("nonce") ?? "";
  return { begun, back, nonce };
}

export async function signIn(
  sso: SsoClient,
  op: OidcTestProvider,
  login: string,
  o: { provider?: string; client?: "console" | "cli" } = {},
) {
  const { back } = await authorize(sso, op, login, o);
  return sso.finishSsoLogin({ callbackUrl: back, remoteAddress: "192.0.2.9" });
}
