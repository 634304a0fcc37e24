/**
 * What a `command.run` request would run and where (docs/approvals.md): the argv (as JSON, so each
 * argument's bounds are exact) or the script, its timeout and rollout, and the agents it resolved
 * to. React renders it as text, so nothing the requester wrote is markup.
 */
import type { ChangeRequest } from "../../api/approvals";
import { Section } from "../../ui";

interface CommandRunContent {
  command?: string[] | null;
  script?: string | null;
  timeout_s?: number;
  batch?: string | null;
  max_failures?: number | null;
  selector?: string | null;
  node_ids?: string[] | null;
  targets?: { node_id: string; name: string }[];
}

export function CommandRunContentView({ request: r }: { request: ChangeRequest }) {
  if (r.action !== "command.run") return null;
  const c = r.content as CommandRunContent;
  const targets = c.targets ?? [];
  return (
    <Section title="What it would run">
      <dl className="props card" data-testid="request-command-run">
        {c.command ? (
          <>
            <dt>Command</dt>
            <dd className="mono" data-testid="request-command">
              {JSON.stringify(c.command)}
            </dd>
          </>
        ) : null}
        {typeof c.script === "string" ? (
          <>
            <dt>Script</dt>
            <dd>
              {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be focusable to be scrolled by keyboard. */}
              <section className="request-content" tabIndex={0} aria-label="Script">
                <pre className="mono" data-testid="request-script">
                  {c.script}
                </pre>
              </section>
            </dd>
          </>
        ) : null}
        <dt>Timeout</dt>
        <dd>{c.timeout_s ?? "?"} s</dd>
        <dt>Rollout</dt>
        <dd>
          batch {c.batch || "all"}, max failures {c.max_failures ?? "none"}
        </dd>
        <dt>Asked for</dt>
        <dd className="mono">{c.selector || (c.node_ids ?? []).join(", ")}</dd>
        <dt>Agents ({targets.length})</dt>
        <dd data-testid="request-run-targets">
          {targets.map((t, i) => (
            <span key={t.node_id} title={t.node_id}>
              {i > 0 ? ", " : null}
              {t.name || t.node_id}
            </span>
          ))}
        </dd>
      </dl>
    </Section>
  );
}
