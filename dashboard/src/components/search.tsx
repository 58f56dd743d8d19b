// Global search and keyboard shortcuts (issue 30): a pull request as `owner/repo#123`, a review
// as `#123` or `123`, a repository as `owner/repo`; `/` focuses the search, `j`/`k` move through
// the rows of a table and Enter opens one, `?` lists the shortcuts. No shortcut fires while a
// field has the keyboard.
import { useNavigate } from "@tanstack/react-router";
import { useEffect, useRef, useState } from "react";

/** Where a search goes: a PR page, a review, a repository, or nothing it understands. */
export type Target =
  | { to: "/repos/$owner/$name/pr/$number"; params: { owner: string; name: string; number: string } }
  | { to: "/reviews/$id"; params: { id: string } }
  | { to: "/repos/$owner/$name"; params: { owner: string; name: string } }
  | null;

const NAME = "[A-Za-z0-9_.-]+";

/** Reads a search: `owner/repo#123` (a pull request), `#123` or `123` (a review id),
 * `owner/repo` (a repository); anything else is null. */
export function parseSearch(text: string): Target {
  const s = text.trim();
  const pr = new RegExp(`^(${NAME})/(${NAME})#(\\d{1,9})$`).exec(s);
  if (pr?.[1] && pr[2] && pr[3]) return { to: "/repos/$owner/$name/pr/$number", params: { owner: pr[1], name: pr[2], number: pr[3] } };
  const review = /^#?(\d{1,12})$/.exec(s);
  if (review?.[1]) return { to: "/reviews/$id", params: { id: review[1] } };
  const repo = new RegExp(`^(${NAME})/(${NAME})$`).exec(s);
  if (repo?.[1] && repo[2]) return { to: "/repos/$owner/$name", params: { owner: repo[1], name: repo[2] } };
  return null;
}

const SHORTCUTS: [string, string][] = [
  ["/", "Search: owner/repo#123, #123 or owner/repo"],
  ["j", "Next row of the table"],
  ["k", "Previous row of the table"],
  ["Enter", "Open the highlighted row"],
  ["?", "This list"],
  ["Esc", "Close this list, or leave the search"],
];

/** Whether a key press belongs to a field being typed in. */
function typing(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (el.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName));
}

export function GlobalSearch() {
  const navigate = useNavigate();
  const input = useRef<HTMLInputElement>(null);
  const dialog = useRef<HTMLDialogElement>(null);
  const [text, setText] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    let row = -1;
    const rows = () => [...document.querySelectorAll<HTMLTableRowElement>("main tbody tr")];
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
      if (e.key === "/") {
        e.preventDefault();
        input.current?.focus();
      } else if (e.key === "?") {
        e.preventDefault();
        dialog.current?.showModal();
      } else if (e.key === "j" || e.key === "k") {
        const list = rows();
        if (list.length === 0) return;
        list[row]?.classList.remove("kbd-row");
        row = Math.max(0, Math.min(list.length - 1, row + (e.key === "j" ? 1 : -1)));
        const current = list[row];
        current?.classList.add("kbd-row");
        current?.scrollIntoView({ block: "nearest" });
        current?.querySelector<HTMLAnchorElement>("a")?.focus({ preventScroll: true });
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
  return (
    <>
      <form
        role="search"
        className="global-search"
        onSubmit={(e) => {
          e.preventDefault();
          const target = parseSearch(text);
          if (!target) {
            setProblem("Type owner/repo#123, #123 or owner/repo.");
            return;
          }
          setProblem(null);
          setText("");
          input.current?.blur();
          void navigate(target);
        }}
      >
        <label htmlFor="global-search" className="sr-only">
          Go to a pull request (owner/repo#123), a review (#id) or owner/repo
        </label>
        <input
          id="global-search"
          ref={input}
          type="search"
          value={text}
          placeholder="owner/repo#12, #id  ( / )"
          autoComplete="off"
          onChange={(e) => setText(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Escape") input.current?.blur();
          }}
        />
        {problem && (
          <p className="small error-text" role="alert">
            {problem}
          </p>
        )}
        <button type="button" className="btn small" onClick={() => dialog.current?.showModal()}>
          Shortcuts <span aria-hidden="true">?</span>
        </button>
      </form>
      <dialog ref={dialog} className="shortcuts" aria-labelledby="shortcuts-title" data-testid="shortcuts">
        <h2 id="shortcuts-title">Keyboard shortcuts</h2>
        <dl>
          {SHORTCUTS.map(([key, what]) => (
            <div key={key} className="row">
              <dt>
                <kbd>{key}</kbd>
              </dt>
              <dd>{what}</dd>
            </div>
          ))}
        </dl>
        <form method="dialog">
          <button type="submit" className="btn">
            Close
          </button>
        </form>
      </dialog>
    </>
  );
}
