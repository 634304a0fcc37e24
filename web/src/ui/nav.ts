/** The shell's main navigation, and which entry a location belongs to (pure: unit-tested). */
export interface NavItem {
  label:
    | "Fleet"
    | "Pending"
    | "Modules"
    | "Assignments"
    | "Values"
    | "Sources"
    | "Secrets"
    | "Sessions"
    | "Channels"
    | "Maintenance"
    | "Audit"
    | "Inbox"
    | "Operators"
    | "Account";
  href: string;
  adminOnly?: boolean;
}

export const NAV_ITEMS: readonly NavItem[] = [
  { label: "Fleet", href: "/" },
  { label: "Pending", href: "/agents/pending" },
  { label: "Modules", href: "/modules" },
  { label: "Assignments", href: "/assignments" },
  { label: "Values", href: "/values" },
  { label: "Sources", href: "/sources" },
  { label: "Secrets", href: "/secrets" },
  { label: "Sessions", href: "/sessions" },
  { label: "Channels", href: "/channels" },
  { label: "Maintenance", href: "/maintenance" },
  { label: "Audit", href: "/audit" },
  { label: "Inbox", href: "/inbox" },
  { label: "Operators", href: "/operators", adminOnly: true },
  { label: "Account", href: "/account" },
];

export function navItemsFor(isAdmin: boolean): NavItem[] {
  return NAV_ITEMS.filter((i) => isAdmin || !i.adminOnly);
}

/**
 * The nav entry a path belongs to: /agents and agent pages (and an agent's terminal) are Fleet,
 * /agents/pending is Pending, a live terminal (/terminal/:id) belongs with its recordings (Sessions),
 * identity providers belong with Operators, change requests and approval policies with Assignments.
 */
export function activeNav(path: string): NavItem["label"] | undefined {
  const p = path.split(/[?#]/)[0]?.replace(/\/+$/, "") || "/";
  if (p === "/agents/pending" || p.startsWith("/agents/pending/")) return "Pending";
  if (p === "/" || p === "/agents" || p.startsWith("/agents/")) return "Fleet";
  if (p.startsWith("/terminal/")) return "Sessions";
  // Single sign-on's providers are reached from the Operators page: one more top-level entry
  // would wrap the desktop navigation onto a second row.
  if (p === "/identity-providers" || p.startsWith("/identity-providers/")) return "Operators";
  // Change requests (mostly held applies) are reached from the Assignments page, for the same reason.
  if (p === "/requests" || p.startsWith("/requests/")) return "Assignments";
  if (p === "/approval-policies" || p.startsWith("/approval-policies/")) return "Assignments";
  for (const item of NAV_ITEMS) {
    if (item.href !== "/" && (p === item.href || p.startsWith(`${item.href}/`))) return item.label;
  }
  return undefined;
}
