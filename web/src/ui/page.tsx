import { type ReactNode, useEffect } from "react";

/** A page's frame: its one <h1> (the document title follows it) and optional actions beside it. */
export function Page({ title, actions, children }: { title: string; actions?: ReactNode; children?: ReactNode }) {
  useEffect(() => {
    document.title = `${title} · orch console`;
  }, [title]);
  return (
    <section className="page">
      <header className="page-header">
        <h1>{title}</h1>
        {actions ? <div className="page-actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}

/** A titled block inside a page (an <h2>, so the page keeps its single <h1>). */
export function Section({ title, actions, children }: { title: string; actions?: ReactNode; children?: ReactNode }) {
  return (
    <section className="section" aria-label={title}>
      <header className="section-header">
        <h2>{title}</h2>
        {actions ? <div className="page-actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}
