/**
 * Secrets: metadata only. The API never returns a value; the create call below takes care that the
 * typed value is not kept either: it is not a mutation variable (react-query keeps those in its
 * cache) and not part of any query key, only the body of the one POST that creates the secret.
 */
import type { RequestBody, SecretMeta, SecretPage } from "@orch/client";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useState } from "react";
import { api, unwrap } from "./client";

export type { SecretMeta, SecretPage };
export type SecretRestriction = NonNullable<SecretMeta["restriction"]>;
type NewSecretBody = RequestBody<"/api/v1/secrets", "post">;
/** Everything of a new secret but its value. */
export type NewSecretMeta = Omit<NewSecretBody, "value">;

/** A write an approval policy held (202, secret.write): nothing changed until the request is approved. */
export interface HeldSecretWrite {
  status: "held";
  change_request_id: string;
  summary: string;
}
export const isHeldWrite = (b: unknown): b is HeldSecretWrite =>
  typeof b === "object" && b !== null && (b as HeldSecretWrite).status === "held";

export const SECRETS_PAGE_SIZE = 100;
const KEY = ["secrets"] as const;

export function useSecrets(cursor: string | undefined) {
  return useQuery({
    queryKey: [...KEY, { cursor }],
    queryFn: async (): Promise<SecretPage> =>
      unwrap(
        await api.GET("/api/v1/secrets", {
          params: { query: { limit: SECRETS_PAGE_SIZE, ...(cursor ? { cursor } : {}) } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
}

/**
 * Creates a secret. `readValue` is called once, at send time, so the value lives only in the caller's
 * input element and in the request body; the hook's state holds the error and the created metadata.
 */
export function useCreateSecret() {
  const qc = useQueryClient();
  const [state, setState] = useState<{ pending: boolean; error?: unknown; created?: SecretMeta | HeldSecretWrite }>({
    pending: false,
  });
  const create = useCallback(
    async (meta: NewSecretMeta, readValue: () => string): Promise<SecretMeta | HeldSecretWrite | undefined> => {
      setState({ pending: true });
      try {
        const created = unwrap(await api.POST("/api/v1/secrets", { body: { ...meta, value: readValue() } }));
        setState({ pending: false, created });
        await qc.invalidateQueries({ queryKey: KEY });
        return created;
      } catch (error) {
        setState({ pending: false, error });
        return undefined;
      }
    },
    [qc],
  );
  const reset = useCallback(() => setState({ pending: false }), []);
  return { create, reset, ...state };
}

/** Deletes a secret; `onHeld` hears of a delete an approval policy held (it runs before the caller's onSuccess). */
export function useDeleteSecret(onHeld?: (held: HeldSecretWrite) => void) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (name: string): Promise<unknown> =>
      unwrap(await api.DELETE("/api/v1/secrets/{name}", { params: { path: { name } }, body: {} })),
    onSuccess: (r) => {
      if (isHeldWrite(r)) onHeld?.(r);
    },
    onSettled: () => qc.invalidateQueries({ queryKey: KEY }),
  });
}
