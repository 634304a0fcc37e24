/**
 * The frame of every signed-in page: product name, main navigation (Operators only for admins), the
 * inbox badge, "Sign out", and the gateway banner while requests fail. Kept light: it ships with the
 * first page, so nothing heavy is imported here.
 *
 * Under 600 px the navigation folds behind a "Menu" button (a disclosure: aria-expanded and
 * aria-controls on the button, Escape or a tap outside closes it); theme.css decides the width, so
 * the button exists at every width and is only shown on phones.
 */
import { type ReactNode, useEffect, useId, useRef, useState, useSyncExternalStore } from "react";
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

/** The unread count beside "Menu": the Inbox badge itself is folded away with the list on phones. */
function MenuUnread() {
  const count = useUnreadCount().data ?? 0;
  if (count === 0) return null;
  return (
    <span className="inbox-badge has-unread" data-testid="menu-unread">
      {count}
      <span className="visually-hidden"> unread</span>
    </span>
  );
}

/** The main navigation with its phone-width disclosure; a followed link closes the menu. */
function MainNav({ isAdmin, active }: { isAdmin: boolean; active: string | undefined }) {
  const [open, setOpen] = useState(false);
  const listId = useId();
  const navRef = useRef<HTMLElement>(null);
  const buttonRef = useRef<HTMLButtonElement>(null);
  const [location] = useLocation();
  // A new page (a link in the menu, or Back) folds the menu again.
  // biome-ignore lint/correctness/useExhaustiveDependencies: closes on a change of location only.
  useEffect(() => setOpen(false), [location]);
  useEffect(() => {
    if (!open) return;
    const outside = (e: PointerEvent) => {
      if (!navRef.current?.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener("pointerdown", outside);
    return () => document.removeEventListener("pointerdown", outside);
  }, [open]);
  return (
    <nav
      aria-label="Main"
      className={open ? "main-nav is-open" : "main-nav"}
      ref={navRef}
      onKeyDown={(e) => {
        if (e.key === "Escape" && open) {
          setOpen(false);
          buttonRef.current?.focus();
        }
      }}
    >
      <button
        type="button"
        className="btn menu-button"
        ref={buttonRef}
        aria-expanded={open}
        aria-controls={listId}
        onClick={() => setOpen((o) => !o)}
      >
        <span className="menu-icon" aria-hidden="true" />
        Menu
        <MenuUnread />
      </button>
      <ul id={listId}>
        {navItemsFor(isAdmin).map((item) => (
          <li key={item.href}>
            <Link
              href={item.href}
              aria-current={active === item.label ? "page" : undefined}
              // The same page again changes no location: close the menu all the same.
              onClick={() => setOpen(false)}
            >
              {item.label}
            </Link>
            {item.label === "Inbox" ? <InboxBadge /> : null}
          </li>
        ))}
      </ul>
    </nav>
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
        <MainNav isAdmin={isAdmin} active={active} />
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
