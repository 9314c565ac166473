"""``MnemoClient``: the blocking client, over a ``grpc`` channel."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

import grpc

from mnemo.client import _agent_state as agent_state
from mnemo.client import _candidates as candidates
from mnemo.client import _changes as changes
from mnemo.client import _checkpoints as checkpoints
from mnemo.client import _conversations as conversations
from mnemo.client import _documents as documents
from mnemo.client import _governance as governance
from mnemo.client import _history as history
from mnemo.client import _memories as memories
from mnemo.client import _memory_batch as memory_batch
from mnemo.client import _recall as recall
from mnemo.client import _user_data as user_data
from mnemo.client import _working_memory as working_memory
from mnemo.client._calls import (
    ClientStreamCall,
    PagedCall,
    StreamCall,
    UnaryCall,
    client_method,
)
from mnemo.client._channel_options import ChannelOption
from mnemo.client._client_base import ClientBase
from mnemo.client.errors import from_rpc_error

R = TypeVar("R")
T = TypeVar("T")


class MnemoClient(ClientBase[grpc.Channel]):
    """A blocking Mnemo client; use it as a context manager or ``close()`` it.

    Every method takes the user it acts for (agent runtimes serve many users)
    and a keyword ``timeout`` overriding the client's default deadline, and
    raises a ``mnemo.client.MnemoError`` subclass when the call fails.
    ``AsyncMnemoClient`` has the same methods, as coroutines and async iterators.
    """

    def _open_channel(
        self,
        target: str,
        credentials: grpc.ChannelCredentials | None,
        options: Sequence[ChannelOption],
    ) -> grpc.Channel:
        if credentials is None:
            return grpc.insecure_channel(target, options=options)
        return grpc.secure_channel(target, credentials, options=options)

    def close(self) -> None:
        """Close the channel; calls in flight are cancelled."""
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _call(self, call: UnaryCall[Any, R] | ClientStreamCall[Any, R]) -> R:
        try:
            response = self._multicallable(call.rpc)(
                call.payload(), **self._call_options(call.timeout)
            )
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error
        return call.parse(response)

    def _pages(self, call: PagedCall[T]) -> Iterator[T]:
        token = ""
        while True:
            page = self._call(call.page(token))
            yield from page.items
            if not page.next_page_token:
                return
            token = page.next_page_token

    def _stream(self, call: StreamCall[Any, T]) -> Iterator[T]:
        responses = self._multicallable(call.rpc)(call.request, **self._call_options(call.timeout))
        try:
            for response in responses:
                yield from call.items(response)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error
        finally:
            responses.cancel()  # a no-op once the stream ended; frees it when abandoned

    get_memory_state = client_method(working_memory.get_memory_state, _call)
    save_memory_state = client_method(working_memory.save_memory_state, _call)
    remember_exchange = client_method(working_memory.remember_exchange, _call)
    clear_memory_state = client_method(working_memory.clear_memory_state, _call)

    put_checkpoint = client_method(checkpoints.put_checkpoint, _call)
    put_checkpoint_writes = client_method(checkpoints.put_checkpoint_writes, _call)
    get_checkpoint = client_method(checkpoints.get_checkpoint, _call)
    list_checkpoints_page = client_method(checkpoints.list_checkpoints_page, _call)
    delete_thread = client_method(checkpoints.delete_thread, _call)
    copy_thread = client_method(checkpoints.copy_thread, _call)
    prune_threads = client_method(checkpoints.prune_threads, _call)
    delete_checkpoints_for_runs = client_method(checkpoints.delete_checkpoints_for_runs, _call)

    create_conversation = client_method(conversations.create_conversation, _call)
    get_conversation = client_method(conversations.get_conversation, _call)
    list_conversations = client_method(conversations.list_conversations, _pages)
    list_conversations_page = client_method(conversations.list_conversations_page, _call)
    update_conversation_metadata = client_method(conversations.update_conversation_metadata, _call)
    delete_conversation = client_method(conversations.delete_conversation, _call)

    append_messages = client_method(history.append_messages, _call)
    list_messages = client_method(history.list_messages, _pages)
    list_messages_page = client_method(history.list_messages_page, _call)
    stream_messages = client_method(history.stream_messages, _stream)
    get_message = client_method(history.get_message, _call)
    pop_messages = client_method(history.pop_messages, _call)
    clear_messages = client_method(history.clear_messages, _call)
    record_failed_run = client_method(history.record_failed_run, _call)
    list_failed_runs = client_method(history.list_failed_runs, _pages)
    list_failed_runs_page = client_method(history.list_failed_runs_page, _call)
    snapshot_history = client_method(history.snapshot_history, _call)
    replace_history_prefix = client_method(history.replace_history_prefix, _call)

    create_memory = client_method(memories.create_memory, _call)
    batch_create_memories = client_method(memory_batch.batch_create_memories, _call)
    get_memory = client_method(memories.get_memory, _call)
    list_memories = client_method(memories.list_memories, _pages)
    list_memories_page = client_method(memories.list_memories_page, _call)
    update_memory = client_method(memories.update_memory, _call)
    delete_memory = client_method(memories.delete_memory, _call)
    list_memory_versions = client_method(memories.list_memory_versions, _pages)
    list_memory_versions_page = client_method(memories.list_memory_versions_page, _call)

    recall_memories = client_method(recall.recall_memories, _stream)
    build_context = client_method(recall.build_context, _call)

    extract_memories = client_method(candidates.extract_memories, _call)
    propose_memory_candidates = client_method(candidates.propose_memory_candidates, _call)
    list_memory_candidates = client_method(candidates.list_memory_candidates, _pages)
    list_memory_candidates_page = client_method(candidates.list_memory_candidates_page, _call)
    approve_memory_candidate = client_method(candidates.approve_memory_candidate, _call)
    reject_memory_candidate = client_method(candidates.reject_memory_candidate, _call)

    export_user_data = client_method(user_data.export_user_data, _stream)
    import_user_data = client_method(user_data.import_user_data, _call)
    delete_user_data = client_method(user_data.delete_user_data, _call)

    get_consent = client_method(governance.get_consent, _call)
    set_consent = client_method(governance.set_consent, _call)
    get_memory_settings = client_method(governance.get_memory_settings, _call)
    update_memory_settings = client_method(governance.update_memory_settings, _call)
    list_events = client_method(governance.list_events, _pages)
    list_events_page = client_method(governance.list_events_page, _call)
    list_user_erasures = client_method(governance.list_user_erasures, _pages)
    list_user_erasures_page = client_method(governance.list_user_erasures_page, _call)
    watch_events = client_method(governance.watch_events, _stream)

    put_document = client_method(documents.put_document, _call)
    get_document = client_method(documents.get_document, _call)
    delete_document = client_method(documents.delete_document, _call)
    search_documents = client_method(documents.search_documents, _call)
    list_document_namespaces = client_method(documents.list_document_namespaces, _call)

    get_app_state = client_method(agent_state.get_app_state, _call)
    update_app_state = client_method(agent_state.update_app_state, _call)

    list_changes = client_method(changes.list_changes, _call)
    watch_changes = client_method(changes.watch_changes, _stream)
