/** Conversations: each one's canonical history and its working memory (summary and recent exchanges). */
import { useState } from "preact/hooks";
import type { Conversation, HistoryMessage, MemoryState } from "../../src/web.js";
import { idOf } from "./memories.js";
import { userParent, type Session } from "./session.js";
import { Card, ErrorLine, formatTime, useLoad } from "./ui.js";

const DEFAULT = "";

async function allMessages(session: Session, conversation: string): Promise<HistoryMessage[]> {
  const found: HistoryMessage[] = [];
  let pageToken = "";
  do {
    const page = await session.client.conversations.listMessages({ parent: conversation, pageSize: 1000, pageToken });
    found.push(...page.messages);
    pageToken = page.nextPageToken;
  } while (pageToken !== "" && found.length < 5000);
  return found;
}

function WorkingMemory({ state }: { state: MemoryState | undefined }): preact.JSX.Element {
  if (state === undefined || state.etag === "") {
    return <p class="empty">Nothing in working memory.</p>;
  }
  return (
    <div class="working-memory" id="working-memory">
      <p class="summary">
        <strong>Summary:</strong> {state.summary || <span class="hint">none yet</span>}
      </p>
      <ol class="exchanges">
        {state.recent.map((exchange) => (
          <li class="exchange">
            <div>
              <span class="role">ask</span> {exchange.ask}
            </div>
            <div>
              <span class="role">answer</span> {exchange.answer}
            </div>
          </li>
        ))}
      </ol>
      <p class="hint">Updated {formatTime(state.updateTime)} UTC</p>
    </div>
  );
}

function ConversationDetail({ session, name, revision }: { session: Session; name: string; revision: number }): preact.JSX.Element {
  const stateName = name === DEFAULT ? `${userParent(session)}/memoryState` : `${name}/memoryState`;
  const messages = useLoad(async () => (name === DEFAULT ? [] : allMessages(session, name)), [name, revision]);
  const state = useLoad(
    async () => (await session.client.workingMemory.getMemoryState({ name: stateName })).memoryState,
    [stateName, revision],
  );
  return (
    <div class="conversation-detail" id="conversation-detail" data-name={name}>
      {name === DEFAULT ? null : (
        <>
          <h3>History</h3>
          <ErrorLine error={messages.error} />
          <ol class="messages" data-count={messages.value?.length ?? 0}>
            {(messages.value ?? []).map((message) => (
              <li class={`message role-${message.role}`}>
                <span class="role">{message.role}</span> <span class="text">{message.text}</span>
              </li>
            ))}
          </ol>
          {messages.value?.length === 0 ? <p class="empty">No messages.</p> : null}
        </>
      )}
      <h3>Working memory</h3>
      <ErrorLine error={state.error} />
      {state.value === undefined && state.loading ? null : <WorkingMemory state={state.value} />}
    </div>
  );
}

export function ConversationsView({ session, revision }: { session: Session; revision: number }): preact.JSX.Element {
  const [selected, setSelected] = useState<string | undefined>(undefined);
  const conversations = useLoad(
    async () =>
      (await session.client.conversations.listConversations({ parent: userParent(session), pageSize: 200 })).conversations,
    [session, revision],
  );
  const list: Conversation[] = conversations.value ?? [];
  return (
    <Card title="Conversations" id="conversations">
      <div class="split">
        <ul class="conversation-list" data-count={list.length}>
          {list.map((conversation) => (
            <li>
              <button
                class={selected === conversation.name ? "conversation selected" : "conversation"}
                data-name={conversation.name}
                onClick={() => setSelected(conversation.name)}
              >
                <span class="title">{idOf(conversation.name)}</span>
                <span class="meta">
                  {String(conversation.messageCount)} messages{conversation.temporary ? " · temporary" : ""}
                </span>
              </button>
            </li>
          ))}
          <li>
            <button
              class={selected === DEFAULT ? "conversation selected" : "conversation"}
              id="default-conversation"
              onClick={() => setSelected(DEFAULT)}
            >
              <span class="title">Default conversation</span>
              <span class="meta">working memory only</span>
            </button>
          </li>
        </ul>
        <div class="conversation-pane">
          <ErrorLine error={conversations.error} />
          {selected === undefined ? (
            <p class="hint">Choose a conversation to see its history and working memory.</p>
          ) : (
            <ConversationDetail session={session} name={selected} revision={revision} />
          )}
        </div>
      </div>
    </Card>
  );
}
