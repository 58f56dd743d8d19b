// Every REST call of the app goes through this typed client (openapi-fetch over the types that
// openapi-typescript generates from GET /api/openapi.json) and TanStack Query.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema";

export const api = createClient<paths>({ baseUrl: window.location.origin });

export type Schemas = components["schemas"];
export type Repo = Schemas["RepoRow"];
export type Review = Schemas["ReviewRow"];
export type Finding = Schemas["FindingRow"];
export type DroppedFinding = Schemas["DroppedFindingRow"];
export type Skill = Schemas["SkillMetaRow"];
export type Stats = Schemas["Stats"];
export type Charts = Schemas["Charts"];
export type OutcomeStats = Schemas["OutcomeStats"];
export type OutcomeStatsRow = Schemas["OutcomeStatsRow"];
export type Budget = Schemas["BudgetReport"];
export type Effective = Schemas["EffectiveSettings"];
export type RepoScores = Schemas["RepoScores"];
export type RepoScore = Schemas["RepoScoreRow"];

/** An API failure with the status and the server's message. */
export class ApiFailure extends Error {
  constructor(
    public status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The data of an openapi-fetch result, or an [`ApiFailure`] naming the server's error. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.response.ok && result.data !== undefined) return result.data;
  if (result.response.ok && result.response.status === 204) return undefined as T;
  const err = result.error;
  let message = `${result.response.status} ${result.response.statusText}`;
  if (typeof err === "string" && err) message = err;
  else if (err && typeof err === "object" && "error" in err && typeof err.error === "string") {
    message = err.error;
  }
  if (result.response.status === 401) window.dispatchEvent(new Event("review:unauthorized"));
  throw new ApiFailure(result.response.status, message);
}

/** Split `owner/name` into the two path parameters. */
export function repoParams(fullName: string): { owner: string; name: string } {
  const at = fullName.lastIndexOf("/");
  return at < 0 ? { owner: fullName, name: "" } : { owner: fullName.slice(0, at), name: fullName.slice(at + 1) };
}

/** The stats filters shared by the overview, the stats page and the review list (docs/review-service.md §4). */
export interface Filters {
  range?: string;
  from?: string;
  to?: string;
  repo?: string;
  model?: string;
  status?: string;
}

/** Only the filters that are set, so the URL and the query keys stay short. */
export function cleanFilters(f: Filters): Filters {
  const out: Filters = {};
  for (const [k, v] of Object.entries(f)) {
    if (typeof v === "string" && v !== "") out[k as keyof Filters] = v;
  }
  return out;
}
