// Query keys and fetchers, one per resource. Keys start with the resource name so that a live
// event invalidates exactly the queries it concerns (see live.tsx).
import { infiniteQueryOptions, queryOptions } from "@tanstack/react-query";
import { api, unwrap, repoParams, type Filters, type Schemas } from "./client";

export const q = {
  authStatus: () =>
    queryOptions({
      queryKey: ["auth-status"],
      queryFn: async () => unwrap(await api.GET("/api/auth-status")),
      staleTime: 60_000,
    }),
  session: () =>
    queryOptions({
      queryKey: ["auth-session"],
      queryFn: async (): Promise<{ user?: { name?: string; login?: string } } | null> => {
        const r = await fetch("/api/auth/session", { credentials: "same-origin" });
        if (!r.ok) return null;
        return (await r.json()) as { user?: { name?: string; login?: string } } | null;
      },
    }),
  stats: (f: Filters) =>
    queryOptions({
      queryKey: ["stats", f],
      queryFn: async () => unwrap(await api.GET("/api/stats", { params: { query: f } })),
    }),
  charts: (f: Filters) =>
    queryOptions({
      queryKey: ["charts", f],
      queryFn: async () => unwrap(await api.GET("/api/stats/charts", { params: { query: f } })),
    }),
  outcomes: (f: Filters) =>
    queryOptions({
      queryKey: ["stats", "outcomes", f],
      queryFn: async () => unwrap(await api.GET("/api/stats/outcomes", { params: { query: f } })),
    }),
  budget: () =>
    queryOptions({
      queryKey: ["budget"],
      queryFn: async () => unwrap(await api.GET("/api/budget")),
    }),
  reviews: (f: Filters & { limit?: string }) =>
    queryOptions({
      queryKey: ["reviews", "list", f],
      queryFn: async () => unwrap(await api.GET("/api/reviews", { params: { query: f } })),
    }),
  /** The review list page by page (docs/review-service.md, "Review list paging"): each page
   * asks for the ids under the last one shown; X-Total-Count says how many match in all. */
  reviewPages: (f: Filters, pageSize: number) =>
    infiniteQueryOptions({
      queryKey: ["reviews", "pages", f, pageSize],
      initialPageParam: undefined as number | undefined,
      queryFn: async ({ pageParam }) => {
        const query = { ...f, limit: String(pageSize), ...(pageParam ? { before: String(pageParam) } : {}) };
        const result = await api.GET("/api/reviews", { params: { query } });
        const rows = unwrap(result);
        const total = Number(result.response.headers.get("x-total-count") ?? rows.length);
        return { rows, total };
      },
      getNextPageParam: (last) => (last.rows.length < pageSize ? undefined : last.rows[last.rows.length - 1]?.id),
    }),
  review: (id: number) =>
    queryOptions({
      queryKey: ["reviews", "one", id],
      queryFn: async () =>
        unwrap(await api.GET("/api/reviews/{id}", { params: { path: { id: String(id) } } })),
    }),
  findings: (id: number) =>
    queryOptions({
      queryKey: ["findings", id],
      queryFn: async () =>
        unwrap(
          await api.GET("/api/reviews/{id}/findings", { params: { path: { id: String(id) } } }),
        ),
    }),
  dropped: (id: number) =>
    queryOptions({
      queryKey: ["findings", id, "dropped"],
      queryFn: async () =>
        unwrap(
          await api.GET("/api/reviews/{id}/dropped", { params: { path: { id: String(id) } } }),
        ),
    }),
  transcript: (id: number) =>
    queryOptions({
      queryKey: ["transcript", id],
      queryFn: async () =>
        transcriptOf(
          unwrap(await api.GET("/api/reviews/{id}/session", { params: { path: { id: String(id) } } })),
        ),
    }),
  repos: () =>
    queryOptions({
      queryKey: ["repos", "list"],
      queryFn: async () => unwrap(await api.GET("/api/repos")),
    }),
  repo: (fullName: string) =>
    queryOptions({
      queryKey: ["repos", "one", fullName],
      queryFn: async () =>
        unwrap(
          await api.GET("/api/repos/{owner}/{name}", {
            params: { path: repoParams(fullName) },
          }),
        ),
    }),
  repoReviews: (fullName: string) =>
    queryOptions({
      queryKey: ["reviews", "repo", fullName],
      queryFn: async () =>
        unwrap(
          await api.GET("/api/repos/{owner}/{name}/reviews", {
            params: { path: repoParams(fullName) },
          }),
        ),
    }),
  prReviews: (fullName: string, pr: number) =>
    queryOptions({
      queryKey: ["reviews", "pr", fullName, pr],
      queryFn: async () =>
        unwrap(
          await api.GET("/api/repos/{owner}/{name}/pr/{number}", {
            params: { path: { ...repoParams(fullName), number: String(pr) } },
          }),
        ),
    }),
  /** What is in force: each role's model and its source, the keys, FORGE_URL, the alarms
   * (docs/review-service.md, "Settings in force"). */
  effective: () =>
    queryOptions({
      queryKey: ["settings", "effective"],
      queryFn: async () => unwrap(await api.GET("/api/settings/effective")),
      staleTime: 60_000,
    }),
  /** Per-repository numbers and the top files (docs/review-service.md, "Repository scores"). */
  repoScores: (f: Filters) =>
    queryOptions({
      queryKey: ["stats", "repos", f],
      queryFn: async () => unwrap(await api.GET("/api/stats/repos", { params: { query: f } })),
    }),
  settings: () =>
    queryOptions({
      queryKey: ["settings"],
      queryFn: async () => unwrap(await api.GET("/api/settings")) as Record<string, string>,
    }),
  models: (search: string) =>
    queryOptions({
      queryKey: ["models", search],
      queryFn: async () =>
        unwrap(await api.GET("/api/models", { params: { query: { q: search, all: "1" } } })),
      staleTime: 5 * 60_000,
    }),
  skills: () =>
    queryOptions({
      queryKey: ["skills"],
      queryFn: async () => unwrap(await api.GET("/api/skills")),
    }),
};

/** One item of an agent transcript, as the OpenAPI document's `TranscriptItem` names it. */
export type TranscriptItem = Schemas["TranscriptItem"];

/** GET /api/reviews/:id/session as one shape: the transcript's items and the agent's own
 * `error`, or an `error` code (`session-unavailable`, `session-unparseable`) with its `detail`
 * or `raw` text and no items. */
export interface Transcript {
  items: TranscriptItem[];
  status?: string;
  error?: string;
  detail?: string;
  raw?: string;
}

function transcriptOf(body: Schemas["SessionBody"]): Transcript {
  if ("items" in body) return { items: body.items, status: body.status, error: body.error };
  if ("detail" in body) return { items: [], error: body.error, detail: body.detail };
  return { items: [], error: body.error, raw: body.raw };
}
