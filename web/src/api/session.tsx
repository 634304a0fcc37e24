/**
 * Who is signed in. The console never sees its session token (an HttpOnly cookie): "am I signed in?"
 * is answered by `whoami`, cached under ["session"]. Any 401 anywhere (client.ts flags it on the
 * connectivity store) or a 401 from whoami sends the operator to /login?next=<this page>.
 */
import type { Whoami } from "@orch/client";
import { type QueryClient, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type ReactNode, useEffect, useSyncExternalStore } from "react";
import { useLocation, useSearch } from "wouter";
import { Banner } from "../ui/banner";
import { ProblemMessage } from "../ui/problem";
import { loginPath } from "../ui/redirect";
import { api, isStatus, unwrap } from "./client";
import { connectivity } from "./connectivity";

export type Operator = Whoami;

export const SESSION_KEY = ["session"] as const;

const sessionQuery = {
  queryKey: SESSION_KEY,
  queryFn: async (): Promise<Operator> => unwrap(await api.GET("/api/v1/auth/whoami")),
  staleTime: 30_000,
};

/** The signed-in operator. Only inside <RequireSession>, which renders nothing until it is known. */
export function useSession(): { operator: Operator; isAdmin: boolean } {
  const { data } = useQuery(sessionQuery);
  if (!data) throw new Error("useSession() used outside <RequireSession>");
  return { operator: data, isAdmin: data.role === "admin" };
}

/** A fresh cache for a new sign-in: nothing of a previous operator's data survives. */
export function startSession(queryClient: QueryClient, operator: Operator): void {
  queryClient.clear();
  queryClient.setQueryData(SESSION_KEY, operator);
  connectivity.signedIn();
}

function useSessionExpired(): boolean {
  return useSyncExternalStore(connectivity.subscribe, () => connectivity.get().sessionExpired);
}

function useGatewayDown(): string | undefined {
  return useSyncExternalStore(connectivity.subscribe, () => connectivity.get().down);
}

/** Renders its children once the session is known; sends the operator to sign in when it is not. */
export function RequireSession({ children }: { children: ReactNode }) {
  const session = useQuery(sessionQuery);
  const expired = useSessionExpired();
  const down = useGatewayDown();
  const [location, navigate] = useLocation();
  const search = useSearch();
  const signedOut = expired || isStatus(session.error, 401);

  useEffect(() => {
    if (signedOut) navigate(loginPath(search ? `${location}?${search}` : location), { replace: true });
  }, [signedOut, location, search, navigate]);

  if (signedOut) return <p className="loading">Session ended — redirecting to sign in…</p>;
  if (session.data) return <>{children}</>;
  if (session.error && !session.isFetching) {
    return (
      <main className="centered">
        <ProblemMessage error={session.error} />
        <button type="button" className="btn" onClick={() => void session.refetch()}>
          Retry
        </button>
      </main>
    );
  }
  return (
    <main className="centered">
      {down ? (
        <Banner kind="warning" testId="gateway-banner">
          Gateway unavailable — retrying…
        </Banner>
      ) : (
        <p className="loading" role="status">
          Loading…
        </p>
      )}
    </main>
  );
}

/** Signs in with the one-time code of a login link (`orchctl console`); the gateway sets the cookies. */
export function useExchangeCode() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (code: string) => unwrap(await api.POST("/api/v1/auth/console/exchange", { body: { code } })),
    onSuccess: (signedIn) => startSession(queryClient, signedIn.operator),
  });
}

/** Ends the console session (revokes the token, clears both cookies) and returns to sign-in. */
export function useSignOut() {
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  return useMutation({
    mutationFn: async () => {
      unwrap(await api.POST("/api/v1/auth/logout"));
    },
    // Even a failed logout (an already expired session) ends here: the operator asked to leave.
    onSettled: () => {
      navigate("/login", { replace: true });
      // After the signed-in tree has unmounted: clearing first would leave it rendering without a session.
      setTimeout(() => queryClient.clear(), 0);
    },
  });
}
