/** Extraction candidates waiting for the user's decision: approve (saved as a memory) or reject. */
import { useState } from "preact/hooks";
import type { MemoryCandidate } from "../../src/web.js";
import { idOf } from "./memories.js";
import { userParent, type Session } from "./session.js";
import { Card, ErrorLine, formatTime, useAction, useLoad } from "./ui.js";

function CandidateRow({
  session,
  candidate,
  onResolved,
}: {
  session: Session;
  candidate: MemoryCandidate;
  onResolved: (outcome: string) => void;
}): preact.JSX.Element {
  const action = useAction();
  const approve = (): void =>
    action.run(async () => {
      const response = await session.client.memories.approveMemoryCandidate({ name: candidate.name });
      onResolved(`Approved “${candidate.memory?.text ?? ""}”: saved as memory ${idOf(response.memory?.name ?? "")}.`);
    });
  const reject = (): void =>
    action.run(async () => {
      await session.client.memories.rejectMemoryCandidate({ name: candidate.name });
      onResolved(`Rejected “${candidate.memory?.text ?? ""}”: it is discarded.`);
    });
  return (
    <li class="candidate" data-name={candidate.name}>
      <div class="candidate-text">{candidate.memory?.text}</div>
      <div class="meta">
        {candidate.memory?.key ? (
          <>
            key <code>{candidate.memory.key}</code> ·{" "}
          </>
        ) : null}
        {candidate.extractor ? <>found by {candidate.extractor} · </> : null}
        {candidate.conversation ? <>in conversation {idOf(candidate.conversation)} · </> : null}
        {formatTime(candidate.createTime)}
      </div>
      <div class="actions">
        <button class="primary approve" disabled={action.busy} onClick={approve}>
          Approve
        </button>
        <button class="reject" disabled={action.busy} onClick={reject}>
          Reject
        </button>
      </div>
      <ErrorLine error={action.error} />
    </li>
  );
}

export function CandidatesView({ session, revision }: { session: Session; revision: number }): preact.JSX.Element {
  const [outcome, setOutcome] = useState("");
  const candidates = useLoad(
    async () =>
      (await session.client.memories.listMemoryCandidates({ parent: userParent(session), pageSize: 500 })).candidates,
    [session, revision],
  );
  const list = candidates.value ?? [];
  return (
    <Card title="Waiting for your approval" id="candidates">
      <p class="hint">
        Facts an extractor found in your conversations. Nothing is remembered until you approve it;
        a rejected candidate is discarded.
      </p>
      {outcome ? (
        <p class="notice" id="candidate-outcome">
          {outcome}
        </p>
      ) : null}
      <ErrorLine error={candidates.error} />
      <ul class="candidates" data-count={list.length} data-loaded={String(candidates.value !== undefined)}>
        {list.map((candidate) => (
          <CandidateRow
            key={candidate.name}
            session={session}
            candidate={candidate}
            onResolved={(text) => {
              setOutcome(text);
              candidates.reload();
            }}
          />
        ))}
      </ul>
      {candidates.value !== undefined && list.length === 0 ? <p class="empty">No candidate is waiting.</p> : null}
    </Card>
  );
}
