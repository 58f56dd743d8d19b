// The frame of every page: navigation, the live badge, who is signed in; the sign-in page
// instead when the OAuth gate is on and there is no session.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, Outlet } from "@tanstack/react-router";
import { useEffect } from "react";
import { q } from "./api/queries";
import { LiveBadge, LiveProvider } from "./live";
import { SignInPage } from "./pages/signin";
import { GlobalSearch } from "./components/search";
import { ErrorBox, Loading } from "./components/ui";

const NAV: [string, string][] = [
  ["/", "Overview"],
  ["/repos", "Repositories"],
  ["/reviews", "Reviews"],
  ["/stats", "Stats"],
  ["/chat", "Chat"],
  ["/skills", "Skills"],
  ["/settings", "Settings"],
];

export function Layout() {
  const client = useQueryClient();
  const auth = useQuery(q.authStatus());
  const gated = auth.data?.enabled === true;
  const session = useQuery({ ...q.session(), enabled: gated });
  useEffect(() => {
    const on = () => void client.invalidateQueries({ queryKey: ["auth-session"] });
    window.addEventListener("review:unauthorized", on);
    return () => window.removeEventListener("review:unauthorized", on);
  }, [client]);
  if (auth.isPending || (gated && session.isPending)) return <Loading what="Starting" />;
  if (auth.error) return <ErrorBox error={auth.error} retry={() => void auth.refetch()} />;
  const login = session.data?.user?.login;
  if (gated && !login) return <SignInPage />;
  return (
    <LiveProvider enabled>
      <a href="#main" className="skip">
        Skip to content
      </a>
      <div className="shell">
        <header className="sidebar">
          <div className="brand">
            <span className="logo" aria-hidden="true">
              ✓
            </span>
            review-server
          </div>
          <GlobalSearch />
          <nav aria-label="Main">
            <ul>
              {NAV.map(([to, label]) => (
                <li key={to}>
                  <Link to={to} activeOptions={{ exact: to === "/", includeSearch: false }} activeProps={{ "aria-current": "page", className: "active" }}>
                    {label}
                  </Link>
                </li>
              ))}
            </ul>
          </nav>
          <div className="side-foot">
            <LiveBadge />
            {gated && login && <SignedIn login={login} />}
          </div>
        </header>
        <main id="main" tabIndex={-1}>
          <Outlet />
        </main>
      </div>
    </LiveProvider>
  );
}

function SignedIn({ login }: { login: string }) {
  const client = useQueryClient();
  return (
    <div className="signed-in">
      <span className="small">
        Signed in as <strong data-testid="signed-in-login">{login}</strong>
      </span>
      <button
        type="button"
        className="btn small"
        onClick={async () => {
          await fetch("/api/auth/signout", { method: "POST", credentials: "same-origin" });
          await client.invalidateQueries();
        }}
      >
        Sign out
      </button>
    </div>
  );
}

export function NotFound() {
  return (
    <div className="stack">
      <h1>Page not found</h1>
      <p>
        <Link to="/">Back to the overview</Link>
      </p>
    </div>
  );
}
