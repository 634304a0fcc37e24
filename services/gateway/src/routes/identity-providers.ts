import { SsoService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import {
  DeprovisionedOut,
  IdentityProviderList,
  IdentityProviderOut,
  MappingResultOut,
  identityProviderJson,
  mappingResultJson,
} from "./identity-providers-json.js";
import {
  NewProviderParams,
  ProviderParams,
  PutProviderBody,
  TestMappingBody,
  putRequest,
} from "./identity-providers-schemas.js";

/** /identity-providers: the OIDC providers operators sign in with, and their mapping rules (docs/sso.md). */
export function identityProviderRoutes(ctx: GatewayContext) {
  const sso = rpcClient(ctx.nc, "auth", SsoService, { timeoutMs: ctx.timeoutMs });
  return [
    route({
      method: "GET",
      path: "/api/v1/identity-providers",
      auth: "admin",
      summary: "List the identity providers (OIDC), by name",
      tags: ["identity-providers"],
      responses: { 200: IdentityProviderList },
      async handler({ call }) {
        const r = await sso.listIdentityProviders({}, call);
        return { providers: r.providers.map(identityProviderJson) };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/identity-providers/{name}",
      auth: "admin",
      summary: "One identity provider (never its client secret)",
      tags: ["identity-providers"],
      params: ProviderParams,
      responses: { 200: IdentityProviderOut },
      errors: { 404: ["identity_provider_not_found"] },
      async handler({ params, call }) {
        return identityProviderJson(await sso.getIdentityProvider({ name: params.name }, call));
      },
    }),
    route({
      method: "PUT",
      path: "/api/v1/identity-providers/{name}",
      auth: "admin",
      summary: "Create or replace an identity provider; its issuer is discovered first",
      description:
        'The client secret is write-only: absent keeps the stored one, "" clears it. An issuer whose discovery document cannot be read, or names another issuer, is refused with 400 issuer_discovery_failed and nothing is stored.',
      tags: ["identity-providers"],
      params: NewProviderParams,
      body: PutProviderBody,
      responses: { 200: IdentityProviderOut },
      errors: { 400: ["issuer_discovery_failed"], 409: ["sso_unavailable"] },
      async handler({ params, body, call }) {
        return identityProviderJson(await sso.putIdentityProvider(putRequest(params.name, body), call));
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/identity-providers/{name}",
      auth: "admin",
      summary: "Remove an identity provider; the operators it provisioned are deactivated and their sessions end",
      tags: ["identity-providers"],
      params: ProviderParams,
      responses: { 200: DeprovisionedOut },
      errors: { 404: ["identity_provider_not_found"] },
      async handler({ params, call }) {
        const r = await sso.deleteIdentityProvider({ name: params.name }, call);
        return { deprovisioned: r.deprovisioned };
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/identity-providers/{name}/test-mapping",
      auth: "admin",
      summary: "Which mapping rule a set of claims would hit (nothing is created)",
      tags: ["identity-providers"],
      params: ProviderParams,
      body: TestMappingBody,
      responses: { 200: MappingResultOut },
      errors: { 404: ["identity_provider_not_found"] },
      async handler({ params, body, call }) {
        const req = { provider: params.name, claimsJson: JSON.stringify(body.claims) };
        return mappingResultJson(await sso.testSsoMapping(req, call));
      },
    }),
  ];
}
