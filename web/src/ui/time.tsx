import { useNow } from "./now";
import { relativeTime, toMs } from "./relative-time";

/** A timestamp shown relative ("5 min ago"), with the exact ISO time as tooltip and machine value. */
export function Time({
  value,
  fallback = "—",
}: {
  value: string | number | Date | null | undefined;
  fallback?: string;
}) {
  const now = useNow();
  const ms = toMs(value);
  if (ms === undefined) return <span className="muted">{fallback}</span>;
  const iso = new Date(ms).toISOString();
  return (
    <time dateTime={iso} title={iso}>
      {relativeTime(ms, now)}
    </time>
  );
}
