import { z } from "zod";
import { AuthService } from "@orch/contracts";
import { rpcClient, type Client } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { requireConsoleOrigin } from "../console/csrf.js";
import { relyingParty } from "../console/relying-party.js";
import { route } from "../route.js";
import { ConsoleSessionOut, consoleSession } from "./auth-json.js";
import { PasskeyList, PasskeyOut, parseOptions, passkeyJson } from "./passkeys-json.js";
import { Options, OperatorId, PasskeyId, WebAuthnJson } from "./passkeys-schemas.js";

type AuthClient = Client<typeof AuthService>;
type RelyingParty = () => ReturnType<typeof relyingParty>;

/** /auth/passkeys: console sign-in with WebAuthn; the RP is the gateway's http.public_url. */
export function passkeyRoutes(ctx: GatewayContext) {
  const auth = rpcClient(ctx.nc, "auth", AuthService, { timeoutMs: ctx.timeoutMs });
  // Read when called: the OpenAPI build (index.ts) has no configuration.
  const rp = () => relyingParty(ctx.config.http);
  return [...ownPasskeyRoutes(auth, rp), ...operatorPasskeyRoutes(auth), ...passkeySignInRoutes(ctx, auth, rp)];
}

/** The calling operator registers, lists and removes its own passkeys. */
function ownPasskeyRoutes(auth: AuthClient, rp: RelyingParty) {
  return [
    route({
      method: "POST",
      path: "/api/v1/auth/passkeys/registration-options",
      auth: "operator",
      summary: "Start registering a passkey for the calling operator",
      tags: ["auth"],
      responses: { 200: Options },
      errors: { 409: ["passkeys_unavailable"] },
      async handler({ principal, call }) {
        return parseOptions(
          (await auth.beginPasskeyRegistration({ ...rp(), operatorId: principal!.id }, call)).optionsJson,
        );
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/auth/passkeys",
      auth: "operator",
      summary: "Finish registering a passkey (the authenticator's attestation)",
      tags: ["auth"],
      body: z.object({ name: z.string().trim().min(1).max(64), response: WebAuthnJson }),
      responses: { 201: PasskeyOut },
      errors: {
        400: ["invalid_passkey_response"],
        401: ["invalid_webauthn_challenge"],
        409: ["passkey_exists", "passkeys_unavailable"],
      },
      async handler({ body, principal, call }) {
        const req = {
          ...rp(),
          operatorId: principal!.id,
          name: body.name,
          responseJson: JSON.stringify(body.response),
        };
        return passkeyJson(await auth.finishPasskeyRegistration(req, call));
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/auth/passkeys",
      auth: "operator",
      summary: "The calling operator's passkeys",
      tags: ["auth"],
      responses: { 200: PasskeyList },
      async handler({ principal, call }) {
        const r = await auth.listPasskeys({ operatorId: principal!.id }, call);
        return { passkeys: r.passkeys.map(passkeyJson) };
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/auth/passkeys/{passkey_id}",
      auth: "operator",
      summary: "Remove one of the calling operator's passkeys and end the console sessions it opened",
      tags: ["auth"],
      params: z.object({ passkey_id: PasskeyId }),
      responses: { 204: null },
      errors: { 404: ["passkey_not_found"] },
      async handler({ params, principal, call }) {
        await auth.removePasskey({ operatorId: principal!.id, passkeyId: params.passkey_id }, call);
      },
    }),
  ];
}

/** An admin looks at and removes another operator's passkeys. */
function operatorPasskeyRoutes(auth: AuthClient) {
  return [
    route({
      method: "GET",
      path: "/api/v1/operators/{operator_id}/passkeys",
      auth: "admin",
      summary: "An operator's passkeys",
      tags: ["operators"],
      params: z.object({ operator_id: OperatorId }),
      responses: { 200: PasskeyList },
      errors: { 404: ["operator_not_found"] },
      async handler({ params, call }) {
        const r = await auth.listPasskeys({ operatorId: params.operator_id }, call);
        return { passkeys: r.passkeys.map(passkeyJson) };
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/operators/{operator_id}/passkeys/{passkey_id}",
      auth: "admin",
      summary: "Remove an operator's passkey and end the console sessions it opened",
      tags: ["operators"],
      params: z.object({ operator_id: OperatorId, passkey_id: PasskeyId }),
      responses: { 204: null },
      errors: { 404: ["operator_not_found", "passkey_not_found"] },
      async handler({ params, call }) {
        await auth.removePasskey({ operatorId: params.operator_id, passkeyId: params.passkey_id }, call);
      },
    }),
  ];
}

function passkeySignInRoutes(ctx: GatewayContext, auth: AuthClient, rp: RelyingParty) {
  return [
    route({
      method: "POST",
      path: "/api/v1/auth/passkeys/authentication-options",
      auth: "public",
      summary: "Start a console sign-in with a passkey",
      tags: ["auth"],
      responses: { 200: Options },
      errors: { 409: ["passkeys_unavailable"], 429: ["rate_limited"] },
      async handler({ call }) {
        return parseOptions((await auth.beginPasskeyLogin(rp(), call)).optionsJson);
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/auth/passkeys/authentication",
      auth: "public",
      summary: "Finish a console sign-in with a passkey; sets the console session cookies",
      description: "Browsers only: the Origin header must be the console's (http.public_url or http.allowed_origins).",
      tags: ["auth"],
      body: z.object({ response: WebAuthnJson }),
      responses: { 200: ConsoleSessionOut },
      errors: {
        401: ["invalid_passkey", "invalid_webauthn_challenge", "unknown_operator"],
        403: ["origin_not_allowed"],
        409: ["passkeys_unavailable"],
        429: ["rate_limited"],
      },
      async handler({ body, call, raw }, reply) {
        requireConsoleOrigin(raw, ctx.config.http);
        const req = { ...rp(), responseJson: JSON.stringify(body.response), remoteAddress: raw.ip };
        return consoleSession(ctx, reply, await auth.finishPasskeyLogin(req, call));
      },
    }),
  ];
}
