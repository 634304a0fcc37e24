/**
 * Sign-in. Three ways in: the one-time link `orchctl console` prints (`/login#code=…`, exchanged
 * automatically; the fragment never reaches a server log), a passkey registered on the Account page,
 * or an identity provider ("Sign in with …", single sign-on: the gateway and the provider handle
 * the rest and come back here with `?sso_error=<code>` when it failed).
 * Afterwards the operator goes back to `next`, a same-origin path only.
 */
import { useEffect, useRef } from "react";
import { useLocation, useSearch } from "wouter";
import { usePasskeySignIn } from "../api/passkeys";
import { useExchangeCode } from "../api/session";
import { type SignInProvider, ssoLoginHref, useSignInProviders } from "../api/sso";
import { ssoErrorOf } from "../lib/sso";
import { ProblemMessage } from "../ui/problem";
import { codeFromHash, safeNext } from "../ui/redirect";

export default function LoginPage() {
  const search = useSearch();
  const [, navigate] = useLocation();
  const next = safeNext(new URLSearchParams(search).get("next"));
  const exchange = useExchangeCode();
  const passkey = usePasskeySignIn();
  const providers = useSignInProviders().data ?? [];
  const ssoError = ssoErrorOf(search);
  const exchanged = useRef<string | undefined>(undefined);

  useEffect(() => {
    document.title = "Sign in · orch console";
    const fromHash = () => {
      const code = codeFromHash(window.location.hash);
      // A login code is single use: once per code (StrictMode runs effects twice).
      if (!code || exchanged.current === code) return;
      exchanged.current = code;
      // The code must not stay in the address bar, the history or a bookmark.
      window.history.replaceState(window.history.state, "", window.location.pathname + window.location.search);
      exchange.mutate(code);
    };
    fromHash();
    // A link pasted into a tab already on /login changes only the fragment.
    window.addEventListener("hashchange", fromHash);
    return () => window.removeEventListener("hashchange", fromHash);
  }, [exchange.mutate]);

  const signedIn = exchange.isSuccess || passkey.isSuccess;
  useEffect(() => {
    if (signedIn) navigate(next, { replace: true });
  }, [signedIn, next, navigate]);

  const busy = exchange.isPending || passkey.isPending;
  return (
    <main className="centered login">
      <section className="card stack">
        <h1>Sign in</h1>
        <p>
          Run <code>orchctl console</code> in a terminal where you are signed in: it prints a one-time sign-in link,
          valid for a minute. Open it in this browser.
        </p>
        <p>Or, if you registered a passkey on your Account page:</p>
        <div className="toolbar">
          <button
            type="button"
            className="btn btn-primary"
            onClick={() => {
              exchange.reset();
              passkey.mutate();
            }}
            disabled={busy}
          >
            Sign in with a passkey
          </button>
        </div>
        {providers.length ? <SsoButtons providers={providers} next={next} /> : null}
        {busy ? (
          <p className="loading" role="status">
            Signing in…
          </p>
        ) : null}
        <ProblemMessage error={exchange.error ?? passkey.error ?? ssoError} />
      </section>
    </main>
  );
}

/** One link per enabled identity provider: a plain navigation, the gateway redirects to the provider. */
function SsoButtons({ providers, next }: { providers: SignInProvider[]; next: string }) {
  return (
    <>
      <p>Or with your organisation's account:</p>
      <div className="toolbar">
        {providers.map((p) => (
          <a key={p.name} className="btn" href={ssoLoginHref(p.name, next)}>
            Sign in with {p.display_name}
          </a>
        ))}
      </div>
    </>
  );
}
