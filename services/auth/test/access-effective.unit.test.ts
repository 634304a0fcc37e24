import t from "tap";
import { effectiveAccess } from "../src/approvals/effective.js";

// An operator's access with its just-in-time grants in force (docs/approvals.md).
t.test("no grants: the stored access", async (t) => {
  t.same(effectiveAccess({ role: "operator", agent_selector: "role=web" }, []), {
    role: "operator",
    agentSelector: "role=web",
  });
  t.same(effectiveAccess({ role: "operator", agent_selector: null }, []), { role: "operator", agentSelector: "" });
  t.same(effectiveAccess({ role: "admin", agent_selector: null }, []), { role: "admin", agentSelector: "" });
});

t.test("selector grants widen a scoped operator; an unscoped one stays unscoped", async (t) => {
  const grants = [
    { role: "", agent_selector: "role=db" },
    { role: "", agent_selector: "name in (cache-1)" },
  ];
  t.same(effectiveAccess({ role: "operator", agent_selector: "role=web" }, grants), {
    role: "operator",
    agentSelector: "role=web || role=db || name in (cache-1)",
  });
  t.same(effectiveAccess({ role: "operator", agent_selector: null }, grants).agentSelector, "");
});

t.test("an admin grant makes an unscoped admin while it holds", async (t) => {
  t.same(effectiveAccess({ role: "operator", agent_selector: "role=web" }, [{ role: "admin", agent_selector: "" }]), {
    role: "admin",
    agentSelector: "",
  });
});
