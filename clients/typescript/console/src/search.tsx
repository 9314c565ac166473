/** Recall: what the model would be given for a query, best first, with scores. */
import { useState } from "preact/hooks";
import { RecallSignal, type RecallMemoriesResponse } from "../../src/web.js";
import { scopeText } from "./memories.js";
import { userParent, type Session } from "./session.js";
import { Card, ErrorLine, useAction } from "./ui.js";

const SIGNALS: Record<number, string> = {
  [RecallSignal.LEXICAL]: "words",
  [RecallSignal.SEMANTIC]: "meaning",
  [RecallSignal.CONVERSATION_SCOPE]: "conversation",
  [RecallSignal.PINNED]: "pinned",
};

export function SearchView({ session }: { session: Session }): preact.JSX.Element {
  const [query, setQuery] = useState("");
  const [hits, setHits] = useState<RecallMemoriesResponse[] | undefined>(undefined);
  const action = useAction();
  const search = (event: Event): void => {
    event.preventDefault();
    action.run(async () => {
      const found: RecallMemoriesResponse[] = [];
      const stream = session.client.memories.recallMemories({
        parent: userParent(session),
        query,
        maxResults: 20,
      });
      for await (const hit of stream) found.push(hit);
      setHits(found);
    });
  };
  const best = Math.max(...(hits ?? []).map((hit) => hit.score), 0);
  return (
    <Card title="Search your memory" id="search">
      <p class="hint">
        The entries a recall returns for a query, best first: the score is comparable within one
        search. Nothing is returned while consent is withdrawn or memory is switched off.
      </p>
      <form class="row-form" onSubmit={search}>
        <input id="query" placeholder="e.g. tea" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
        <button id="search-button" type="submit" class="primary" disabled={action.busy || query.trim() === ""}>
          Search
        </button>
      </form>
      <ErrorLine error={action.error} />
      {hits === undefined ? null : (
        <table class="hits" data-count={hits.length} data-done="true">
          <thead>
            <tr>
              <th>#</th>
              <th>Score</th>
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
                  <span class="score-bar" style={{ width: `${best > 0 ? Math.round((hit.score / best) * 60) : 0}px` }} />
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
      {hits !== undefined && hits.length === 0 ? <p class="empty">Nothing matches.</p> : null}
    </Card>
  );
}
