// A real OpenID Provider for tests: the `oidc-provider` package (certified by the OpenID Foundation)
// in-process on loopback, so single sign-on is tested against the standard, not against a mock.
//
//   const op = await startOidcProvider({ refreshTokenTtlSeconds?, redirectUris?, backchannelLogoutUri? });
//   op.issuer                      http://127.0.0.1:<port> (discovery at /.well-known/openid-configuration)
//   op.clientId, op.clientSecret   one confidential client: authorization_code (PKCE required),
//                                  refresh_token, device_code; any loopback redirect_uri is accepted
//                                  besides `redirectUris` and op.allowRedirectUri(uri) (e.g. a gateway's
//                                  public callback known only once it listens); a refresh token is
//                                  always issued
//   op.users                       Map<sub, OidcTestUser>; setUser / setGroups / disableUser / enableUser
//                                  (a disabled or missing user makes refresh grants fail: invalid_grant)
//   op.signInViaHttp(authUrl, sub) drives the provider's own login + consent pages with fetch and a
//                                  cookie jar; resolves to the URL the provider redirects the client to
//   op.approveDeviceViaHttp(verificationUriComplete, sub)  the same for the device flow (RFC 8628)
//   op.logoutToken(claims?, opts?) a Back-Channel Logout token signed with the provider's key (or
//                                  forged: opts.alg "none", opts.key another key)
//   op.mintIdToken(claims, opts?)  an ID token signed like the provider's (iss, aud, iat, exp filled in)
//   op.intercept                   (req) => canned response | undefined, to fake an endpoint (a forged
//                                  token response, a discovery naming another issuer)
//   op.requests                    "METHOD /path" of every request received
//   op.down() / op.up()            stop answering (connection refused) / answer again on the same port
//   op.stop()
import { generateKeyPairSync, createSign, randomBytes, type KeyObject } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { freePort } from "./ports.js";

export interface OidcTestUser {
  email?: string;
  emailVerified?: boolean;
  preferredUsername?: string;
  groups?: string[];
  disabled?: boolean;
  /** Claims merged last (to send unexpected types, e.g. `{ groups: "admins" }`). */
  extraClaims?: Record<string, unknown>;
}

export interface OidcInterceptedResponse {
  status?: number;
  body: unknown;
}

export interface OidcTestProvider {
  readonly issuer: string;
  readonly port: number;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly users: Map<string, OidcTestUser>;
  readonly requests: string[];
  /** The provider's public signing key set (what its jwks_uri serves). */
  readonly jwks: { keys: Record<string, unknown>[] };
  intercept: ((req: { method: string; path: string }) => OidcInterceptedResponse | undefined) | undefined;
  /** Accepts one more redirect_uri from now on (exact match). */
  allowRedirectUri(uri: string): void;
  setUser(sub: string, user: OidcTestUser): void;
  setGroups(sub: string, groups: string[]): void;
  disableUser(sub: string): void;
  enableUser(sub: string): void;
  signInViaHttp(authorizationUrl: string, login: string): Promise<string>;
  approveDeviceViaHttp(verificationUriComplete: string, login: string): Promise<void>;
  logoutToken(claims?: Record<string, unknown>, opts?: OidcSignOptions): string;
  mintIdToken(claims: Record<string, unknown>, opts?: OidcSignOptions): string;
  down(): Promise<void>;
  up(): Promise<void>;
  stop(): Promise<void>;
}

export interface OidcSignOptions {
  /** "none" forges an unsigned token. */
  alg?: "none" | "RS256";
  /** Another RSA private key (a forged signature); default the provider's own. */
  key?: KeyObject;
  kid?: string;
}

export interface StartOidcProviderOptions {
  refreshTokenTtlSeconds?: number;
  /** Redirect URIs besides loopback ones (e.g. a gateway's public callback). */
  redirectUris?: string[];
  backchannelLogoutUri?: string;
}

const KID = "orch-test-key";

function b64url(data: Buffer | string): string {
  return Buffer.from(data).toString("base64url");
}

/** Signs a compact JWS with RS256 (node:crypto), or leaves it unsigned for `alg: none`. */
export function signTestJwt(payload: Record<string, unknown>, key: KeyObject, opts: OidcSignOptions = {}): string {
  const alg = opts.alg ?? "RS256";
  const header = alg === "none" ? { alg, typ: "JWT" } : { alg, typ: "JWT", kid: opts.kid ?? KID };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  if (alg === "none") return `${input}.`;
  const signature = createSign("RSA-SHA256")
    .update(input)
    .sign(opts.key ?? key);
  return `${input}.${b64url(signature)}`;
}

function isLoopbackUri(value: string): boolean {
  try {
    const u = new URL(value);
    return u.protocol === "http:" && ["127.0.0.1", "[::1]", "localhost"].includes(u.hostname);
  } catch {
    return false;
  }
}

type Jar = Map<string, string>;

function storeCookies(jar: Jar, res: Response): void {
  for (const line of res.headers.getSetCookie()) {
    const [pair] = line.split(";");
    const eq = pair?.indexOf("=") ?? -1;
    if (!pair || eq < 0) continue;
    const name = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    if (/expires=Thu, 01 Jan 1970/i.test(line) || value === "") jar.delete(name);
    else jar.set(name, value);
  }
}

function decodeHtml(s: string): string {
  return s
    .replaceAll("&amp;", "&")
    .replaceAll("&#x2F;", "/")
    .replaceAll("&#x3D;", "=")
    .replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">");
}

/** A page's visible text, for error messages. */
function pageText(html: string): string {
  const body = html.replace(/<style[\s\S]*?<\/style>|<script[\s\S]*?<\/script>/gi, "").replace(/<[^>]+>/g, " ");
  return decodeHtml(body).replace(/\s+/g, " ").trim().slice(0, 400);
}

interface HtmlForm {
  action: string;
  fields: Map<string, string>;
}

/** The page's first form: its action and its named inputs (the provider's pages are simple). */
function parseForm(html: string, base: string): HtmlForm | undefined {
  const form = /<form\b([^>]*)>([\s\S]*?)<\/form>/i.exec(html);
  if (!form) return undefined;
  const action = /action="([^"]*)"/i.exec(form[1] ?? "")?.[1] ?? base;
  const fields = new Map<string, string>();
  for (const input of (form[2] ?? "").matchAll(/<input\b([^>]*)>/gi)) {
    const attrs = input[1] ?? "";
    const name = /name="([^"]*)"/i.exec(attrs)?.[1];
    if (!name) continue;
    fields.set(name, decodeHtml(/value="([^"]*)"/i.exec(attrs)?.[1] ?? ""));
  }
  return { action: new URL(decodeHtml(action), base).toString(), fields };
}

/**
 * Follows redirects and submits the provider's forms (login: any password; consent: continue)
 * until a redirect leaves the provider's origin (returned) or a page without a form is reached.
 */
async function drive(issuer: string, start: string, login: string): Promise<{ left?: string; html: string }> {
  const origin = new URL(issuer).origin;
  const jar: Jar = new Map();
  let url = start;
  let init: { method: string; body?: URLSearchParams } = { method: "GET" };
  for (let step = 0; step < 30; step++) {
    if (new URL(url).origin !== origin) return { left: url, html: "" };
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
    const res = await fetch(url, { ...init, redirect: "manual", headers: cookie ? { cookie } : {} });
    storeCookies(jar, res);
    const location = res.headers.get("location");
    if (res.status >= 300 && res.status < 400 && location) {
      url = new URL(location, url).toString();
      init = { method: "GET" };
      continue;
    }
    const html = await res.text();
    const form = parseForm(html, url);
    if (!form) return { html };
    if (form.fields.has("login")) {
      form.fields.set("login", login);
      form.fields.set("password", "any");
    }
    url = form.action;
    init = { method: "POST", body: new URLSearchParams([...form.fields]) };
  }
  throw new Error("oidc test provider: too many steps");
}

function accountClaims(sub: string, user: OidcTestUser): Record<string, unknown> {
  const claims: Record<string, unknown> = { sub };
  if (user.email !== undefined) claims.email = user.email;
  claims.email_verified = user.emailVerified ?? true;
  if (user.preferredUsername !== undefined) claims.preferred_username = user.preferredUsername;
  claims.groups = user.groups ?? [];
  return { ...claims, ...user.extraClaims };
}

function providerConfiguration(
  opts: StartOidcProviderOptions,
  client: { id: string; secret: string },
  privateJwk: Record<string, unknown>,
  users: Map<string, OidcTestUser>,
): Record<string, unknown> {
  const allClaims = ["sub", "email", "email_verified", "preferred_username", "groups"];
  return {
    clients: [
      {
        client_id: client.id,
        client_secret: client.secret,
        redirect_uris: ["http://127.0.0.1/callback", ...(opts.redirectUris ?? [])],
        grant_types: ["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
        ...(opts.backchannelLogoutUri ? { backchannel_logout_uri: opts.backchannelLogoutUri } : {}),
      },
    ],
    jwks: { keys: [privateJwk] },
    cookies: { keys: [randomBytes(16).toString("hex")] },
    claims: { openid: allClaims, email: ["email", "email_verified"], profile: ["preferred_username"] },
    scopes: ["openid", "offline_access", "email", "profile"],
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    issueRefreshToken: async () => true,
    rotateRefreshToken: true,
    clientBasedCORS: () => false,
    features: {
      devInteractions: { enabled: true },
      deviceFlow: { enabled: true },
      backchannelLogout: { enabled: true },
      revocation: { enabled: true },
      userinfo: { enabled: true },
    },
    ttl: {
      AccessToken: 3600,
      AuthorizationCode: 60,
      IdToken: 3600,
      DeviceCode: 600,
      Interaction: 3600,
      Session: 86_400,
      Grant: 86_400,
      RefreshToken: opts.refreshTokenTtlSeconds ?? 86_400,
    },
    async findAccount(_ctx: unknown, sub: string) {
      const user = users.get(sub);
      if (!user || user.disabled) return undefined;
      return { accountId: sub, claims: async () => accountClaims(sub, users.get(sub) ?? user) };
    },
  };
}

// oidc-provider ships no type declarations; a computed specifier keeps the import `any`-typed.
const OIDC_PROVIDER_MODULE: string = "oidc-provider";

export async function startOidcProvider(opts: StartOidcProviderOptions = {}): Promise<OidcTestProvider> {
  const { default: Provider } = await import(OIDC_PROVIDER_MODULE);
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const privateJwk = { ...privateKey.export({ format: "jwk" }), kid: KID, alg: "RS256", use: "sig" };
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...publicJwk } = privateJwk;
  const client = { id: "orch-test", secret: randomBytes(24).toString("base64url") };
  const users = new Map<string, OidcTestUser>();
  const provider = new Provider(issuer, providerConfiguration(opts, client, privateJwk, users));
  // Any loopback redirect is fine (RFC 8252: the CLI picks its port at run time).
  const extraRedirects = new Set(opts.redirectUris ?? []);
  const proto = provider.Client.prototype;
  const registered = proto.redirectUriAllowed;
  proto.redirectUriAllowed = function (this: unknown, value: string) {
    return isLoopbackUri(value) || extraRedirects.has(value) || registered.call(this, value);
  };
  const handler = provider.callback() as (req: IncomingMessage, res: ServerResponse) => void;
  const requests: string[] = [];
  let server: Server | undefined;
  const op: OidcTestProvider = {
    issuer,
    port,
    clientId: client.id,
    clientSecret: client.secret,
    users,
    requests,
    jwks: { keys: [publicJwk] },
    intercept: undefined,
    allowRedirectUri: (uri) => void extraRedirects.add(uri),
    setUser: (sub, user) => void users.set(sub, { ...user }),
    setGroups(sub, groups) {
      users.set(sub, { ...users.get(sub), groups });
    },
    disableUser(sub) {
      users.set(sub, { ...users.get(sub), disabled: true });
    },
    enableUser(sub) {
      users.set(sub, { ...users.get(sub), disabled: false });
    },
    async signInViaHttp(authorizationUrl, login) {
      const out = await drive(issuer, authorizationUrl, login);
      if (!out.left) throw new Error(`oidc test provider: sign-in ended on a page: ${pageText(out.html)}`);
      return out.left;
    },
    async approveDeviceViaHttp(verificationUriComplete, login) {
      const out = await drive(issuer, verificationUriComplete, login);
      if (out.left || !out.html.includes("Sign-in Success")) {
        throw new Error(`oidc test provider: device approval failed: ${out.left ?? pageText(out.html)}`);
      }
    },
    logoutToken(claims = {}, signOpts = {}) {
      const now = Math.floor(Date.now() / 1000);
      const payload = {
        iss: issuer,
        aud: client.id,
        iat: now,
        exp: now + 120,
        jti: randomBytes(8).toString("hex"),
        events: { "http://schemas.openid.net/event/backchannel-logout": {} },
        ...claims,
      };
      return signTestJwt(payload, privateKey, signOpts);
    },
    mintIdToken(claims, signOpts = {}) {
      const now = Math.floor(Date.now() / 1000);
      return signTestJwt({ iss: issuer, aud: client.id, iat: now, exp: now + 300, ...claims }, privateKey, signOpts);
    },
    async up() {
      if (server) return;
      const s = createServer((req, res) => {
        const path = (req.url ?? "/").split("?")[0] ?? "/";
        requests.push(`${req.method} ${path}`);
        const canned = op.intercept?.({ method: req.method ?? "GET", path });
        if (!canned) return handler(req, res);
        res.writeHead(canned.status ?? 200, { "content-type": "application/json", "cache-control": "no-store" });
        res.end(JSON.stringify(canned.body));
      });
      await new Promise<void>((resolve, reject) => {
        s.once("error", reject);
        s.listen(port, "127.0.0.1", () => resolve());
      });
      server = s;
    },
    async down() {
      const s = server;
      server = undefined;
      if (!s) return;
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
    stop: () => op.down(),
  };
  await op.up();
  return op;
}
