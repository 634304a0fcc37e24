/**
 * Metrics charts (uPlot, canvas). Loaded lazily by the agent page so uPlot never weighs on the first
 * page. Each chart is an image to assistive technology (role="img" with a label stating the latest
 * value); the page shows the same latest values as a table.
 */
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { METRIC_LABELS, type MetricSeries } from "../lib/metrics";

type MetricKey = keyof typeof METRIC_LABELS;
const KEYS: MetricKey[] = ["cpu", "memory", "disk", "load"];
const HEIGHT = 180;

function cssVar(el: Element, name: string, fallback: string): string {
  return getComputedStyle(el).getPropertyValue(name).trim() || fallback;
}

function Chart({ metric, series, rangeLabel }: { metric: MetricKey; series: MetricSeries; rangeLabel: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const values = series[metric];
  const latest = values.at(-1);
  const label = METRIC_LABELS[metric];

  // One uPlot per chart for the component's life; new data is set on it (no flicker, no re-layout).
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const text = cssVar(el, "--muted", "#57606a");
    const grid = cssVar(el, "--border", "#d0d7de");
    const line = cssVar(el, "--link", "#0a58b0");
    const percent = metric !== "load";
    const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: HEIGHT,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: { time: true },
        y: percent ? { range: [0, 100] } : { range: (_u, _min, max) => [0, Math.max(1, max * 1.2)] },
      },
      axes: [axis, { ...axis, size: 44 }],
      series: [
        {},
        {
          label,
          stroke: line,
          width: 1.5,
          ...(/^#[0-9a-f]{6}$/i.test(line) ? { fill: `${line}22` } : {}),
          points: { show: false },
        },
      ],
    };
    const u = new uPlot(opts, [[], []], el);
    plot.current = u;
    const resize = new ResizeObserver(() => u.setSize({ width: Math.max(200, el.clientWidth), height: HEIGHT }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [metric, label]);

  useEffect(() => {
    plot.current?.setData([series.time, values]);
  }, [series.time, values]);

  const summary =
    latest === undefined
      ? `${label}: no samples in the last ${rangeLabel}`
      : `${label} over the last ${rangeLabel}: ${values.length} samples, latest ${latest}`;
  return (
    <figure>
      <figcaption>{label}</figcaption>
      <div ref={box} className="chart-box" role="img" aria-label={summary} />
    </figure>
  );
}

export default function MetricsCharts({ series, rangeLabel }: { series: MetricSeries; rangeLabel: string }) {
  return (
    <div className="chart-grid">
      {KEYS.map((k) => (
        <Chart key={k} metric={k} series={series} rangeLabel={rangeLabel} />
      ))}
    </div>
  );
}
