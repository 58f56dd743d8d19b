// The charts the overview and the stats page share: the colours of statuses and severities,
// latency per day, and the files with most findings named with their repository.
import { useMemo } from "react";
import type { Charts, RepoScores } from "../api/client";
import { DayChart, RankList, type Series } from "./chart";
import { duration } from "./ui";

export const COLORS = {
  completed: "#1f9d74",
  failed: "#d6455d",
  inFlight: "#d08a16",
  blocking: "#d6455d",
  nit: "#7a8797",
  question: "#3f7fd9",
  primary: "#2f7de1",
  secondary: "#9a5bd6",
};

/** p50 and p95 of completed reviews per UTC day, in whole-minute ticks. */
export function LatencyChart({ charts, title }: { charts: Charts; title: string }) {
  const { days, series } = useMemo(() => {
    const series: Series[] = [
      { label: "p50", values: charts.latency.map((d) => d.p50 ?? null), color: COLORS.primary },
      { label: "p95", values: charts.latency.map((d) => d.p95 ?? null), color: COLORS.inFlight },
    ];
    return { days: charts.latency.map((d) => d.day), series };
  }, [charts.latency]);
  const sampled = charts.latencyTruncated ? " (sampled: latest 5,000 reviews)" : "";
  return <DayChart title={`${title}${sampled}`} days={days} series={series} format={duration} durations />;
}

/** The files with most inline findings, each with its repository (docs/review-service.md,
 * "Repository scores"), so two repositories' README.md are two rows. */
export function TopFiles({ files }: { files: RepoScores["topFiles"] }) {
  return (
    <RankList
      title="Files with most findings"
      rows={files.map((f) => ({
        key: `${f.repo_full_name}/${f.path}`,
        label: (
          <span className="mono">
            <span className="muted">{f.repo_full_name}:</span> {f.path}
          </span>
        ),
        value: f.count,
      }))}
    />
  );
}
