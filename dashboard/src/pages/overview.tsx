// The overview: stat cards, the charts of /api/stats/charts, what is running and what happened
// last; filters in the URL.
import { useQuery } from "@tanstack/react-query";
import { Link, getRouteApi } from "@tanstack/react-router";
import { useMemo, type ReactNode } from "react";
import { q } from "../api/queries";
import type { Budget, Charts, Filters, Stats } from "../api/client";
import { FilterBar } from "../components/filters";
import { DayChart, RankList, ShareBar, type Series } from "../components/chart";
import { COLORS, LatencyChart, TopFiles } from "../components/stat-charts";
import { TriageBand } from "../components/triage";
import { Card, ErrorBox, Loading, ReviewTable, count, duration, money } from "../components/ui";

const route = getRouteApi("/");


/** Dollars for an axis: as few digits as the scale needs. */
const axisMoney = (v: number) => `$${v >= 10 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toFixed(2)}`;

/** The overview's window when the URL names none: the last 30 days. */
const DEFAULT_RANGE = "30d";

/** The window just before `f`'s, as whole UTC days, to compare the cards against; null when it
 * has none (all time, or the last 24 hours, which whole days cannot express). */
export function previousWindow(f: Filters, today = new Date()): Filters | null {
  const day = 86_400_000;
  const iso = (t: number) => new Date(t).toISOString().slice(0, 10);
  const midnight = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate());
  if (f.from) {
    const from = Date.parse(`${f.from}T00:00:00Z`);
    const to = f.to ? Date.parse(`${f.to}T00:00:00Z`) : midnight;
    if (Number.isNaN(from) || Number.isNaN(to) || to < from) return null;
    const days = Math.round((to - from) / day) + 1;
    return { ...f, range: undefined, from: iso(from - days * day), to: iso(from - day) };
  }
  const days = { "7d": 7, "30d": 30, "90d": 90 }[f.range ?? ""];
  if (!days) return null;
  return { ...f, range: undefined, from: iso(midnight - (2 * days - 1) * day), to: iso(midnight - days * day) };
}

export function OverviewPage() {
  const search = route.useSearch();
  const navigate = route.useNavigate();
  const setFilters = (f: Filters) => void navigate({ search: f, replace: true });
  const filters: Filters = search.range || search.from || search.to ? search : { ...search, range: DEFAULT_RANGE };
  const previous = previousWindow(filters);
  const stats = useQuery(q.stats(filters));
  const charts = useQuery(q.charts(filters));
  const before = useQuery({ ...q.stats(previous ?? {}), enabled: previous !== null });
  const beforeCharts = useQuery({ ...q.charts(previous ?? {}), enabled: previous !== null });
  const running = useQuery(q.reviews({ status: "running", limit: "20" }));
  const pending = useQuery(q.reviews({ status: "pending", limit: "20" }));
  const recent = useQuery(q.reviews({ ...filters, limit: "10" }));
  const budget = useQuery(q.budget());
  return (
    <>
      <header className="page-head">
        <h1>Overview</h1>
        <p className="muted">What is running, what failed and why, what it cost.</p>
      </header>
      <TriageBand />
      <FilterBar value={search} onChange={setFilters} defaultRange={DEFAULT_RANGE} />
      {budget.data && <MonthCards budget={budget.data} />}
      {stats.isPending || charts.isPending ? (
        <Loading what="Loading statistics" />
      ) : stats.error || charts.error || !stats.data || !charts.data ? (
        <ErrorBox error={stats.error ?? charts.error} retry={() => void stats.refetch().then(() => charts.refetch())} />
      ) : (
        <>
          <StatCards
            stats={stats.data}
            charts={charts.data}
            before={before.data && beforeCharts.data ? { stats: before.data, charts: beforeCharts.data } : null}
            inFlight={(running.data?.length ?? 0) + (pending.data?.length ?? 0)}
          />
          <ChartGrid stats={stats.data} charts={charts.data} filters={filters} />
        </>
      )}
      <Card title="Latest reviews">
        {recent.isPending ? (
          <Loading />
        ) : recent.error ? (
          <ErrorBox error={recent.error} />
        ) : (
          <ReviewTable rows={recent.data ?? []} caption="Latest reviews" />
        )}
        <p>
          <Link to="/reviews" search={search}>
            All reviews →
          </Link>
        </p>
      </Card>
    </>
  );
}

/** The median of daily medians weighted by their counts: the exact overall p50 needs the raw
 * sample, which the API does not return. */
function approxP50(charts: Charts): number | null {
  const rows = charts.latency.filter((r) => r.p50 !== null && r.p50 !== undefined);
  const total = rows.reduce((a, r) => a + r.count, 0);
  if (total === 0) return null;
  const sorted = [...rows].sort((a, b) => (a.p50 ?? 0) - (b.p50 ?? 0));
  let seen = 0;
  for (const r of sorted) {
    seen += r.count;
    if (seen * 2 >= total) return r.p50 ?? null;
  }
  return null;
}

/** The numbers of the cards, from one window's stats and charts. */
function cardNumbers(stats: Stats, charts: Charts) {
  const reviews = stats.projects.reduce((a, p) => a + p.reviews, 0);
  const cost = stats.projects.reduce((a, p) => a + p.cost, 0);
  const tokens = stats.projects.reduce((a, p) => a + p.tokens, 0);
  const completed = charts.reliability.reduce((a, r) => a + r.completed, 0);
  const failed = charts.reliability.reduce((a, r) => a + r.failed, 0);
  const rate = completed + failed > 0 ? (completed / (completed + failed)) * 100 : null;
  return { reviews, cost, tokens, completed, failed, rate, p50: approxP50(charts), p95: stats.latency.p95 ?? null };
}

/** The change of a card against the previous window: an arrow and a percentage (points for a
 * rate), coloured by whether the change is good. */
function Delta({ now, then, higherIsBetter, points = false }: { now: number | null; then: number | null | undefined; higherIsBetter: boolean; points?: boolean }) {
  if (now === null || then === null || then === undefined) return null;
  if (!points && then === 0) return null;
  const change = points ? now - then : ((now - then) / then) * 100;
  if (!Number.isFinite(change) || Math.abs(change) < 0.05) return <span className="delta muted">no change vs previous period</span>;
  const up = change > 0;
  const good = up === higherIsBetter;
  const text = `${up ? "▲" : "▼"} ${Math.abs(change).toFixed(Math.abs(change) < 10 ? 1 : 0)}${points ? " pts" : "%"}`;
  return (
    <span className={`delta ${up ? "up" : "down"}-${good ? "good" : "bad"}`} title="Against the previous period of the same length">
      {text} <span className="sr-only">against the previous period</span>
    </span>
  );
}

function StatCards({ stats, charts, before, inFlight }: { stats: Stats; charts: Charts; before: { stats: Stats; charts: Charts } | null; inFlight: number }) {
  const n = cardNumbers(stats, charts);
  const b = before ? cardNumbers(before.stats, before.charts) : null;
  const cards: [string, string, string | undefined, ReactNode?][] = [
    ["Reviews", count(n.reviews), `${count(stats.latency.count)} completed`, <Delta key="d" now={n.reviews} then={b?.reviews} higherIsBetter />],
    ["Success rate", n.rate === null ? "—" : `${n.rate.toFixed(n.rate === 100 ? 0 : 1)}%`, `${count(n.failed)} failed`, <Delta key="d" now={n.rate} then={b?.rate} higherIsBetter points />],
    ["In flight", count(inFlight), "pending or running"],
    ["Cost", money(n.cost), n.reviews > 0 ? `${money(n.cost / n.reviews)} per review` : undefined, <Delta key="d" now={n.cost} then={b?.cost} higherIsBetter={false} />],
    ["Tokens", count(n.tokens), undefined, <Delta key="d" now={n.tokens} then={b?.tokens} higherIsBetter={false} />],
    ["Latency p50", duration(n.p50), `avg ${duration(stats.latency.avg)}`, <Delta key="d" now={n.p50} then={b?.p50} higherIsBetter={false} />],
    ["Latency p95", duration(n.p95), undefined, <Delta key="d" now={n.p95} then={b?.p95} higherIsBetter={false} />],
  ];
  return (
    <dl className="stat-cards" data-testid="stat-cards">
      {cards.map(([label, value, sub, delta]) => (
        <div className="stat" key={label}>
          <dt>{label}</dt>
          <dd>
            <span className="stat-value">{value}</span>
            {sub && <span className="muted small">{sub}</span>}
            {delta}
          </dd>
        </div>
      ))}
    </dl>
  );
}

/** This month's spend against the budgets (docs/review-service.md, "Monthly budget"): the
 * filters do not apply, a month is always the calendar month in UTC. */
function MonthCards({ budget }: { budget: Budget }) {
  const of = (b: number | null | undefined) => (b === null || b === undefined ? "no budget" : `of ${money(b)} budget`);
  const own = budget.repos.filter((r) => r.budget !== null && r.budget !== undefined);
  const reached = (spent: number, b: number | null | undefined) => b !== null && b !== undefined && spent >= b;
  const cards: [string, string, string, boolean][] = [
    [`Spent in ${budget.month}`, money(budget.spent), of(budget.budget), reached(budget.spent, budget.budget)],
    ["Projected this month", money(budget.projected), `resets ${budget.resets} UTC`, reached(budget.projected, budget.budget)],
    ...own.map(
      (r): [string, string, string, boolean] => [r.repo_full_name, money(r.spent), `${of(r.budget)}, projected ${money(r.projected)}`, reached(r.spent, r.budget)],
    ),
  ];
  return (
    <dl className="stat-cards" data-testid="month-cards">
      {cards.map(([label, value, sub, over]) => (
        <div className="stat" key={label}>
          <dt className={label.includes("/") ? "mono" : undefined}>{label}</dt>
          <dd>
            <span className="stat-value">{value}</span>
            <span className={over ? "small" : "muted small"}>{over ? `${sub}: reached` : sub}</span>
          </dd>
        </div>
      ))}
    </dl>
  );
}

function ChartGrid({ stats, charts, filters }: { stats: Stats; charts: Charts; filters: Filters }) {
  const scores = useQuery(q.repoScores(filters)).data;
  const daily = useMemo(() => {
    const days = stats.daily.map((d) => d.day);
    const reviews: Series[] = [{ label: "reviews", values: stats.daily.map((d) => d.reviews), color: COLORS.primary, bars: true }];
    const cost: Series[] = [{ label: "cost", values: stats.daily.map((d) => d.cost), color: COLORS.secondary, bars: true }];
    return { days, reviews, cost };
  }, [stats.daily]);
  const mix = charts.reliability.reduce(
    (a, r) => ({ completed: a.completed + r.completed, failed: a.failed + r.failed, inFlight: a.inFlight + r.in_flight }),
    { completed: 0, failed: 0, inFlight: 0 },
  );
  const severity = (s: string) =>
    charts.findingsDaily.filter((f) => f.severity === s).reduce((a, f) => a + f.count, 0);
  return (
    <div className="grid charts">
      <Card>
        <DayChart title="Reviews per day" days={daily.days} series={daily.reviews} />
      </Card>
      <Card>
        <DayChart title="Cost per day" days={daily.days} series={daily.cost} format={axisMoney} />
      </Card>
      <Card>
        <ShareBar
          title="Status mix"
          parts={[
            { label: "completed", value: mix.completed, color: COLORS.completed },
            { label: "failed", value: mix.failed, color: COLORS.failed },
            { label: "in flight", value: mix.inFlight, color: COLORS.inFlight },
          ]}
        />
        <ShareBar
          title="Findings by severity"
          parts={[
            { label: "blocking", value: severity("blocking"), color: COLORS.blocking },
            { label: "nit", value: severity("nit"), color: COLORS.nit },
            { label: "question", value: severity("question"), color: COLORS.question },
          ]}
        />
      </Card>
      <Card>
        <LatencyChart charts={charts} title="Latency per day" />
      </Card>
      <Card>
        <RankList
          title="Top repositories by reviews"
          rows={stats.projects
            .slice()
            .sort((a, b) => b.reviews - a.reviews)
            .slice(0, 8)
            .map((p) => ({ key: p.repo_full_name, label: <span className="mono">{p.repo_full_name}</span>, value: p.reviews }))}
        />
      </Card>
      <Card>
        <TopFiles files={scores?.topFiles ?? []} />
      </Card>
      <Card>
        <RankList
          title="Most expensive reviews"
          format={(v) => money(v)}
          rows={stats.topCost.map((t) => ({
            key: String(t.id),
            label: (
              <Link to="/reviews/$id" params={{ id: String(t.id) }} className="mono">
                {t.repo_full_name}#{t.pr_number}
              </Link>
            ),
            value: t.cost,
          }))}
        />
      </Card>
      <Card>
        <RankList
          title="Cost by model"
          format={(v) => money(v)}
          rows={stats.models
            .slice()
            .sort((a, b) => b.cost - a.cost)
            .map((m) => ({ key: m.model, label: <span className="mono">{m.model}</span>, value: m.cost }))}
        />
      </Card>
    </div>
  );
}
