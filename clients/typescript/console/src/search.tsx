/**
 * Recall: what the model would be given for a query, best first, each with its
 * relevance (the hit's score: 0 to 1, the same scale for every query). Only
 * the relevant entries by default, as the server judges them; "every match"
 * asks with minScore 0.
 */
import { useState } from "preact/hooks";
import { RecallSignal, type RecallMemoriesResponse } from "../../src/web.js";
import { scopeText } from "./memories.js";
import { userParent, type Session } from "./session.js";
import { Card, ErrorLine, useAction } from "./ui.js";

/** The width of a relevance bar of 1, in px. */
const BAR_PX = 60;

const SIGNALS: Record<number, string> = {
  [RecallSignal.LEXICAL]: "words",
  [RecallSignal.SEMANTIC]: "meaning",
  [RecallSignal.CONVERSATION_SCOPE]: "conversation",
  [RecallSignal.PINNED]: "pinned",
};

export function SearchView({ session }: { session: Session }): preact.JSX.Element {
  const [query, setQuery] = useState("");
  const [everyMatch, setEveryMatch] = useState(false);
  const [hits, setHits] = useState<RecallMemoriesResponse[] | undefined>(undefined);
  const action = useAction();
  const run = (every: boolean): void => {
    action.run(async () => {
      const found: RecallMemoriesResponse[] = [];
      const stream = session.client.memories.recallMemories({
        parent: userParent(session),
        query,
        maxResults: 20,
        // Unset: the server's minimum relevance (only what is relevant); 0: every match.
        minScore: every ? 0 : undefined,
      });
      for await (const hit of stream) found.push(hit);
      setHits(found);
    });
  };
  const search = (event: Event): void => {
    event.preventDefault();
    run(everyMatch);
  };
  const toggleEveryMatch = (every: boolean): void => {
    setEveryMatch(every);
    if (hits !== undefined && query.trim() !== "") run(every);
  };
  return (
    <Card title="Search your memory" id="search">
      <p class="hint">
        The entries relevant to a query, best first, as recall gives them to an assistant. An entry's
        relevance runs from 0 (not about the query) to 1 and means the same in every search (with the
        server's default model, 0.5 and up is about the query). Only the entries the server judges
        relevant are shown, so a question nothing saved is about shows nothing; tick "every match" to
        see the closest entries whatever their relevance. Nothing is returned while consent is
        withdrawn or memory is switched off.
      </p>
      <form class="row-form" onSubmit={search}>
        <input id="query" placeholder="e.g. tea" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
        <label class="check">
          <input
            id="every-match"
            type="checkbox"
            checked={everyMatch}
            disabled={action.busy}
            onChange={(e) => toggleEveryMatch(e.currentTarget.checked)}
          />
          every match
        </label>
        <button id="search-button" type="submit" class="primary" disabled={action.busy || query.trim() === ""}>
          Search
        </button>
      </form>
      <ErrorLine error={action.error} />
      {hits === undefined ? null : (
        <table class="hits" data-count={hits.length} data-every-match={String(everyMatch)} data-done="true">
          <thead>
            <tr>
              <th>#</th>
              <th>Relevance</th>
              <th>Memory</th>
              <th>Scope</th>
              <th>Key</th>
              <th>Matched on</th>
            </tr>
          </thead>
          <tbody>
            {hits.map((hit) => (
              <tr class="hit" data-score={hit.score.toFixed(4)}>
                <td>{hit.rank}</td>
                <td class="score">
                  <span class="score-track">
                    <span class="score-bar" style={{ width: `${Math.round(Math.min(Math.max(hit.score, 0), 1) * BAR_PX)}px` }} />
                  </span>
                  {hit.score.toFixed(3)}
                </td>
                <td class="text">{hit.memory?.text}</td>
                <td>{hit.memory ? scopeText(hit.memory) : ""}</td>
                <td>{hit.memory?.key ? <code>{hit.memory.key}</code> : ""}</td>
                <td>{hit.signals.map((signal) => SIGNALS[signal] ?? String(signal)).join(", ")}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {hits !== undefined && hits.length === 0 ? (
        <p class="empty">
          {everyMatch ? "Nothing matches." : "Nothing saved is about this. Tick \"every match\" to see the closest entries."}
        </p>
      ) : null}
    </Card>
  );
}
