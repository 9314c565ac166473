/**
 * The Mnemo memory console: a person signs in with their token and sees and
 * governs their memory. Served by the web port at /console/ and calling the
 * same origin over gRPC-Web (docs/console.md).
 */
import { render } from "preact";
import { useState } from "preact/hooks";
import { AdminView } from "./admin.js";
import { CandidatesView } from "./candidates.js";
import { ConversationsView } from "./conversations.js";
import { useLive } from "./live.js";
import { MemoriesView } from "./memories.js";
import { PrivacyView } from "./privacy.js";
import { SearchView } from "./search.js";
import { signIn, type Session } from "./session.js";
import { ErrorLine, useAction } from "./ui.js";

const TABS = [
  ["memories", "Memories"],
  ["search", "Search"],
  ["candidates", "Candidates"],
  ["conversations", "Conversations"],
  ["privacy", "Privacy & data"],
  ["admin", "Tenant analytics"],
] as const;
type Tab = (typeof TABS)[number][0];

function SignIn({ onSession }: { onSession: (session: Session) => void }): preact.JSX.Element {
  const [token, setToken] = useState("");
  const [user, setUser] = useState("");
  const action = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    action.run(async () => onSession(await signIn(token.trim(), user, location.origin)));
  };
  return (
    <form class="card sign-in" id="sign-in" onSubmit={submit}>
      <h2>Sign in</h2>
      <p class="hint">
        Paste your access token (a JWT: its <code>sub</code> is your user id). On a server run
        with <code>--auth none</code>, leave it empty and give a user id.
      </p>
      <label>
        Token
        <textarea
          id="token"
          rows={3}
          spellcheck={false}
          autocomplete="off"
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
        />
      </label>
      <label>
        User id <span class="hint">(optional with a token)</span>
        <input id="user" value={user} onInput={(e) => setUser(e.currentTarget.value)} />
      </label>
      <button id="sign-in-button" type="submit" class="primary" disabled={action.busy}>
        Sign in
      </button>
      <ErrorLine error={action.error} />
    </form>
  );
}

function Console({ session, onSignOut }: { session: Session; onSignOut: () => void }): preact.JSX.Element {
  const [tab, setTab] = useState<Tab>("memories");
  // The memory list's "as of" field, kept while another tab is open.
  const [asOf, setAsOf] = useState("");
  const live = useLive(session);
  return (
    <>
      <header class="bar">
        <span class="who">
          Signed in as <strong id="signed-in-user">{session.user}</strong>
          {session.tenant ? (
            <>
              {" "}
              · tenant <strong id="signed-in-tenant">{session.tenant}</strong>
            </>
          ) : null}
          {session.admin ? <span class="badge">admin</span> : null}
        </span>
        <span id="live" class={`live ${live.status}`} data-status={live.status} data-cursor={String(live.cursor)}>
          {live.status === "live" ? "● live" : live.status}
        </span>
        <button id="sign-out" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <nav class="tabs" role="tablist">
        {TABS.map(([id, label]) => (
          <button
            id={`tab-${id}`}
            role="tab"
            aria-selected={tab === id}
            class={tab === id ? "tab selected" : "tab"}
            onClick={() => setTab(id)}
          >
            {label}
          </button>
        ))}
      </nav>
      <main id={`view-${tab}`}>
        {tab === "memories" && (
          <MemoriesView session={session} revision={live.revisions.memories} asOf={asOf} onAsOf={setAsOf} />
        )}
        {tab === "search" && <SearchView session={session} />}
        {tab === "candidates" && <CandidatesView session={session} revision={live.revisions.candidates} />}
        {tab === "conversations" && (
          <ConversationsView session={session} revision={live.revisions.conversations} />
        )}
        {tab === "privacy" && <PrivacyView session={session} revision={live.revisions.governance} />}
        {tab === "admin" && <AdminView session={session} />}
      </main>
    </>
  );
}

function App(): preact.JSX.Element {
  const [session, setSession] = useState<Session | undefined>(undefined);
  return (
    <div class="page">
      <h1>
        Mnemo <span class="subtitle">memory console</span>
      </h1>
      {session === undefined ? (
        <SignIn onSession={setSession} />
      ) : (
        <Console key={session.user} session={session} onSignOut={() => setSession(undefined)} />
      )}
    </div>
  );
}

const root = document.getElementById("app");
if (root !== null) render(<App />, root);
