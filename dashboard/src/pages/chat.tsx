// Chat: questions about the recorded data, answered by the model through read-only SELECTs;
// the answer streams in and the SQL the model ran is shown (AI SDK useChat on POST /api/chat).
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, type UIMessage } from "ai";
import { useQuery } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { useState } from "react";
import { q } from "../api/queries";
import { Card } from "../components/ui";

// The server recomputes every answer from the user's questions only (docs/review-service.md §4, Chat,
// rule 1), so only those are sent: an assistant answer can be longer than a part may be.
const transport = new DefaultChatTransport({
  api: "/api/chat",
  credentials: "same-origin",
  prepareSendMessagesRequest: ({ messages }) => ({
    body: {
      messages: messages
        .filter((m) => m.role === "user")
        .slice(-40)
        .map((m) => ({ id: m.id, role: m.role, parts: m.parts.filter((p) => p.type === "text") })),
    },
  }),
});

const EXAMPLES = [
  "How many reviews failed in the last 7 days, and why?",
  "Which repository cost the most this month?",
  "What are the five files with the most blocking findings?",
];

export function ChatPage() {
  const { messages, sendMessage, status, error, stop } = useChat({ transport });
  const [input, setInput] = useState("");
  const busy = status === "submitted" || status === "streaming";
  const ask = (text: string) => {
    if (!text.trim() || busy) return;
    void sendMessage({ text: text.trim() });
    setInput("");
  };
  // The configuration first: with no model that can answer, say so and where to fix it
  // (docs/review-service.md, "Settings in force") instead of letting the question fail.
  const effective = useQuery(q.effective());
  const chatModel = effective.data?.models.find((m) => m.role === "chat");
  return (
    <>
      <header className="page-head">
        <h1>Chat</h1>
        <p className="muted">Ask about reviews, costs and findings; answers come from read-only queries on this server's database.</p>
      </header>
      {chatModel?.problem && (
        <div className="error-box" role="alert" data-testid="chat-unavailable">
          <span>
            Chat cannot answer: its model <span className="mono">{chatModel.model}</span> {chatModel.problem}.
          </span>
          <Link to="/settings">Fix it in Settings →</Link>
        </div>
      )}
      <Card>
        {messages.length === 0 && (
          <div className="stack">
            <p className="muted">Try one of these:</p>
            <div className="row examples">
              {EXAMPLES.map((e) => (
                <button key={e} type="button" className="btn small" onClick={() => ask(e)}>
                  {e}
                </button>
              ))}
            </div>
          </div>
        )}
        <ol className="conversation" aria-live="polite" data-testid="chat-log">
          {messages.map((m) => (
            <Message key={m.id} message={m} />
          ))}
          {status === "submitted" && (
            <li className="turn assistant muted" role="status">
              Thinking…
            </li>
          )}
        </ol>
        {error && (
          <p role="alert" className="error-text">
            {chatError(error)}
          </p>
        )}
        <form
          className="row nowrap chat-form"
          onSubmit={(e) => {
            e.preventDefault();
            ask(input);
          }}
        >
          <label htmlFor="chat-input" className="sr-only">
            Question
          </label>
          <input
            id="chat-input"
            type="text"
            value={input}
            maxLength={4000}
            placeholder="Ask a question about the reviews"
            onChange={(e) => setInput(e.target.value)}
          />
          {busy ? (
            <button type="button" className="btn" onClick={() => void stop()}>
              Stop
            </button>
          ) : (
            <button type="submit" className="btn primary" disabled={!input.trim()}>
              Ask
            </button>
          )}
        </form>
      </Card>
    </>
  );
}

function chatError(error: Error): string {
  try {
    const parsed = JSON.parse(error.message) as { error?: string };
    if (parsed.error) return parsed.error;
  } catch {
    // not JSON: the message as it is
  }
  return error.message;
}

function Message({ message }: { message: UIMessage }) {
  return (
    <li className={`turn ${message.role}`} data-role={message.role}>
      <p className="who">{message.role === "user" ? "You" : "Answer"}</p>
      {message.parts.map((part, i) => {
        if (part.type === "text") return <p key={i} className="prewrap">{part.text}</p>;
        if (part.type === "dynamic-tool" || part.type.startsWith("tool-")) {
          const p = part as { input?: { sql?: string }; output?: unknown; state?: string; errorText?: string };
          return (
            <details key={i} className="sql" open>
              <summary>SQL the model ran</summary>
              <pre className="mono" data-testid="chat-sql">{p.input?.sql ?? JSON.stringify(p.input ?? {}, null, 2)}</pre>
              {p.output !== undefined && (
                <details>
                  <summary>Rows</summary>
                  <pre>{JSON.stringify(p.output, null, 2)}</pre>
                </details>
              )}
              {p.errorText && <p className="error-text">{p.errorText}</p>}
            </details>
          );
        }
        return null;
      })}
    </li>
  );
}
