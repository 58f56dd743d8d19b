// Repositories: the list with the enable toggle; a repository with its prompt, model, improve,
// delete, and its reviews grouped by pull request.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, getRouteApi, useNavigate } from "@tanstack/react-router";
import { useState } from "react";
import { api, repoParams, unwrap, type Repo, type RepoScore, type Review } from "../api/client";
import { q } from "../api/queries";
import { ModelPicker } from "../components/model-picker";
import { Card, Empty, ErrorBox, NotFoundPage, Pre, Query, ReviewTable, StatusBadge, Time, count, duration, isNotFound, money, useForgeLinks } from "../components/ui";

function useSaveRepo() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: async (r: {
      full_name: string;
      enabled?: number;
      prompt: string | null;
      model: string | null;
      min_severity?: string;
      monthly_budget?: number | null;
    }) =>
      unwrap(
        await api.PUT("/api/repos/{owner}/{name}", {
          params: { path: repoParams(r.full_name) },
          // min_severity and monthly_budget: omitted keeps them, "" or null clears them
          // (docs/review-service.md §4, Repos rule 2).
          body: {
            enabled: r.enabled,
            prompt: r.prompt ?? undefined,
            model: r.model ?? undefined,
            min_severity: r.min_severity,
            monthly_budget: r.monthly_budget,
          },
        }),
      ),
    onSuccess: () => client.invalidateQueries({ queryKey: ["repos"] }),
  });
}

export function EnableToggle({ repo }: { repo: Repo }) {
  const save = useSaveRepo();
  const on = repo.enabled === 1;
  return (
    <span className="toggle-wrap">
      <button
        type="button"
        role="switch"
        aria-checked={on}
        aria-label={`Reviews for ${repo.full_name}`}
        className={`switch ${on ? "on" : ""}`}
        disabled={save.isPending}
        // PUT writes prompt and model unconditionally (docs/review-service.md §4): send them back unchanged.
        onClick={() => save.mutate({ full_name: repo.full_name, enabled: on ? 0 : 1, prompt: repo.prompt ?? null, model: repo.model ?? null })}
      >
        <span className="knob" aria-hidden="true" />
      </button>
      <span className="small">{on ? "enabled" : "disabled"}</span>
      {save.error && <span role="alert" className="error-text">{save.error.message}</span>}
    </span>
  );
}

/** The numbers of the repositories table and the repository cards: 30 days. */
const SCORE_WINDOW = { range: "30d" };

type SortKey = "name" | "reviews" | "cost" | "failureRate" | "findingsPerReview" | "nitShare" | "lastReview";

/** One repository's row: its registration and its 30-day numbers (zero when it had none). */
interface RepoLine {
  repo: Repo;
  score: RepoScore | undefined;
  values: Record<SortKey, number | string | null>;
}

function ratio(a: number, b: number): number | null {
  return b > 0 ? a / b : null;
}

function lines(repos: Repo[], scores: RepoScore[]): RepoLine[] {
  const by = new Map(scores.map((s) => [s.repo_full_name, s]));
  return repos.map((repo) => {
    const s = by.get(repo.full_name);
    return {
      repo,
      score: s,
      values: {
        name: repo.full_name,
        reviews: s?.reviews ?? 0,
        cost: s?.cost ?? 0,
        failureRate: s ? ratio(s.failed, s.completed + s.failed) : null,
        findingsPerReview: s ? ratio(s.findings, s.completed) : null,
        nitShare: s ? ratio(s.nits, s.findings) : null,
        lastReview: s?.last_review_at ?? null,
      },
    };
  });
}

const pct = (v: number | null | string) => (typeof v === "number" ? `${(v * 100).toFixed(v === 0 || v === 1 ? 0 : 1)}%` : "—");
const fixed = (v: number | null | string) => (typeof v === "number" ? v.toFixed(1) : "—");

const COLUMNS: { key: SortKey; label: string; num?: boolean; narrow?: boolean }[] = [
  { key: "name", label: "Repository" },
  { key: "reviews", label: "Reviews (30d)", num: true },
  { key: "cost", label: "Cost (30d)", num: true },
  { key: "failureRate", label: "Failure rate", num: true, narrow: true },
  { key: "findingsPerReview", label: "Findings per review", num: true, narrow: true },
  { key: "nitShare", label: "Share of nits", num: true, narrow: true },
  { key: "lastReview", label: "Last review", narrow: true },
];

export function ReposPage() {
  const repos = useQuery(q.repos());
  const scores = useQuery(q.repoScores(SCORE_WINDOW));
  const [sort, setSort] = useState<{ key: SortKey; desc: boolean }>({ key: "reviews", desc: true });
  const sorted = (rows: RepoLine[]) =>
    [...rows].sort((a, b) => {
      const x = a.values[sort.key];
      const y = b.values[sort.key];
      // Unknown values sort last whichever the direction.
      if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
      const c = typeof x === "string" && typeof y === "string" ? x.localeCompare(y) : Number(x) - Number(y);
      return (sort.desc ? -c : c) || a.repo.full_name.localeCompare(b.repo.full_name);
    });
  const header = (c: (typeof COLUMNS)[number]) => {
    const active = sort.key === c.key;
    return (
      <th
        key={c.key}
        scope="col"
        className={`${c.num ? "num" : ""} ${c.narrow ? "hide-narrow" : ""}`}
        aria-sort={active ? (sort.desc ? "descending" : "ascending") : "none"}
      >
        <button type="button" className="sort" onClick={() => setSort({ key: c.key, desc: active ? !sort.desc : c.key !== "name" })}>
          {c.label}
          <span aria-hidden="true">{active ? (sort.desc ? " ▼" : " ▲") : ""}</span>
        </button>
      </th>
    );
  };
  return (
    <>
      <header className="page-head">
        <h1>Repositories</h1>
        <p className="muted">A repository is registered by its first webhook; reviews run only while it is enabled. Numbers cover the last 30 days.</p>
      </header>
      <Card>
        <Query q={repos} what="Loading repositories">
          {(rows) =>
            rows.length === 0 ? (
              <Empty>No repository yet: install the GitHub App on one and open a pull request.</Empty>
            ) : (
              <div className="table-wrap">
                <table data-testid="repos-table">
                  <caption className="sr-only">Repositories, sortable by each column</caption>
                  <thead>
                    <tr>
                      {COLUMNS.map(header)}
                      <th scope="col">Reviews</th>
                      <th scope="col" className="hide-narrow">Model</th>
                    </tr>
                  </thead>
                  <tbody>
                    {sorted(lines(rows, scores.data?.repos ?? [])).map(({ repo: r, values: v }) => (
                      <tr key={r.full_name} data-repo={r.full_name}>
                        <td>
                          <Link to="/repos/$owner/$name" params={repoParams(r.full_name)} className="mono">
                            {r.full_name}
                          </Link>
                        </td>
                        <td className="num">{count(v.reviews as number)}</td>
                        <td className="num">{money(v.cost as number)}</td>
                        <td className="num hide-narrow">{pct(v.failureRate)}</td>
                        <td className="num hide-narrow">{fixed(v.findingsPerReview)}</td>
                        <td className="num hide-narrow">{pct(v.nitShare)}</td>
                        <td className="hide-narrow">
                          <Time at={v.lastReview as number | null} />
                        </td>
                        <td>
                          <EnableToggle repo={r} />
                        </td>
                        <td className="hide-narrow mono small">{r.model ?? <span className="muted">default</span>}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )
          }
        </Query>
      </Card>
    </>
  );
}

/** The repository page's cards over 30 days (docs/review-service.md, "Repository scores"). */
function RepoCards({ fullName }: { fullName: string }) {
  const scores = useQuery(q.repoScores({ ...SCORE_WINDOW, repo: fullName }));
  if (!scores.data) return null;
  const s = scores.data.repos[0];
  const cards: [string, string, string?][] = s
    ? [
        ["Reviews", count(s.reviews), `${count(s.in_flight)} in flight`],
        ["Success rate", pct(ratio(s.completed, s.completed + s.failed)), `${count(s.failed)} failed`],
        ["Cost", money(s.cost), s.reviews > 0 ? `${money(s.cost / s.reviews)} per review` : undefined],
        ["Average time", duration(s.avg_duration)],
        ["Findings per review", fixed(ratio(s.findings, s.completed)), `${count(s.findings)} findings`],
        ["Blocking", pct(ratio(s.blocking_reviews, s.completed)), "of completed reviews"],
      ]
    : [["Reviews", "0", "none in the last 30 days"]];
  return (
    <dl className="stat-cards" data-testid="repo-cards" aria-label="The last 30 days">
      {cards.map(([label, value, sub]) => (
        <div className="stat" key={label}>
          <dt>{label}</dt>
          <dd>
            <span className="stat-value">{value}</span>
            {sub && <span className="muted small">{sub}</span>}
          </dd>
        </div>
      ))}
    </dl>
  );
}

const repoRoute = getRouteApi("/repos/$owner/$name");

export function RepoPage() {
  const { owner, name } = repoRoute.useParams();
  const fullName = `${owner}/${name}`;
  const repo = useQuery(q.repo(fullName));
  const reviews = useQuery(q.repoReviews(fullName));
  const back = <Link to="/repos">← Repositories</Link>;
  if (isNotFound(repo.error))
    return (
      <NotFoundPage title="Repository not found" back={back}>
        <span className="mono">{fullName}</span> is not registered: a repository appears with its first webhook.
      </NotFoundPage>
    );
  return (
    <>
      <p>{back}</p>
      <Query q={repo} what="Loading the repository">
        {(r) => (
          <>
            <header className="page-head row">
              {/* The page's heading at the size of every other page's; only the name is monospace. */}
              <h1>
                <span className="mono">{r.full_name}</span>
              </h1>
              <EnableToggle repo={r} />
            </header>
            <RepoCards fullName={r.full_name} />
            <Card title="Pull requests">
              <Query q={reviews} what="Loading reviews">
                {(rows) => <PrTable rows={rows} />}
              </Query>
            </Card>
            <RepoSettings key={r.full_name} repo={r} />
            <Card title="Improver runs">
              <Query q={reviews} what="Loading improver runs">
                {(rows) => <ReviewTable rows={rows.filter((x) => x.pr_number === 0)} caption="Improver runs" empty="No improver run yet." />}
              </Query>
            </Card>
          </>
        )}
      </Query>
    </>
  );
}

function RepoSettings({ repo }: { repo: Repo }) {
  const save = useSaveRepo();
  const client = useQueryClient();
  const navigate = useNavigate();
  const [prompt, setPrompt] = useState(repo.prompt ?? "");
  const [model, setModel] = useState(repo.model ?? "");
  const [minSeverity, setMinSeverity] = useState<string>(repo.min_severity ?? "");
  const [budget, setBudget] = useState<string>(repo.monthly_budget == null ? "" : String(repo.monthly_budget));
  const [confirming, setConfirming] = useState(false);
  const defaultPrompt = useQuery(q.settings());
  const improve = useMutation({
    mutationFn: async () =>
      unwrap(await api.POST("/api/repos/{owner}/{name}/improve", { params: { path: repoParams(repo.full_name) } })),
  });
  const remove = useMutation({
    mutationFn: async () =>
      unwrap(await api.DELETE("/api/repos/{owner}/{name}", { params: { path: repoParams(repo.full_name) } })),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: ["repos"] });
      await navigate({ to: "/repos" });
    },
  });
  return (
    <Card title="Review settings">
      <form
        className="stack"
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate({
            full_name: repo.full_name,
            prompt: prompt.trim() === "" ? null : prompt,
            model: model === "" ? null : model,
            min_severity: minSeverity,
            monthly_budget: budget.trim() === "" ? null : Number(budget),
          });
        }}
      >
        <div className="grid two">
          <div>
            <label htmlFor="repo-prompt">This repository's prompt (empty: the default prompt)</label>
            <textarea id="repo-prompt" rows={8} value={prompt} onChange={(e) => setPrompt(e.target.value)} />
          </div>
          <div data-testid="default-prompt">
            <p className="small">
              {prompt.trim() === "" ? <strong>In force: the default prompt</strong> : <span className="muted">Overridden: the default prompt</span>}{" "}
              (<Link to="/settings">Settings</Link>)
            </p>
            <Pre label="The default prompt" className="prewrap small">
              {defaultPrompt.data?.default_prompt?.trim() ? defaultPrompt.data.default_prompt : "None set: the agent's built-in review focus."}
            </Pre>
          </div>
        </div>
        <ModelPicker label="Model (empty: the default model)" value={model} onChange={setModel} />
        <label htmlFor="repo-min-severity">Least severity posted inline</label>
        <select id="repo-min-severity" value={minSeverity} onChange={(e) => setMinSeverity(e.target.value)}>
          <option value="">the global setting</option>
          <option value="nit">nit: all</option>
          <option value="question">question and blocking</option>
          <option value="blocking">blocking only</option>
        </select>
        <label htmlFor="repo-monthly-budget">Monthly budget in USD (empty: the global budget)</label>
        <input
          id="repo-monthly-budget"
          type="number"
          min="0"
          step="any"
          inputMode="decimal"
          value={budget}
          onChange={(e) => setBudget(e.target.value)}
        />
        <div className="row">
          <button type="submit" className="btn primary" disabled={save.isPending}>
            {save.isPending ? "Saving…" : "Save"}
          </button>
          {save.isSuccess && <span role="status">Saved.</span>}
          {save.error && <span role="alert" className="error-text">{save.error.message}</span>}
        </div>
      </form>
      <div className="row actions">
        <button type="button" className="btn" onClick={() => improve.mutate()} disabled={improve.isPending}>
          Improve the prompt from replies
        </button>
        {improve.isSuccess && <span role="status">Improver queued; it may decline when there is nothing new.</span>}
        {improve.error && <span role="alert" className="error-text">{improve.error.message}</span>}
        {confirming ? (
          <span className="row" role="group" aria-label="Confirm deletion">
            <span>Delete {repo.full_name} and stop reviewing it?</span>
            <button type="button" className="btn danger" onClick={() => remove.mutate()} disabled={remove.isPending}>
              Yes, delete
            </button>
            <button type="button" className="btn" onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </span>
        ) : (
          <button type="button" className="btn danger" onClick={() => setConfirming(true)}>
            Delete…
          </button>
        )}
        {remove.error && <span role="alert" className="error-text">{remove.error.message}</span>}
      </div>
    </Card>
  );
}

/** The cost of a PR's reviews; unknown (not "$0.0000") while none has a cost yet, e.g. when its
 * only review is still running. */
function prCost(list: Review[]): string {
  const known = list.filter((r) => r.cost !== null && r.cost !== undefined);
  return known.length === 0 ? money(null) : money(known.reduce((a, r) => a + (r.cost ?? 0), 0));
}

/** One row per pull request: its runs, latest status, cost, last run, and its page on the
 * forge; improver runs (PR 0) are listed apart. */
function PrTable({ rows }: { rows: Review[] }) {
  const links = useForgeLinks();
  const prs = rows.filter((r) => r.pr_number !== 0);
  if (prs.length === 0) return <Empty>No reviews for this repository yet.</Empty>;
  const groups = new Map<number, Review[]>();
  for (const r of prs) groups.set(r.pr_number, [...(groups.get(r.pr_number) ?? []), r]);
  return (
    <div className="table-wrap">
      <table data-testid="pr-table">
        <caption className="sr-only">Pull requests</caption>
        <thead>
          <tr>
            <th scope="col">Pull request</th>
            <th scope="col" className="hide-narrow">Title</th>
            <th scope="col" className="num">Runs</th>
            <th scope="col">Latest</th>
            <th scope="col" className="num">Cost</th>
            <th scope="col" className="hide-narrow">Last run</th>
            <th scope="col" className="hide-narrow">On the forge</th>
          </tr>
        </thead>
        <tbody>
          {[...groups.entries()].map(([pr, list]) => {
            const latest = list[0];
            if (!latest) return null;
            return (
              <tr key={pr} data-pr={pr}>
                <td>
                  <Link to="/repos/$owner/$name/pr/$number" params={{ ...repoParams(latest.repo_full_name), number: String(pr) }} className="mono">
                    {links.sigil(latest.repo_full_name)}
                    {pr}
                  </Link>
                </td>
                <td className="hide-narrow">{latest.title ?? "—"}</td>
                <td className="num">{list.length}</td>
                <td>
                  <Link to="/reviews/$id" params={{ id: String(latest.id) }} aria-label={`Latest review of ${links.sigil(latest.repo_full_name)}${pr}: ${latest.status}`}>
                    <StatusBadge status={latest.status} />
                  </Link>
                </td>
                <td className="num">{prCost(list)}</td>
                <td className="hide-narrow">
                  <Time at={latest.created_at} />
                </td>
                <td className="hide-narrow">
                  {links.pull(latest.repo_full_name, pr) && (
                    <a href={links.pull(latest.repo_full_name, pr) ?? undefined} target="_blank" rel="noreferrer">
                      Open {links.sigil(latest.repo_full_name)}
                      {pr}
                      <span className="sr-only"> on the forge</span> ↗
                    </a>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

const prRoute = getRouteApi("/repos/$owner/$name/pr/$number");

export function PrHistoryPage() {
  const { owner, name, number } = prRoute.useParams();
  const fullName = `${owner}/${name}`;
  const reviews = useQuery(q.prReviews(fullName, Number(number)));
  return (
    <>
      <p>
        <Link to="/repos/$owner/$name" params={{ owner, name }}>
          ← {fullName}
        </Link>
      </p>
      <header className="page-head">
        <h1>
          <span className="mono">
            {fullName}#{number}
          </span>{" "}
          history
        </h1>
        <p className="muted">Every review of this pull request, newest first.</p>
      </header>
      <Card>
        <Query q={reviews} what="Loading the history">
          {(rows) => <ReviewTable rows={rows} caption={`Reviews of ${fullName}#${number}`} />}
        </Query>
      </Card>
      {reviews.error && <ErrorBox error={reviews.error} />}
    </>
  );
}
