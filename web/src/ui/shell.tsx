/**
 * The frame of every signed-in page: product name, main navigation (Operators only for admins), the
 * inbox badge, "Sign out", and the gateway banner while requests fail. Kept light: it ships with the
 * first page, so nothing heavy is imported here.
 */
import { type ReactNode, useSyncExternalStore } from "react";
import { Link, useLocation } from "wouter";
import { connectivity } from "../api/connectivity";
import { useUnreadCount } from "../api/notifications";
import { useSession, useSignOut } from "../api/session";
import { Banner } from "./banner";
import { MaintenanceBanner } from "./maintenance-banner";
import { activeNav, navItemsFor } from "./nav";

function useGatewayDown(): string | undefined {
  return useSyncExternalStore(connectivity.subscribe, () => connectivity.get().down);
}

function InboxBadge() {
  const unread = useUnreadCount();
  const count = unread.data ?? 0;
  return (
    <span
      className={count > 0 ? "inbox-badge has-unread" : "inbox-badge"}
      data-testid="inbox-badge"
      title={`${count} unread notification${count === 1 ? "" : "s"}`}
    >
      {count}
    </span>
  );
}

export function Shell({ children }: { children: ReactNode }) {
  const { operator, isAdmin } = useSession();
  const signOut = useSignOut();
  const [location] = useLocation();
  const active = activeNav(location);
  const down = useGatewayDown();
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="shell-header">
        <Link href="/" className="brand">
          orch console
        </Link>
        <nav aria-label="Main" className="main-nav">
          <ul>
            {navItemsFor(isAdmin).map((item) => (
              <li key={item.href}>
                <Link href={item.href} aria-current={active === item.label ? "page" : undefined}>
                  {item.label}
                </Link>
                {item.label === "Inbox" ? <InboxBadge /> : null}
              </li>
            ))}
          </ul>
        </nav>
        <div className="shell-user">
          <span className="operator-name muted" title={`${operator.name} (${operator.role})`}>
            {operator.name}
          </span>
          {/* The Account page has its own "Sign out"; one button of that name per page. */}
          {active === "Account" ? null : (
            <button type="button" className="btn" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
              Sign out
            </button>
          )}
        </div>
      </header>
      {down ? (
        <Banner kind="warning" testId="gateway-banner" className="gateway-banner">
          Gateway unavailable — retrying…
        </Banner>
      ) : null}
      <MaintenanceBanner />
      <main id="main" className="shell-main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}
