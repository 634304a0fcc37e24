/**
 * Fleet (/ and /agents?selector=&status=): counts, a selector validated as it is typed, and every
 * matching agent in a virtualised table, polled every 5 s. The URL holds the last valid selector;
 * the input may hold a half-typed one (no request is sent for it).
 */
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { type Agent, useAgentSummary, useAllAgents } from "../api/agents";
import { sortAgents } from "../lib/agent-format";
import { checkSelector } from "../lib/selector";
import { useUrlState } from "../lib/url-state";
import { Field, Page, ProblemMessage } from "../ui";
import { AgentTable } from "./fleet/agent-table";
import { Counts } from "./fleet/counts";
import "./pages.css";

const STATUSES = ["", "approved", "pending", "rejected"] as const;
const SELECTOR_DEBOUNCE_MS = 300;

export default function FleetPage() {
  const [params, setParams] = useUrlState();
  const urlSelector = params.get("selector") ?? "";
  const status = STATUSES.find((s) => s === params.get("status")) ?? "";

  const [text, setText] = useState(urlSelector);
  const check = checkSelector(text);
  // Back/forward (or a link) changed the URL: show its selector, unless the input already means it.
  useEffect(() => {
    setText((current) => {
      const c = checkSelector(current);
      return c.ok && c.selector === urlSelector ? current : urlSelector;
    });
  }, [urlSelector]);
  // A valid selector reaches the URL after a pause in typing; an invalid one never does.
  const valid = check.ok ? check.selector : undefined;
  useEffect(() => {
    if (valid === undefined || valid === urlSelector) return;
    const t = setTimeout(() => setParams({ selector: valid }, { replace: true }), SELECTOR_DEBOUNCE_MS);
    return () => clearTimeout(t);
  }, [valid, urlSelector, setParams]);

  const marks = usePerformanceMarks();
  const list = useAllAgents(urlSelector, status, { enabled: check.ok, onData: marks.onData });
  const summary = useAgentSummary(urlSelector, { enabled: check.ok });
  // The API lists by node id; people look for names. Sorted once per answer, not per render.
  const agents: Agent[] = useMemo(() => sortAgents(list.data ?? []), [list.data]);
  const { onRendered } = marks;
  useEffect(() => {
    if (list.data) onRendered();
  }, [list.data, onRendered]);

  return (
    <Page title="Fleet">
      <Counts summary={summary.data} />
      {summary.error && !summary.data ? <ProblemMessage error={summary.error} /> : null}
      <form className="toolbar fleet-filters" onSubmit={(e) => e.preventDefault()}>
        <Field
          label="Selector"
          className="grow"
          error={check.ok ? undefined : check.message}
          hint="e.g. role=web, env in (prod,staging), !draining, attr.os=linux"
        >
          <input
            type="search"
            className="mono"
            value={text}
            spellCheck={false}
            autoComplete="off"
            onChange={(e) => setText(e.target.value)}
          />
        </Field>
        <Field label="Status">
          <select value={status} onChange={(e) => setParams({ status: e.target.value })}>
            <option value="">All</option>
            <option value="approved">Approved</option>
            <option value="pending">Pending</option>
            <option value="rejected">Rejected</option>
          </select>
        </Field>
      </form>
      {list.error ? <ProblemMessage error={list.error} /> : null}
      <p className="muted fleet-count" aria-live="polite">
        {list.data === undefined
          ? list.isFetching
            ? "Loading agents…"
            : ""
          : `${agents.length} agent${agents.length === 1 ? "" : "s"}${list.isPlaceholderData ? " (updating…)" : ""}`}
      </p>
      <AgentTable agents={agents} />
    </Page>
  );
}

/**
 * "fleet:data" when the first full list arrives, "fleet:painted" in the frame after it is rendered
 * (bench/console.ts measures between them). Once per visit, so a poll never reorders the pair.
 */
function usePerformanceMarks() {
  const state = useRef<"waiting" | "data" | "done">("waiting");
  const onData = useCallback(() => {
    if (state.current !== "waiting") return;
    state.current = "data";
    performance.mark("fleet:data");
  }, []);
  const onRendered = useCallback(() => {
    if (state.current !== "data") return;
    state.current = "done";
    requestAnimationFrame(() => performance.mark("fleet:painted"));
  }, []);
  return { onData, onRendered };
}
