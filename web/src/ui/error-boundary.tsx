/**
 * The last line against a blank screen: a page that throws while rendering (or a page chunk that no
 * longer exists after a deploy) shows what happened and a way out, and the shell stays usable.
 */
import { Component, type ErrorInfo, type ReactNode } from "react";
import { problemText } from "./problem";

interface State {
  error: unknown;
}

export class ErrorBoundary extends Component<{ children: ReactNode; resetKey?: string }, State> {
  override state: State = { error: undefined };

  static getDerivedStateFromError(error: unknown): State {
    return { error };
  }

  override componentDidCatch(error: unknown, info: ErrorInfo): void {
    console.error("console page failed", error, info.componentStack);
  }

  override componentDidUpdate(prev: { resetKey?: string }): void {
    // Navigating elsewhere gives the next page a fresh start.
    if (this.state.error !== undefined && prev.resetKey !== this.props.resetKey) this.setState({ error: undefined });
  }

  override render(): ReactNode {
    if (this.state.error === undefined) return this.props.children;
    const { detail, code } = problemText(this.state.error);
    return (
      <section className="page">
        <h1>Something went wrong</h1>
        <div className="problem" role="alert">
          <span className="problem-detail">{detail}</span>
          {code ? <code className="problem-code">{code}</code> : null}
        </div>
        <div className="toolbar">
          <button type="button" className="btn" onClick={() => window.location.reload()}>
            Reload
          </button>
        </div>
      </section>
    );
  }
}
