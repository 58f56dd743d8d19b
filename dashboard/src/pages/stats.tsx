// Stats: cost and volume by repository, by model and by trigger, with the overview's filters.
import { useQuery } from "@tanstack/react-query";
import { Link, getRouteApi } from "@tanstack/react-router";
import { useMemo } from "react";
import { repoParams, type Charts, type Filters, type OutcomeStats, type OutcomeStatsRow, type RepoScores, type Stats } from "../api/client";
import { q } from "../api/queries";
import { FilterBar } from "../components/filters";
import { DayChart, ShareBar, type Series } from "../components/chart";
import { COLORS, LatencyChart, TopFiles } from "../components/stat-charts";
import { Card, Empty, Query, count, duration, money } from "../components/ui";

const route = getRouteApi("/stats");
type RepoFile = RepoScores["topFiles"][number];
/** One colour per trigger, never reused (reopened must not look like opened); mid-tones that
 * stand out on the light and the dark panel alike. */
const TRIGGER_COLORS: Record<string, string> = {
  opened: "#2f7de1",
  synchronize: "#1f9d74",
  reopened: "#8b5cf6",
  command: "#ca8a04",
  retry: "#d6455d",
  improve: "#db2777",
  ready_for_review: "#0891b2",
  reply: "#65a30d",
  ask: "#ea580c",
  unknown: "#7a8797",
};
const triggerColor = (t: string) => TRIGGER_COLORS[t] ?? TRIGGER_COLORS.unknown ?? "#7a8797";

export function StatsPage() {
  const filters = route.useSearch();
  const navigate = route.useNavigate();
  const stats = useQuery(q.stats(filters));
  const charts = useQuery(q.charts(filters));
  const scores = useQuery(q.repoScores(filters));
  const outcomes = useQuery(q.outcomes(filters));
  return (
    <>
      <header className="page-head">
        <h1>Stats</h1>
        <p className="muted">Where the reviews and the money went. Skipped reviews are not counted.</p>
      </header>
      <FilterBar value={filters} onChange={(f: Filters) => void navigate({ search: f, replace: true })} />
      <Query q={charts} what="Loading charts">
        {(c) => <StatsCharts charts={c} topFiles={scores.data?.topFiles ?? []} />}
      </Query>
      <Query q={stats} what="Loading statistics">
        {(s) => <StatsTables stats={s} />}
      </Query>
      <Query q={outcomes} what="Loading finding outcomes">
        {(o) => <OutcomeTables outcomes={o} />}
      </Query>
    </>
  );
}

/** The original service's stats charts: completed and failed per day, the latency trend,
 * findings per day by severity, and the files with most findings named with their repository. */
function StatsCharts({ charts, topFiles }: { charts: Charts; topFiles: RepoFile[] }) {
  const reliability = useMemo(() => {
    const days = charts.reliability.map((r) => r.day);
    const series: Series[] = [
      { label: "completed", values: charts.reliability.map((r) => r.completed), color: COLORS.completed, bars: true },
      { label: "failed", values: charts.reliability.map((r) => r.failed), color: COLORS.failed },
    ];
    return { days, series };
  }, [charts.reliability]);
  const findings = useMemo(() => {
    const days = [...new Set(charts.findingsDaily.map((f) => f.day))].sort();
    const of = (severity: string) =>
      days.map((d) => charts.findingsDaily.find((f) => f.day === d && f.severity === severity)?.count ?? 0);
    const series: Series[] = [
      { label: "blocking", values: of("blocking"), color: COLORS.blocking },
      { label: "question", values: of("question"), color: COLORS.question },
      { label: "nit", values: of("nit"), color: COLORS.nit },
    ];
    return { days, series };
  }, [charts.findingsDaily]);
  return (
    <div className="grid charts" data-testid="stats-charts">
      <Card>
        <DayChart title="Completed and failed per day" days={reliability.days} series={reliability.series} />
      </Card>
      <Card>
        <LatencyChart charts={charts} title="Latency trend" />
      </Card>
      <Card>
        <DayChart title="Findings per day" days={findings.days} series={findings.series} />
      </Card>
      <Card>
        <TopFiles files={topFiles} />
      </Card>
    </div>
  );
}

function StatsTables({ stats }: { stats: Stats }) {
  const totals = stats.projects.reduce(
    (a, p) => ({ reviews: a.reviews + p.reviews, cost: a.cost + p.cost, tokens: a.tokens + p.tokens }),
    { reviews: 0, cost: 0, tokens: 0 },
  );
  return (
    <>
      <Card title="Cost by repository">
        {stats.projects.length === 0 ? (
          <Empty>No review in this range.</Empty>
        ) : (
          <div className="table-wrap">
            <table>
              <caption className="sr-only">Cost by repository</caption>
              <thead>
                <tr>
                  <th scope="col">Repository</th>
                  <th scope="col" className="num">Reviews</th>
                  <th scope="col" className="num hide-narrow">Avg time</th>
                  <th scope="col" className="num">Tokens</th>
                  <th scope="col" className="num">Cost</th>
                </tr>
              </thead>
              <tbody>
                {stats.projects.map((p) => (
                  <tr key={p.repo_full_name}>
                    <td>
                      <Link to="/repos/$owner/$name" params={repoParams(p.repo_full_name)} className="mono">
                        {p.repo_full_name}
                      </Link>
                    </td>
                    <td className="num">{count(p.reviews)}</td>
                    <td className="num hide-narrow">{duration(p.avg_duration)}</td>
                    <td className="num">{count(p.tokens)}</td>
                    <td className="num">{money(p.cost)}</td>
                  </tr>
                ))}
              </tbody>
              <tfoot>
                <tr>
                  <th scope="row">Total</th>
                  <td className="num">{count(totals.reviews)}</td>
                  <td className="hide-narrow" />
                  <td className="num">{count(totals.tokens)}</td>
                  <td className="num">
                    <strong>{money(totals.cost)}</strong>
                  </td>
                </tr>
              </tfoot>
            </table>
          </div>
        )}
      </Card>
      <div className="grid two">
        <Card title="Cost by model">
          {stats.models.length === 0 ? (
            <Empty>No model recorded in this range.</Empty>
          ) : (
            <div className="table-wrap">
              <table>
                <caption className="sr-only">Cost by model</caption>
                <thead>
                  <tr>
                    <th scope="col">Model</th>
                    <th scope="col" className="num">Reviews</th>
                    <th scope="col" className="num">Tokens</th>
                    <th scope="col" className="num">Cost</th>
                  </tr>
                </thead>
                <tbody>
                  {stats.models.map((m) => (
                    <tr key={m.model}>
                      <td className="mono">{m.model}</td>
                      <td className="num">{count(m.reviews)}</td>
                      <td className="num">{count(m.tokens)}</td>
                      <td className="num">{money(m.cost)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </Card>
        <Card title="Most expensive reviews">
          {stats.topCost.length === 0 ? (
            <Empty>No cost recorded in this range.</Empty>
          ) : (
            <ol className="plain-list">
              {stats.topCost.map((t) => (
                <li key={t.id} className="row spread">
                  <span>
                    <Link to="/reviews/$id" params={{ id: String(t.id) }} className="mono">
                      {t.repo_full_name}#{t.pr_number}
                    </Link>
                    <span className="muted small"> {t.model ?? ""}</span>
                  </span>
                  <span className="num">
                    <span className="muted small">{count(t.tokens)} tokens</span> <strong>{money(t.cost)}</strong>
                  </span>
                </li>
              ))}
            </ol>
          )}
        </Card>
      </div>
      <Card>
        <ShareBar
          title="How reviews start"
          parts={stats.triggers.map((t) => ({ label: t.trigger, value: t.count, color: triggerColor(t.trigger) }))}
        />
      </Card>
    </>
  );
}

// What became of the posted findings (docs/review-service.md, "Finding outcomes"): acceptance is
// resolved over posted, dismissal is dismissed over posted.
function OutcomeTables({ outcomes }: { outcomes: OutcomeStats }) {
  return (
    <>
      <Card title="Finding outcomes by repository">
        <OutcomeTable caption="Finding outcomes by repository" keyLabel="Repository" rows={outcomes.byRepo} withCost />
      </Card>
      <Card title="Finding outcomes by model">
        <OutcomeTable caption="Finding outcomes by model" keyLabel="Model" rows={outcomes.byModel} withCost />
      </Card>
      <Card title="Finding outcomes by severity">
        <OutcomeTable caption="Finding outcomes by severity" keyLabel="Severity" rows={outcomes.bySeverity} />
      </Card>
    </>
  );
}

function percent(v: number | null | undefined): string {
  return v === null || v === undefined ? "–" : `${Math.round(v * 100)}%`;
}

function OutcomeTable({
  caption,
  keyLabel,
  rows,
  withCost = false,
}: {
  caption: string;
  keyLabel: string;
  rows: OutcomeStatsRow[];
  withCost?: boolean;
}) {
  if (rows.every((r) => r.posted === 0)) return <Empty>No finding posted in this range.</Empty>;
  return (
    <div className="table-wrap">
      <table>
        <caption className="sr-only">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">{keyLabel}</th>
            <th scope="col" className="num">Posted</th>
            <th scope="col" className="num">Resolved</th>
            <th scope="col" className="num">Dismissed</th>
            <th scope="col" className="num">Acceptance</th>
            <th scope="col" className="num hide-narrow">Dismissal</th>
            {withCost && <th scope="col" className="num">Cost per resolved</th>}
          </tr>
        </thead>
        <tbody>
          {rows
            .filter((r) => r.posted > 0)
            .map((r) => (
              <tr key={r.key}>
                <td className="mono">{r.key}</td>
                <td className="num">{count(r.posted)}</td>
                <td className="num">{count(r.resolved)}</td>
                <td className="num">{count(r.dismissed)}</td>
                <td className="num">{percent(r.acceptance_rate)}</td>
                <td className="num hide-narrow">{percent(r.dismissal_rate)}</td>
                {withCost && <td className="num">{r.cost_per_resolved === null || r.cost_per_resolved === undefined ? "–" : money(r.cost_per_resolved)}</td>}
              </tr>
            ))}
        </tbody>
      </table>
    </div>
  );
}
