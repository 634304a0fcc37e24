import t from "tap";
import { sessionEndText } from "../src/commands/ssh.js";
import { endReasonText } from "../src/sse.js";

// How orchctl words the gateway's reasons for ending a terminal attach or a stream (the terminal's
// close reason, an SSE `event: error` code): a scope end says the agent left the operator's scope.

t.test("terminal close reasons in words, with the code", async (t) => {
  t.equal(
    sessionEndText(4403, "agent_out_of_scope"),
    "session ended (the agent is no longer in your access scope (agent_out_of_scope))",
  );
  t.equal(
    sessionEndText(4403, "scope_changed"),
    "session ended (your access scope changed: the agent is no longer in it (scope_changed))",
  );
  t.equal(sessionEndText(4401, "logged_out"), "session ended (signed out (logged_out))");
  t.equal(sessionEndText(1006, ""), "session ended (connection closed, code 1006)");
  t.equal(sessionEndText(1011, "bridge_failed"), "session ended (bridge_failed)", "an unknown reason as sent");
});

t.test("stream end codes in words", async (t) => {
  t.equal(endReasonText("agent_out_of_scope"), "the agent is no longer in your access scope (agent_out_of_scope)");
  t.equal(endReasonText("operator_revoked"), "the operator was removed (operator_revoked)");
  t.equal(endReasonText("something_new"), "something_new");
});
