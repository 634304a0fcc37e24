/**
 * Passkeys: signing in with one (public routes) and managing the operator's own (Account page). The
 * browser half of WebAuthn is @simplewebauthn/browser; the gateway supplies the options and checks
 * the answers, so nothing here decides anything security-relevant.
 */
import type { ResponseBody } from "@orch/client";
import { startAuthentication, startRegistration } from "@simplewebauthn/browser";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import { startSession } from "./session";

export type Passkey = ResponseBody<"/api/v1/auth/passkeys", "get">["passkeys"][number];

const PASSKEYS_KEY = ["passkeys"] as const;

type AuthenticationOptions = Parameters<typeof startAuthentication>[0]["optionsJSON"];
type RegistrationOptions = Parameters<typeof startRegistration>[0]["optionsJSON"];

/** Sign in with a passkey: options from the gateway → the authenticator → the gateway sets the cookies. */
export function usePasskeySignIn() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () => {
      const { options } = unwrap(await api.POST("/api/v1/auth/passkeys/authentication-options"));
      const response = await startAuthentication({ optionsJSON: options as unknown as AuthenticationOptions });
      return unwrap(
        await api.POST("/api/v1/auth/passkeys/authentication", {
          body: { response: response as unknown as Record<string, unknown> },
        }),
      );
    },
    onSuccess: (signedIn) => startSession(queryClient, signedIn.operator),
  });
}

/** The signed-in operator's passkeys. */
export function usePasskeys() {
  return useQuery({
    queryKey: PASSKEYS_KEY,
    queryFn: async (): Promise<Passkey[]> => unwrap(await api.GET("/api/v1/auth/passkeys")).passkeys,
  });
}

export function useRegisterPasskey() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (name: string): Promise<Passkey> => {
      const { options } = unwrap(await api.POST("/api/v1/auth/passkeys/registration-options"));
      const response = await startRegistration({ optionsJSON: options as unknown as RegistrationOptions });
      return unwrap(
        await api.POST("/api/v1/auth/passkeys", {
          body: { name, response: response as unknown as Record<string, unknown> },
        }),
      );
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: PASSKEYS_KEY }),
  });
}

export function useRemovePasskey() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (passkeyId: string) => {
      unwrap(await api.DELETE("/api/v1/auth/passkeys/{passkey_id}", { params: { path: { passkey_id: passkeyId } } }));
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: PASSKEYS_KEY }),
  });
}
