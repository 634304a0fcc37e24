import t from "tap";
import { askApproval, OrchError, type ApprovalAsk, type ApprovalGateDeps } from "@orch/kit";

// The rule every service that holds actions shares (docs/approvals.md): the policies' verdict, the
// reason bound, and break-glass for admins with a reason, recorded as one event. The approval
// service and the outbox are stand-ins here; the e2e approvals tests run the real ones.
type Verdict = { required: boolean; policy: string; approverIds: string[] };

function deps(verdict: Verdict) {
  const asked: unknown[] = [];
  const emitted: any[] = [];
  const d: ApprovalGateDeps = {
    approvals: {
      evaluateApproval: async (req: unknown) => {
        asked.push(req);
        return { ...verdict, approvalsRequired: verdict.required ? 1 : 0, expiresAfterSeconds: 3600 } as never;
      },
    },
    events: {
      tx: async (fn) =>
        fn({} as never, async (ev) => {
          emitted.push(ev);
          return ev as never;
        }),
    },
  };
  return { d, asked, emitted };
}

const admin = { id: "A1", name: "ada", type: "operator" as const, role: "admin" };
const operator = { id: "O1", name: "olga", type: "operator" as const, role: "operator" };
const ask = (over: Partial<ApprovalAsk> = {}): ApprovalAsk => ({
  action: "terminal.open",
  agents: [{ id: "N1", name: "web-1", attributes: {}, tags: { env: "prod" } }],
  actor: operator,
  reason: "  look at the logs  ",
  breakGlass: false,
  target: { id: "N1", name: "web-1", type: "agent" },
  doing: "opened a terminal on web-1",
  ...over,
});
const held: Verdict = { required: true, policy: "prod", approverIds: ["B1"] };
const code = async (p: Promise<unknown>) => {
  try {
    await p;
    return "none";
  } catch (err) {
    return err instanceof OrchError ? err.reason : String(err);
  }
};

t.test("unit: no policy: run, nothing recorded", async (t) => {
  const { d, asked, emitted } = deps({ required: false, policy: "", approverIds: [] });
  t.same(await askApproval(d, ask()), { kind: "run" });
  t.same(asked, [
    { action: "terminal.open", agents: [{ id: "N1", name: "web-1", attributes: {}, tags: { env: "prod" } }] },
  ]);
  t.same(emitted, []);
});

t.test("unit: a policy holds it: hold, with the trimmed reason", async (t) => {
  const { d, emitted } = deps(held);
  t.same(await askApproval(d, ask()), { kind: "hold", reason: "look at the logs" });
  t.same(emitted, []);
});

t.test("unit: a reason past the bound is refused before the policies are asked", async (t) => {
  const { d, asked } = deps(held);
  t.equal(await code(askApproval(d, ask({ reason: "x".repeat(501) }))), "invalid_request");
  t.same(asked, []);
  t.same(await askApproval(d, ask({ reason: "x".repeat(500) })), { kind: "hold", reason: "x".repeat(500) });
});

t.test("unit: break-glass: admins only, with a reason, one critical-type event to the approvers", async (t) => {
  const { d, emitted } = deps(held);
  t.equal(await code(askApproval(d, ask({ breakGlass: true }))), "break_glass_forbidden");
  t.equal(
    await code(askApproval(d, ask({ breakGlass: true, actor: admin, reason: "   " }))),
    "break_glass_reason_required",
  );
  t.same(emitted, [], "a refused bypass records nothing");
  const r = await askApproval(d, ask({ breakGlass: true, actor: admin, metadata: { op: "x" } }));
  t.same(r, { kind: "run" });
  t.equal(emitted.length, 1);
  t.match(emitted[0], {
    type: "approval.bypassed",
    summary: "ada opened a terminal on web-1 without approval (policy prod): look at the logs",
    actor: admin,
    target: { id: "N1", name: "web-1", type: "agent" },
    metadata: {
      action: "terminal.open",
      policy: "prod",
      reason: "look at the logs",
      agents: 1,
      notify_operator_ids: ["B1"],
      op: "x",
    },
  });
});

t.test("unit: break-glass where no policy holds the action: it just runs, nothing recorded", async (t) => {
  const { d, emitted } = deps({ required: false, policy: "", approverIds: [] });
  t.same(await askApproval(d, ask({ breakGlass: true, actor: operator })), { kind: "run" });
  t.same(emitted, []);
});
