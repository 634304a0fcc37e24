/**
 * Single sign-on (docs/sso.md): the providers the sign-in page offers (public), where its buttons
 * lead, and the identity providers an admin configures (saved with PUT, removed with DELETE; the
 * client secret is write-only and never comes back).
 */
import type { RequestBody, ResponseBody } from "@orch/client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./client";

export { ssoLoginHref } from "./sso-links";

export type SignInProvider = ResponseBody<"/api/v1/auth/sso/providers", "get">["providers"][number];
export type IdentityProvider = ResponseBody<"/api/v1/identity-providers/{name}", "get">;
export type MappingRule = IdentityProvider["rules"][number];
export type IdentityProviderPut = RequestBody<"/api/v1/identity-providers/{name}", "put">;

const KEY = ["identity-providers"] as const;

/** The enabled providers, for the sign-in page's buttons; none (or a failure) shows no button. */
export function useSignInProviders() {
  return useQuery({
    queryKey: ["sso-sign-in-providers"],
    queryFn: async (): Promise<SignInProvider[]> => unwrap(await api.GET("/api/v1/auth/sso/providers")).providers,
    retry: false,
    staleTime: 60_000,
  });
}

export function useIdentityProviders() {
  return useQuery({
    queryKey: KEY,
    queryFn: async (): Promise<IdentityProvider[]> => unwrap(await api.GET("/api/v1/identity-providers")).providers,
  });
}

export function useIdentityProvider(name: string) {
  return useQuery({
    queryKey: [...KEY, name],
    queryFn: async ({ signal }): Promise<IdentityProvider> =>
      unwrap(await api.GET("/api/v1/identity-providers/{name}", { params: { path: { name } }, signal })),
  });
}

/** Creates or replaces a provider (the server discovers the issuer first: 400 issuer_discovery_failed). */
export function useSaveIdentityProvider() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async ({ name, body }: { name: string; body: IdentityProviderPut }): Promise<IdentityProvider> =>
      unwrap(await api.PUT("/api/v1/identity-providers/{name}", { params: { path: { name } }, body })),
    onSuccess: (p) => {
      qc.setQueryData([...KEY, p.name], p);
      return qc.invalidateQueries({ queryKey: KEY });
    },
  });
}

export function useDeleteIdentityProvider() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (name: string) =>
      unwrap(await api.DELETE("/api/v1/identity-providers/{name}", { params: { path: { name } } })),
    onSuccess: (_r, name) => {
      qc.removeQueries({ queryKey: [...KEY, name] });
      return qc.invalidateQueries({ queryKey: KEY });
    },
  });
}
