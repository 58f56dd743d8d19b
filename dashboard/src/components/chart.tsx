// Charts: uPlot (about 50 KB minified, canvas, draws 100k points in milliseconds) for the
// per-day series; plain HTML bars for shares and rankings, which need no library at all.
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export interface Series {
  label: string;
  values: (number | null)[];
  color: string;
  bars?: boolean;
}

function cssVar(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

const DAY = 86400;

/** Whole minutes for a duration axis: "45m", "1h 30m". */
function minutesLabel(secs: number): string {
  const m = Math.round(secs / 60);
  if (m < 60) return `${m}m`;
  return m % 60 === 0 ? `${m / 60}h` : `${Math.floor(m / 60)}h ${m % 60}m`;
}

/** A per-day chart over `days` (YYYY-MM-DD, UTC), one or more series; with a text summary for
 * screen readers, since a canvas has none. The API buckets by UTC day, so the axis is drawn in
 * UTC and says so, with half a day of room at each end so the edge bars are whole. With
 * `durations`, the values are seconds and the y axis ticks whole minutes. */
export function DayChart({
  title,
  days,
  series,
  format = (v: number) => String(v),
  height = 200,
  durations = false,
}: {
  title: string;
  days: string[];
  series: Series[];
  format?: (v: number) => string;
  height?: number;
  durations?: boolean;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el || days.length === 0) return;
    const xs = days.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000);
    const axis = cssVar("--muted", "#888");
    const grid = cssVar("--border", "#ddd");
    const bars = uPlot.paths.bars?.({ size: [0.7, 40] });
    const opts: uPlot.Options = {
      width: el.clientWidth || 320,
      height,
      // The legend under the chart shows the hovered day's values (every chart, one series too).
      legend: { show: true, live: true },
      cursor: { drag: { x: false, y: false } },
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
      scales: {
        x: { time: true, range: (_u, min, max) => [min - DAY / 2, max + DAY / 2] },
        ...(durations
          ? { y: { range: (_u: uPlot, _min: number, max: number): uPlot.Range.MinMax => [0, Math.max(60, Math.ceil(max / 60) * 60)] } }
          : {}),
      },
      axes: [
        { stroke: axis, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, label: "day (UTC)", labelSize: 18, labelFont: "12px system-ui, sans-serif" },
        {
          stroke: axis,
          grid: { stroke: grid, width: 1 },
          ticks: { stroke: grid },
          ...(durations
            ? {
                // Whole minutes only: 1, 2, 5, 10, 15, 30 minutes, then hours.
                incrs: [60, 120, 300, 600, 900, 1800, 3600, 7200, 14400],
                values: (_u: uPlot, vals: number[]) => vals.map(minutesLabel),
              }
            : { values: (_u: uPlot, vals: number[]) => vals.map((v) => format(v)) }),
          // Wide enough for the longest label ("12h 30m", "$1234"), so none is cut.
          size: 72,
        },
      ],
      series: [
        { label: "day (UTC)", value: (_u: uPlot, ts: number | null) => (ts === null ? "—" : new Date(ts * 1000).toISOString().slice(0, 10)) },
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          fill: s.bars ? s.color : undefined,
          width: s.bars ? 0 : 2,
          paths: s.bars ? bars : undefined,
          points: { show: days.length < 2 },
          value: (_u: uPlot, v: number | null) => (v === null ? "—" : format(v)),
        })),
      ],
    };
    const plot = new uPlot(opts, [xs, ...series.map((s) => s.values)] as uPlot.AlignedData, el);
    const resize = new ResizeObserver(() => plot.setSize({ width: el.clientWidth, height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [days, series, format, height, durations]);
  const total = series.map((s) => {
    const sum = s.values.reduce<number>((a, v) => a + (v ?? 0), 0);
    return `${s.label}: ${format(sum)} total`;
  });
  return (
    <figure className="chart">
      <figcaption className="card-title">{title}</figcaption>
      {days.length === 0 ? (
        <p className="muted state empty">No data in this range.</p>
      ) : (
        <>
          <div ref={box} className="chart-box" role="img" aria-label={`${title}: ${total.join("; ")}`} />
          <p className="sr-only">
            {title} over {days.length} days. Days are UTC days. {total.join("; ")}.
          </p>
        </>
      )}
    </figure>
  );
}

/** A horizontal share bar with its legend (status mix, severities, triggers). */
export function ShareBar({ title, parts }: { title: string; parts: { label: string; value: number; color: string }[] }) {
  const total = parts.reduce((a, p) => a + p.value, 0);
  return (
    <figure className="chart">
      <figcaption className="card-title">{title}</figcaption>
      {total === 0 ? (
        <p className="muted state empty">Nothing recorded in this range.</p>
      ) : (
        <>
          <div className="sharebar" aria-hidden="true">
            {parts
              .filter((p) => p.value > 0)
              .map((p) => (
                <span key={p.label} style={{ flexGrow: p.value, background: p.color }} title={`${p.label}: ${p.value.toLocaleString()} (${((p.value / total) * 100).toFixed(1)}%)`} />
              ))}
          </div>
          <ul className="legend">
            {parts.map((p) => (
              <li key={p.label}>
                <span className="swatch" style={{ background: p.color }} aria-hidden="true" />
                {p.label} <strong>{p.value.toLocaleString()}</strong>
              </li>
            ))}
          </ul>
        </>
      )}
    </figure>
  );
}

/** A ranked list with proportional bars (top repositories, files, costs). */
export function RankList({
  title,
  rows,
  format = (v: number) => v.toLocaleString(),
}: {
  title: string;
  rows: { key: string; label: React.ReactNode; value: number }[];
  format?: (v: number) => string;
}) {
  const max = Math.max(1, ...rows.map((r) => r.value));
  return (
    <figure className="chart">
      <figcaption className="card-title">{title}</figcaption>
      {rows.length === 0 ? (
        <p className="muted state empty">Nothing recorded in this range.</p>
      ) : (
        <ol className="ranklist">
          {rows.map((r) => (
            <li key={r.key}>
              <div className="rank-label">{r.label}</div>
              <div className="rank-bar" aria-hidden="true">
                <span style={{ width: `${(r.value / max) * 100}%` }} />
              </div>
              <div className="rank-value num">{format(r.value)}</div>
            </li>
          ))}
        </ol>
      )}
    </figure>
  );
}
