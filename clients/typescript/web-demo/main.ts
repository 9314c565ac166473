/**
 * The browser demo: save, recall and watch memories through the TypeScript
 * client's browser entry point, over gRPC-Web to the server's web port.
 *
 * The web port's URL comes from the page's `?server=` parameter (default
 * http://127.0.0.1:8080); the page itself is served from another origin, so
 * the calls are cross-origin and go through the server's CORS.
 */
import { ChangeOperation, createMnemoClient, MnemoError, type Change } from "../src/web.js";

const server = new URLSearchParams(location.search).get("server") ?? "http://127.0.0.1:8080";
const client = createMnemoClient({ baseUrl: server, transport: "grpc-web" });
// A watch lasts as long as the page wants it: no deadline.
const watcher = createMnemoClient({ baseUrl: server, transport: "grpc-web", timeoutMs: null });

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`the page has no #${id}`);
  return found as T;
}

const user = element<HTMLInputElement>("user");
const status = element<HTMLSpanElement>("status");
const errorLine = element<HTMLParagraphElement>("error");
const parent = (): string => `users/${user.value.trim()}`;

function listItem(list: HTMLElement, text: string): void {
  const item = document.createElement("li");
  item.textContent = text;
  list.append(item);
}

/** Runs an action, showing its failure (code and reason) on the page. */
function guarded(action: () => Promise<void>): () => void {
  return () => {
    errorLine.textContent = "";
    action().catch((error: unknown) => {
      errorLine.textContent =
        error instanceof MnemoError
          ? `${error.codeName} ${error.reason}: ${error.rawMessage}`
          : String(error);
    });
  };
}

async function save(): Promise<void> {
  const text = element<HTMLInputElement>("text");
  const response = await client.memories.createMemory({
    parent: parent(),
    memory: { text: text.value },
  });
  element("saved").textContent = `${response.memory?.name ?? ""} ${response.memory?.text ?? ""}`;
  text.value = "";
}

async function recall(): Promise<void> {
  const list = element<HTMLOListElement>("recalled");
  list.replaceChildren();
  const query = element<HTMLInputElement>("query").value;
  for await (const hit of client.memories.recallMemories({ parent: parent(), query })) {
    listItem(list, hit.memory?.text ?? "");
  }
  list.dataset["done"] = "true";
}

function describe(change: Change): string {
  const operation = ChangeOperation[change.operation] ?? String(change.operation);
  const text = change.state.case === "memory" ? ` ${change.state.value.text}` : "";
  return `#${change.cursor} ${operation} ${change.resourceName}${text}`;
}

let watching: AbortController | undefined;

async function watch(): Promise<void> {
  watching?.abort();
  const controller = new AbortController();
  watching = controller;
  const state = element("watch-status");
  const list = element<HTMLUListElement>("changes");
  list.replaceChildren();
  state.textContent = "watching";
  try {
    const stream = watcher.sync.watchChanges({ parent: parent() }, { signal: controller.signal });
    for await (const event of stream) {
      if (event.event.case === "change") listItem(list, describe(event.event.value));
    }
    state.textContent = "ended";
  } catch (error) {
    if (controller.signal.aborted) {
      state.textContent = "stopped";
      return;
    }
    state.textContent = "failed";
    throw error;
  }
}

element("server").textContent = server;
element("save").addEventListener("click", guarded(save));
element("recall").addEventListener("click", guarded(recall));
element("watch").addEventListener("click", guarded(watch));
element("stop").addEventListener("click", () => watching?.abort());
status.textContent = "ready";
