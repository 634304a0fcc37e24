import t from "tap";
import { activeNav, navItemsFor } from "../src/ui/nav.js";

t.test("Operators is listed for admins only", async (t) => {
  t.same(
    navItemsFor(true).map((i) => i.label),
    [
      "Fleet",
      "Pending",
      "Modules",
      "Assignments",
      "Values",
      "Sources",
      "Secrets",
      "Sessions",
      "Channels",
      "Maintenance",
      "Audit",
      "Inbox",
      "Operators",
      "Account",
    ],
  );
  t.same(
    navItemsFor(false).map((i) => i.label),
    [
      "Fleet",
      "Pending",
      "Modules",
      "Assignments",
      "Values",
      "Sources",
      "Secrets",
      "Sessions",
      "Channels",
      "Maintenance",
      "Audit",
      "Inbox",
      "Account",
    ],
  );
});

t.test("activeNav maps a location to its nav entry", async (t) => {
  const cases: [string, string | undefined][] = [
    ["/", "Fleet"],
    ["/agents", "Fleet"],
    ["/agents/", "Fleet"],
    ["/agents?status=connected", "Fleet"],
    ["/agents/node-1", "Fleet"],
    ["/agents/pending", "Pending"],
    ["/agents/pending?status=rejected", "Pending"],
    ["/agents/node-1/terminal", "Fleet"],
    ["/modules", "Modules"],
    ["/modules/web/upload", "Modules"],
    ["/assignments/web/runs/01J", "Assignments"],
    ["/sources", "Sources"],
    ["/sources/infra", "Sources"],
    ["/terminal/01J", "Sessions"],
    ["/sessions/01J", "Sessions"],
    ["/channels/ch-1", "Channels"],
    ["/maintenance", "Maintenance"],
    ["/secrets", "Secrets"],
    ["/audit", "Audit"],
    ["/inbox", "Inbox"],
    ["/operators", "Operators"],
    ["/identity-providers", "Operators"],
    ["/identity-providers/corp", "Operators"],
    ["/requests?to_approve=true", "Assignments"],
    ["/requests/01J", "Assignments"],
    ["/approval-policies/prod", "Assignments"],
    ["/account", "Account"],
    ["/accounting", undefined],
    ["/nowhere", undefined],
  ];
  for (const [path, label] of cases) t.equal(activeNav(path), label, path);
});
