import type { ReactNode } from "react";

/**
 * A table that may scroll sideways on a phone. The scroll box is focusable and named so keyboard
 * users can scroll it even when the table holds no link or button (axe: scrollable-region-focusable).
 * Local to these pages: ui/ has .table-wrap (the look) but no focusable variant.
 */
export function TableRegion({ label, children }: { label: string; children: ReactNode }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be focusable to be scrolled by keyboard.
    <section className="table-wrap" aria-label={label} tabIndex={0}>
      {children}
    </section>
  );
}
