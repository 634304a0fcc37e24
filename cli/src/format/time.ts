/** Relative times for humans (pure; unit-tested). */

/** "just now", "42s ago", "5m ago", "3h ago", "2d ago"; "-" when unknown. */
export function ago(iso: string | null, now: number): string {
  if (!iso) return "-";
  const s = Math.max(0, Math.floor((now - Date.parse(iso)) / 1000));
  if (!Number.isFinite(s)) return "-";
  if (s < 2) return "just now";
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86_400)}d ago`;
}

/** Unix seconds → ISO 8601, as the API's second-resolution timestamps are shown. */
export const isoSeconds = (s: number) => new Date(s * 1000).toISOString();
