// The one EventSource of the app (docs/review-service.md §6): every event invalidates the queries it
// concerns; after a reconnect everything is refetched once; the badge shows live or offline.
// REST stays the source of truth, so every page works with the stream down.
import { useQueryClient, type QueryClient } from "@tanstack/react-query";
import { createContext, useContext, useEffect, useState, type ReactNode } from "react";
import type { Schemas } from "./api/client";

export type LiveState = "connecting" | "live" | "offline";
const LiveContext = createContext<LiveState>("connecting");

/** One event's payload, as the OpenAPI document's `LiveEvent` names it (the server's
 * `events::Payload`). */
export type LiveEvent = Schemas["LiveEvent"];

/** Invalidate the queries one event concerns (query keys in api/queries.ts). */
export function invalidateFor(client: QueryClient, event: LiveEvent) {
  const inv = (key: unknown[]) => void client.invalidateQueries({ queryKey: key });
  switch (event.type) {
    case "review:created":
    case "review:updated":
      inv(["reviews"]);
      inv(["stats"]);
      inv(["charts"]);
      inv(["budget"]);
      inv(["transcript", event.review.id]);
      break;
    case "review:findings":
      inv(["findings", event.reviewId]);
      inv(["stats"]);
      inv(["charts"]);
      break;
    case "repo:updated":
    case "repo:removed":
      inv(["repos"]);
      inv(["budget"]);
      inv(["models"]);
      break;
    case "webhook:received":
      break;
  }
}

export function LiveProvider({ children, enabled }: { children: ReactNode; enabled: boolean }) {
  const client = useQueryClient();
  const [state, setState] = useState<LiveState>("connecting");
  useEffect(() => {
    if (!enabled) return;
    const source = new EventSource("/api/events");
    let opened = false;
    source.addEventListener("heartbeat", () => setState("live"));
    source.onopen = () => {
      setState("live");
      // A reconnect may have missed events (there is no replay): refetch everything once.
      if (opened) void client.invalidateQueries();
      opened = true;
    };
    source.onerror = () => setState("offline");
    source.onmessage = (m) => {
      try {
        invalidateFor(client, JSON.parse(m.data as string) as LiveEvent);
      } catch {
        // A frame that is not JSON is ignored; the next refetch corrects anything missed.
      }
    };
    return () => source.close();
  }, [client, enabled]);
  return <LiveContext.Provider value={state}>{children}</LiveContext.Provider>;
}

export function useLive(): LiveState {
  return useContext(LiveContext);
}

export function LiveBadge() {
  const state = useLive();
  const label = state === "live" ? "live" : state === "offline" ? "offline" : "connecting";
  return (
    <span className={`badge live-${state}`} role="status" aria-live="polite" data-testid="live-badge">
      <span className="dot" aria-hidden="true" />
      {label}
    </span>
  );
}
