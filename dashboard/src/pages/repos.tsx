// Repositories: the list with the enable toggle; a repository with its prompt, model, improve,
// delete, and its reviews grouped by pull request.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, getRouteApi, useNavigate } from "@tanstack/react-router";
import { useState } from "react";
import { api, repoParams, unwrap, type Repo, type Review } from "../api/client";
import { q } from "../api/queries";
import { ModelPicker } from "../components/model-picker";
import { Card, Empty, ErrorBox, NotFoundPage, Query, ReviewTable, StatusBadge, Time, isNotFound, money } from "../components/ui";

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

export function ReposPage() {
  const repos = useQuery(q.repos());
  return (
    <>
      <header className="page-head">
        <h1>Repositories</h1>
        <p className="muted">A repository is registered by its first webhook; reviews run only while it is enabled.</p>
      </header>
      <Card>
        <Query q={repos} what="Loading repositories">
          {(rows) =>
            rows.length === 0 ? (
              <Empty>No repository yet: install the GitHub App on one and open a pull request.</Empty>
            ) : (
              <div className="table-wrap">
                <table>
                  <caption className="sr-only">Repositories</caption>
                  <thead>
                    <tr>
                      <th scope="col">Repository</th>
                      <th scope="col">Reviews</th>
                      <th scope="col" className="hide-narrow">Model</th>
                      <th scope="col" className="hide-narrow">Prompt</th>
                      <th scope="col">Added</th>
                    </tr>
                  </thead>
                  <tbody>
                    {rows.map((r) => (
                      <tr key={r.full_name} data-repo={r.full_name}>
                        <td>
                          <Link to="/repos/$owner/$name" params={repoParams(r.full_name)} className="mono">
                            {r.full_name}
                          </Link>
                        </td>
                        <td>
                          <EnableToggle repo={r} />
                        </td>
                        <td className="hide-narrow mono small">{r.model ?? <span className="muted">default</span>}</td>
                        <td className="hide-narrow small">{r.prompt ? "custom" : <span className="muted">default</span>}</td>
                        <td>
                          <Time at={r.created_at} />
                        </td>
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
            <RepoSettings key={r.full_name} repo={r} />
          </>
        )}
      </Query>
      <Card title="Reviews by pull request">
        <Query q={reviews} what="Loading reviews">
          {(rows) => <ReviewsByPr rows={rows} />}
        </Query>
      </Card>
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
        <label htmlFor="repo-prompt">Prompt (empty: the default prompt)</label>
        <textarea id="repo-prompt" rows={8} value={prompt} onChange={(e) => setPrompt(e.target.value)} />
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

function ReviewsByPr({ rows }: { rows: Review[] }) {
  if (rows.length === 0) return <Empty>No reviews for this repository yet.</Empty>;
  const groups = new Map<number, Review[]>();
  for (const r of rows) groups.set(r.pr_number, [...(groups.get(r.pr_number) ?? []), r]);
  return (
    <div className="stack">
      {[...groups.entries()].map(([pr, list]) => {
        const latest = list[0];
        if (!latest) return null;
        return (
          <details key={pr} className="pr-group" open={groups.size <= 5}>
            <summary>
              <span className="mono">{pr === 0 ? "improver runs" : `#${pr}`}</span> {latest.title ?? ""}{" "}
              <StatusBadge status={latest.status} /> <span className="muted small">{list.length} review(s) · {prCost(list)}</span>
            </summary>
            {pr !== 0 && (
              <p className="small">
                <Link to="/repos/$owner/$name/pr/$number" params={{ ...repoParams(latest.repo_full_name), number: String(pr) }}>
                  PR history →
                </Link>
              </p>
            )}
            <ReviewTable rows={list} caption={`Reviews of PR ${pr}`} />
          </details>
        );
      })}
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
