// The routes of the app (TanStack Router, code-based): every page with its URL.
import { createRootRoute, createRoute, createRouter, lazyRouteComponent } from "@tanstack/react-router";
import { validateFilters } from "./components/filters";
import { Layout, NotFound } from "./layout";
import { OverviewPage } from "./pages/overview";
import { RepoPage, ReposPage, PrHistoryPage } from "./pages/repos";
import { ReviewPage, ReviewsPage } from "./pages/reviews";
import { StatsPage } from "./pages/stats";
import { SettingsPage, SkillsPage } from "./pages/settings";

const root = createRootRoute({ component: Layout, notFoundComponent: NotFound });
const overview = createRoute({ getParentRoute: () => root, path: "/", component: OverviewPage, validateSearch: validateFilters });
const stats = createRoute({ getParentRoute: () => root, path: "/stats", component: StatsPage, validateSearch: validateFilters });
const repos = createRoute({ getParentRoute: () => root, path: "/repos", component: ReposPage });
const repo = createRoute({ getParentRoute: () => root, path: "/repos/$owner/$name", component: RepoPage });
const pr = createRoute({ getParentRoute: () => root, path: "/repos/$owner/$name/pr/$number", component: PrHistoryPage });
const reviews = createRoute({ getParentRoute: () => root, path: "/reviews", component: ReviewsPage, validateSearch: validateFilters });
const review = createRoute({ getParentRoute: () => root, path: "/reviews/$id", component: ReviewPage });
const settings = createRoute({ getParentRoute: () => root, path: "/settings", component: SettingsPage });
const skills = createRoute({ getParentRoute: () => root, path: "/skills", component: SkillsPage });
// The chat page brings the AI SDK (a quarter of the JavaScript): loaded only when opened.
const chat = createRoute({ getParentRoute: () => root, path: "/chat", component: lazyRouteComponent(() => import("./pages/chat"), "ChatPage") });

const routeTree = root.addChildren([overview, stats, repos, repo, pr, reviews, review, settings, skills, chat]);

export const router = createRouter({ routeTree, defaultPreload: "intent" });

declare module "@tanstack/react-router" {
  interface Register {
    router: typeof router;
  }
}
