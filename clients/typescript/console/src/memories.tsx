/**
 * The user's memory entries: scope, key, pin, text, when each was stated and
 * stored; create, edit, pin, delete and history; the list as of a past time.
 */
import { useState } from "preact/hooks";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { MemoryScope, MemorySource, timestampDate, timestampFromDate, type Memory } from "../../src/web.js";
import { userParent, type Session } from "./session.js";
import { Card, ErrorLine, formatTime, useAction, useLoad } from "./ui.js";

const SOURCES: Record<number, string> = {
  [MemorySource.TOOL_CALL]: "tool call",
  [MemorySource.EXTRACTOR]: "extractor",
  [MemorySource.USER]: "you",
  [MemorySource.IMPORT]: "import",
};

export const idOf = (name: string): string => name.slice(name.lastIndexOf("/") + 1);

/** "identity" or "conversation <id>". */
export function scopeText(memory: Memory): string {
  return memory.scope === MemoryScope.CONVERSATION
    ? `conversation ${idOf(memory.conversation)}`
    : "identity";
}

/**
 * The instant a datetime-local value ("2026-03-01T00:00", no zone) names, read
 * as UTC like every time the console shows; undefined when empty or invalid.
 */
export function asOfTimestamp(value: string): Timestamp | undefined {
  if (value === "") return undefined;
  const date = new Date(`${value.length === 16 ? `${value}:00` : value}Z`);
  return Number.isNaN(date.getTime()) ? undefined : timestampFromDate(date);
}

/** "from <event time> until <valid until | now>", a keyed entry's validity. */
export function validityText(memory: Memory): string {
  const until = memory.validUntil === undefined ? "now" : formatTime(memory.validUntil);
  return `valid from ${formatTime(memory.eventTime ?? memory.createTime)} until ${until}`;
}

/** A loaded list and the as-of time (ISO, "" for now) it was loaded for. */
interface MemoryList {
  asOf: string;
  memories: Memory[];
}

/** Every entry (the current one of each key), or what was true at `asOf`. */
async function allMemories(session: Session, asOf: Timestamp | undefined): Promise<MemoryList> {
  const found: Memory[] = [];
  let pageToken = "";
  do {
    const page = await session.client.memories.listMemories({
      parent: userParent(session),
      pageSize: 500,
      pageToken,
      ...(asOf === undefined ? {} : { asOf }),
    });
    found.push(...page.memories);
    pageToken = page.nextPageToken;
  } while (pageToken !== "" && found.length < 5000);
  return { asOf: asOf === undefined ? "" : timestampDate(asOf).toISOString(), memories: found };
}

function NewMemory({ session, onSaved }: { session: Session; onSaved: () => void }): preact.JSX.Element {
  const [text, setText] = useState("");
  const [key, setKey] = useState("");
  const [pinned, setPinned] = useState(false);
  const action = useAction();
  const save = (event: Event): void => {
    event.preventDefault();
    action.run(async () => {
      await session.client.memories.createMemory({
        parent: userParent(session),
        memory: { text, key, pinned, source: MemorySource.USER },
      });
      setText("");
      setKey("");
      setPinned(false);
      onSaved();
    });
  };
  return (
    <form class="row-form" id="new-memory" onSubmit={save}>
      <input id="new-text" placeholder="Something to remember" value={text} onInput={(e) => setText(e.currentTarget.value)} />
      <input id="new-key" class="narrow" placeholder="key (optional)" value={key} onInput={(e) => setKey(e.currentTarget.value)} />
      <label class="check">
        <input id="new-pinned" type="checkbox" checked={pinned} onChange={(e) => setPinned(e.currentTarget.checked)} />
        pinned
      </label>
      <button id="new-save" type="submit" class="primary" disabled={action.busy || text.trim() === ""}>
        Save
      </button>
      <ErrorLine error={action.error} />
    </form>
  );
}

function History({ session, memory }: { session: Session; memory: Memory }): preact.JSX.Element {
  const versions = useLoad(
    async () => (await session.client.memories.listMemoryVersions({ name: memory.name, pageSize: 50 })).versions,
    [memory.name, memory.etag],
  );
  return (
    <div class="history">
      <ErrorLine error={versions.error} />
      <ol class="versions">
        {(versions.value ?? []).map((version) => (
          <li
            class="version"
            data-text={version.text}
            data-event-time={version.eventTime ? timestampDate(version.eventTime).toISOString() : ""}
            data-valid-until={version.validUntil ? timestampDate(version.validUntil).toISOString() : ""}
          >
            <span class="time">{formatTime(version.updateTime ?? version.createTime)}</span>{" "}
            <span class="text">{version.text}</span>{" "}
            <span class="validity">{validityText(version)}</span>
            {version.archiveTime ? <span class="tag">replaced {formatTime(version.archiveTime)}</span> : <span class="tag current">current</span>}
            {version.pinned ? <span class="tag">pinned</span> : null}
          </li>
        ))}
      </ol>
    </div>
  );
}

function MemoryRow({ session, memory, onChanged }: { session: Session; memory: Memory; onChanged: () => void }): preact.JSX.Element {
  const [mode, setMode] = useState<"view" | "edit" | "confirm-delete">("view");
  const [showHistory, setShowHistory] = useState(false);
  const [draft, setDraft] = useState(memory.text);
  const action = useAction();
  const update = (fields: { text?: string; pinned?: boolean }, paths: string[]): void =>
    action.run(async () => {
      await session.client.memories.updateMemory({
        memory: { name: memory.name, etag: memory.etag, ...fields },
        updateMask: { paths },
      });
      setMode("view");
      onChanged();
    });
  const remove = (): void =>
    action.run(async () => {
      await session.client.memories.deleteMemory({ name: memory.name, etag: memory.etag });
      onChanged();
    });
  return (
    <>
      <tr class={memory.pinned ? "memory pinned" : "memory"} data-name={memory.name} data-key={memory.key} data-pinned={String(memory.pinned)}>
        <td>
          <button
            class={memory.pinned ? "pin on" : "pin"}
            title={memory.pinned ? "Unpin" : "Pin"}
            aria-pressed={memory.pinned}
            disabled={action.busy}
            onClick={() => update({ pinned: !memory.pinned }, ["pinned"])}
          >
            {memory.pinned ? "★" : "☆"}
          </button>
        </td>
        <td class="text-cell">
          {mode === "edit" ? (
            <form
              class="edit"
              onSubmit={(e) => {
                e.preventDefault();
                update({ text: draft }, ["text"]);
              }}
            >
              <input class="edit-text" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} />
              <button type="submit" class="primary save-edit" disabled={action.busy}>
                Save
              </button>
              <button type="button" onClick={() => setMode("view")}>
                Cancel
              </button>
            </form>
          ) : (
            <span class="text">{memory.text}</span>
          )}
        </td>
        {/* data-label: the column's name, shown beside the value where the header is not (narrow screens). */}
        <td class="scope" data-label="Scope">
          {scopeText(memory)}
        </td>
        <td class="key" data-label="Key">
          {memory.key ? <code>{memory.key}</code> : <span class="hint">–</span>}
        </td>
        <td class="source" data-label="Source">
          {SOURCES[memory.source] ?? ""}
        </td>
        <td class="event-time" title="when the fact was stated" data-label="Stated (UTC)">
          {formatTime(memory.eventTime ?? memory.createTime)}
          {memory.validUntil ? <span class="until"> until {formatTime(memory.validUntil)}</span> : null}
        </td>
        <td class="time" data-label="Stored (UTC)">
          {formatTime(memory.updateTime ?? memory.createTime)}
        </td>
        <td class="actions">
          {mode === "confirm-delete" ? (
            <>
              <button class="danger confirm-delete" disabled={action.busy} onClick={remove}>
                Delete for good
              </button>
              <button onClick={() => setMode("view")}>Keep</button>
            </>
          ) : (
            <>
              <button class="show-history" onClick={() => setShowHistory(!showHistory)}>
                History
              </button>
              <button
                class="edit-button"
                onClick={() => {
                  setDraft(memory.text);
                  setMode("edit");
                }}
              >
                Edit
              </button>
              <button class="delete" onClick={() => setMode("confirm-delete")}>
                Delete
              </button>
            </>
          )}
        </td>
      </tr>
      {action.error !== undefined || showHistory ? (
        <tr class="detail">
          <td />
          <td colSpan={7}>
            <ErrorLine error={action.error} />
            {showHistory ? <History session={session} memory={memory} /> : null}
          </td>
        </tr>
      ) : null}
    </>
  );
}

/** The "as of" field: a datetime-local (UTC) and its clear button. */
function AsOfField({ value, onChange }: { value: string; onChange: (value: string) => void }): preact.JSX.Element {
  return (
    <div class="row-form as-of">
      <label for="as-of">
        As of <span class="hint">(UTC; empty: now)</span>
      </label>
      <input id="as-of" type="datetime-local" value={value} onChange={(e) => onChange(e.currentTarget.value)} />
      <button id="as-of-clear" type="button" title="Show what is true now" disabled={value === ""} onClick={() => onChange("")}>
        Clear
      </button>
    </div>
  );
}

export function MemoriesView({
  session,
  revision,
  asOf,
  onAsOf,
}: {
  session: Session;
  revision: number;
  /** The "as of" field's value ("" for now); kept by the console across tabs. */
  asOf: string;
  onAsOf: (value: string) => void;
}): preact.JSX.Element {
  const asOfTime = asOfTimestamp(asOf);
  const asOfKey = asOfTime === undefined ? "" : timestampDate(asOfTime).toISOString();
  const memories = useLoad(() => allMemories(session, asOfTime), [session, revision, asOfKey]);
  const list = memories.value?.memories ?? [];
  return (
    <Card title="Your memories" id="memories">
      {asOfTime === undefined ? (
        <p class="hint">
          What is remembered about you, newest first (the current entry of each key). A pinned
          entry wins ties and is given to the model first. Deleting an entry removes its text and
          every earlier version.
        </p>
      ) : (
        <p class="hint" id="as-of-hint">
          What was true at <strong>{formatTime(asOfTime)}</strong> (UTC): the entries stated by then
          and not yet superseded, including those replaced since. Deleted entries are in no view.
        </p>
      )}
      <NewMemory session={session} onSaved={memories.reload} />
      <AsOfField value={asOf} onChange={onAsOf} />
      <ErrorLine error={memories.error} />
      <div class="table-scroll">
      <table
        class="memories"
        data-count={list.length}
        data-loaded={String(memories.value !== undefined)}
        data-as-of={memories.value?.asOf ?? ""}
      >
        <thead>
          <tr>
            <th title="pinned" />
            <th>Memory</th>
            <th>Scope</th>
            <th>Key</th>
            <th>Source</th>
            <th title="when the fact was stated (its event time)">Stated (UTC)</th>
            <th title="when this text was stored">Stored (UTC)</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {list.map((memory) => (
            <MemoryRow key={memory.name} session={session} memory={memory} onChanged={memories.reload} />
          ))}
        </tbody>
      </table>
      </div>
      {memories.value !== undefined && list.length === 0 ? (
        <p class="empty">{asOfTime === undefined ? "Nothing is remembered." : "Nothing was true then."}</p>
      ) : null}
    </Card>
  );
}
