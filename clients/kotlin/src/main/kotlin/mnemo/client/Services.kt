package mnemo.client

import kotlinx.coroutines.flow.Flow
import mnemo.v1.*
import kotlin.time.Duration

/**
 * `mnemo.v1.WorkingMemoryService`: a suspend function per unary or client-streaming method and a
 * [Flow] per server-streaming one, with [MnemoClient]'s behaviour; each throws
 * [MnemoException]. The generated [WorkingMemoryServiceClient] documents every method's errors.
 */
public class WorkingMemory internal constructor(private val mnemo: MnemoClient) {
    /** The generated client, for calls without the facade (they return ResponseMessage). */
    public val raw: WorkingMemoryServiceClient = WorkingMemoryServiceClient(mnemo.protocolClient)

    public suspend fun getMemoryState(request: GetMemoryStateRequest, timeout: Duration? = mnemo.timeout): GetMemoryStateResponse =
        mnemo.unary(request, timeout) { r, h -> raw.getMemoryState(r, h) }

    public suspend fun saveMemoryState(request: SaveMemoryStateRequest, timeout: Duration? = mnemo.timeout): SaveMemoryStateResponse =
        mnemo.unary(request, timeout) { r, h -> raw.saveMemoryState(r, h) }

    public suspend fun rememberExchange(request: RememberExchangeRequest, timeout: Duration? = mnemo.timeout): RememberExchangeResponse =
        mnemo.unary(request, timeout) { r, h -> raw.rememberExchange(r, h) }

    public suspend fun clearMemoryState(request: ClearMemoryStateRequest, timeout: Duration? = mnemo.timeout): ClearMemoryStateResponse =
        mnemo.unary(request, timeout) { r, h -> raw.clearMemoryState(r, h) }
}

/**
 * `mnemo.v1.ConversationService`: a suspend function per unary or client-streaming method and a
 * [Flow] per server-streaming one, with [MnemoClient]'s behaviour; each throws
 * [MnemoException]. The generated [ConversationServiceClient] documents every method's errors.
 */
public class Conversations internal constructor(private val mnemo: MnemoClient) {
    /** The generated client, for calls without the facade (they return ResponseMessage). */
    public val raw: ConversationServiceClient = ConversationServiceClient(mnemo.protocolClient)

    public suspend fun createConversation(request: CreateConversationRequest, timeout: Duration? = mnemo.timeout): CreateConversationResponse =
        mnemo.unary(request, timeout) { r, h -> raw.createConversation(r, h) }

    public suspend fun getConversation(request: GetConversationRequest, timeout: Duration? = mnemo.timeout): GetConversationResponse =
        mnemo.unary(request, timeout) { r, h -> raw.getConversation(r, h) }

    public suspend fun listConversations(request: ListConversationsRequest, timeout: Duration? = mnemo.timeout): ListConversationsResponse =
        mnemo.unary(request, timeout) { r, h -> raw.listConversations(r, h) }

    public suspend fun updateConversation(request: UpdateConversationRequest, timeout: Duration? = mnemo.timeout): UpdateConversationResponse =
        mnemo.unary(request, timeout) { r, h -> raw.updateConversation(r, h) }

    public suspend fun deleteConversation(request: DeleteConversationRequest, timeout: Duration? = mnemo.timeout): DeleteConversationResponse =
        mnemo.unary(request, timeout) { r, h -> raw.deleteConversation(r, h) }

    public suspend fun appendMessages(request: AppendMessagesRequest, timeout: Duration? = mnemo.timeout): AppendMessagesResponse =
        mnemo.unary(request, timeout) { r, h -> raw.appendMessages(r, h) }

    public suspend fun listMessages(request: ListMessagesRequest, timeout: Duration? = mnemo.timeout): ListMessagesResponse =
        mnemo.unary(request, timeout) { r, h -> raw.listMessages(r, h) }

    public fun streamMessages(request: StreamMessagesRequest, timeout: Duration? = null): Flow<StreamMessagesResponse> =
        mnemo.serverStream(request, timeout) { h -> raw.streamMessages(h) }

    public suspend fun getMessage(request: GetMessageRequest, timeout: Duration? = mnemo.timeout): GetMessageResponse =
        mnemo.unary(request, timeout) { r, h -> raw.getMessage(r, h) }

    public suspend fun popMessages(request: PopMessagesRequest, timeout: Duration? = mnemo.timeout): PopMessagesResponse =
        mnemo.unary(request, timeout) { r, h -> raw.popMessages(r, h) }

    public suspend fun clearMessages(request: ClearMessagesRequest, timeout: Duration? = mnemo.timeout): ClearMessagesResponse =
        mnemo.unary(request, timeout) { r, h -> raw.clearMessages(r, h) }

    public suspend fun recordFailedRun(request: RecordFailedRunRequest, timeout: Duration? = mnemo.timeout): RecordFailedRunResponse =
        mnemo.unary(request, timeout) { r, h -> raw.recordFailedRun(r, h) }

    public suspend fun listFailedRuns(request: ListFailedRunsRequest, timeout: Duration? = mnemo.timeout): ListFailedRunsResponse =
        mnemo.unary(request, timeout) { r, h -> raw.listFailedRuns(r, h) }

    public suspend fun snapshotHistory(request: SnapshotHistoryRequest, timeout: Duration? = mnemo.timeout): SnapshotHistoryResponse =
        mnemo.unary(request, timeout) { r, h -> raw.snapshotHistory(r, h) }

    public suspend fun replaceHistoryPrefix(request: ReplaceHistoryPrefixRequest, timeout: Duration? = mnemo.timeout): ReplaceHistoryPrefixResponse =
        mnemo.unary(request, timeout) { r, h -> raw.replaceHistoryPrefix(r, h) }
}

/**
 * `mnemo.v1.MemoryService`: a suspend function per unary or client-streaming method and a
 * [Flow] per server-streaming one, with [MnemoClient]'s behaviour; each throws
 * [MnemoException]. The generated [MemoryServiceClient] documents every method's errors.
 */
public class Memories internal constructor(private val mnemo: MnemoClient) {
    /** The generated client, for calls without the facade (they return ResponseMessage). */
    public val raw: MemoryServiceClient = MemoryServiceClient(mnemo.protocolClient)

    public suspend fun createMemory(request: CreateMemoryRequest, timeout: Duration? = mnemo.timeout): CreateMemoryResponse =
        mnemo.unary(request, timeout) { r, h -> raw.createMemory(r, h) }

    public suspend fun batchCreateMemories(request: BatchCreateMemoriesRequest, timeout: Duration? = mnemo.timeout): BatchCreateMemoriesResponse =
        mnemo.unary(request, timeout) { r, h -> raw.batchCreateMemories(r, h) }

    public suspend fun getMemory(request: GetMemoryRequest, timeout: Duration? = mnemo.timeout): GetMemoryResponse =
        mnemo.unary(request, timeout) { r, h -> raw.getMemory(r, h) }

    public suspend fun listMemories(request: ListMemoriesRequest, timeout: Duration? = mnemo.timeout): ListMemoriesResponse =
        mnemo.unary(request, timeout) { r, h -> raw.listMemories(r, h) }

    public suspend fun updateMemory(request: UpdateMemoryRequest, timeout: Duration? = mnemo.timeout): UpdateMemoryResponse =
        mnemo.unary(request, timeout) { r, h -> raw.updateMemory(r, h) }

    public suspend fun deleteMemory(request: DeleteMemoryRequest, timeout: Duration? = mnemo.timeout): DeleteMemoryResponse =
        mnemo.unary(request, timeout) { r, h -> raw.deleteMemory(r, h) }

    public suspend fun listMemoryVersions(request: ListMemoryVersionsRequest, timeout: Duration? = mnemo.timeout): ListMemoryVersionsResponse =
        mnemo.unary(request, timeout) { r, h -> raw.listMemoryVersions(r, h) }

    /**
     * The entries relevant to the request's query, best first: only those whose relevance (a
     * hit's `score`, 0 to 1: 0.5 separates "about this" from "not about this") is at least the
     * request's `minScore` (`setMinScore`), or unset the server's (0.5 with its default embedder,
     * none when it recalls by words only); so possibly none. `setMinScore(0.0)` returns every match.
     */
    public fun recallMemories(request: RecallMemoriesRequest, timeout: Duration? = null): Flow<RecallMemoriesResponse> =
        mnemo.serverStream(request, timeout) { h -> raw.recallMemories(h) }

    /**
     * The "inject" context for a send: the relevant entries (the minimum relevance as for
     * [recallMemories]) under the byte budget, as one system message. When nothing is relevant
     * `systemMessage` is "" and `memoriesList` empty: send the prompt without a memory message.
     * `setMinScore(0.0)` injects the best matches whatever their relevance.
     */
    public suspend fun buildContext(request: BuildContextRequest, timeout: Duration? = mnemo.timeout): BuildContextResponse =
        mnemo.unary(request, timeout) { r, h -> raw.buildContext(r, h) }

    public suspend fun extractMemories(request: ExtractMemoriesRequest, timeout: Duration? = mnemo.timeout): ExtractMemoriesResponse =
        mnemo.unary(request, timeout) { r, h -> raw.extractMemories(r, h) }

    public suspend fun proposeMemoryCandidates(request: ProposeMemoryCandidatesRequest, timeout: Duration? = mnemo.timeout): ProposeMemoryCandidatesResponse =
        mnemo.unary(request, timeout) { r, h -> raw.proposeMemoryCandidates(r, h) }

    public suspend fun listMemoryCandidates(request: ListMemoryCandidatesRequest, timeout: Duration? = mnemo.timeout): ListMemoryCandidatesResponse =
        mnemo.unary(request, timeout) { r, h -> raw.listMemoryCandidates(r, h) }

    public suspend fun approveMemoryCandidate(request: ApproveMemoryCandidateRequest, timeout: Duration? = mnemo.timeout): ApproveMemoryCandidateResponse =
        mnemo.unary(request, timeout) { r, h -> raw.approveMemoryCandidate(r, h) }

    public suspend fun rejectMemoryCandidate(request: RejectMemoryCandidateRequest, timeout: Duration? = mnemo.timeout): RejectMemoryCandidateResponse =
        mnemo.unary(request, timeout) { r, h -> raw.rejectMemoryCandidate(r, h) }
}

/**
 * `mnemo.v1.GovernanceService`: a suspend function per unary or client-streaming method and a
 * [Flow] per server-streaming one, with [MnemoClient]'s behaviour; each throws
 * [MnemoException]. The generated [GovernanceServiceClient] documents every method's errors.
 */
public class Governance internal constructor(private val mnemo: MnemoClient) {
    /** The generated client, for calls without the facade (they return ResponseMessage). */
    public val raw: GovernanceServiceClient = GovernanceServiceClient(mnemo.protocolClient)

    public suspend fun getConsent(request: GetConsentRequest, timeout: Duration? = mnemo.timeout): GetConsentResponse =
        mnemo.unary(request, timeout) { r, h -> raw.getConsent(r, h) }

    public suspend fun setConsent(request: SetConsentRequest, timeout: Duration? = mnemo.timeout): SetConsentResponse =
        mnemo.unary(request, timeout) { r, h -> raw.setConsent(r, h) }

    public suspend fun getMemorySettings(request: GetMemorySettingsRequest, timeout: Duration? = mnemo.timeout): GetMemorySettingsResponse =
        mnemo.unary(request, timeout) { r, h -> raw.getMemorySettings(r, h) }

    public suspend fun updateMemorySettings(request: UpdateMemorySettingsRequest, timeout: Duration? = mnemo.timeout): UpdateMemorySettingsResponse =
        mnemo.unary(request, timeout) { r, h -> raw.updateMemorySettings(r, h) }

    public fun exportUserData(request: ExportUserDataRequest, timeout: Duration? = null): Flow<ExportUserDataResponse> =
        mnemo.serverStream(request, timeout) { h -> raw.exportUserData(h) }

    public suspend fun importUserData(requests: Flow<ImportUserDataRequest>, timeout: Duration? = mnemo.timeout): ImportUserDataResponse =
        mnemo.clientStream(requests, timeout) { h -> raw.importUserData(h) }

    public suspend fun deleteUserData(request: DeleteUserDataRequest, timeout: Duration? = mnemo.timeout): DeleteUserDataResponse =
        mnemo.unary(request, timeout) { r, h -> raw.deleteUserData(r, h) }

    public suspend fun listUserErasures(request: ListUserErasuresRequest, timeout: Duration? = mnemo.timeout): ListUserErasuresResponse =
        mnemo.unary(request, timeout) { r, h -> raw.listUserErasures(r, h) }

    public suspend fun listEvents(request: ListEventsRequest, timeout: Duration? = mnemo.timeout): ListEventsResponse =
        mnemo.unary(request, timeout) { r, h -> raw.listEvents(r, h) }

    public fun watchEvents(request: WatchEventsRequest, timeout: Duration? = null): Flow<WatchEventsResponse> =
        mnemo.serverStream(request, timeout) { h -> raw.watchEvents(h) }
}

/**
 * `mnemo.v1.SyncService`: a suspend function per unary or client-streaming method and a
 * [Flow] per server-streaming one, with [MnemoClient]'s behaviour; each throws
 * [MnemoException]. The generated [SyncServiceClient] documents every method's errors.
 */
public class Sync internal constructor(private val mnemo: MnemoClient) {
    /** The generated client, for calls without the facade (they return ResponseMessage). */
    public val raw: SyncServiceClient = SyncServiceClient(mnemo.protocolClient)

    public suspend fun listChanges(request: ListChangesRequest, timeout: Duration? = mnemo.timeout): ListChangesResponse =
        mnemo.unary(request, timeout) { r, h -> raw.listChanges(r, h) }

    public fun watchChanges(request: WatchChangesRequest, timeout: Duration? = null): Flow<WatchChangesResponse> =
        mnemo.serverStream(request, timeout) { h -> raw.watchChanges(h) }
}

/**
 * `mnemo.v1.DocumentService`: a suspend function per unary or client-streaming method and a
 * [Flow] per server-streaming one, with [MnemoClient]'s behaviour; each throws
 * [MnemoException]. The generated [DocumentServiceClient] documents every method's errors.
 */
public class Documents internal constructor(private val mnemo: MnemoClient) {
    /** The generated client, for calls without the facade (they return ResponseMessage). */
    public val raw: DocumentServiceClient = DocumentServiceClient(mnemo.protocolClient)

    public suspend fun getDocument(request: GetDocumentRequest, timeout: Duration? = mnemo.timeout): GetDocumentResponse =
        mnemo.unary(request, timeout) { r, h -> raw.getDocument(r, h) }

    public suspend fun putDocument(request: PutDocumentRequest, timeout: Duration? = mnemo.timeout): PutDocumentResponse =
        mnemo.unary(request, timeout) { r, h -> raw.putDocument(r, h) }

    public suspend fun deleteDocument(request: DeleteDocumentRequest, timeout: Duration? = mnemo.timeout): DeleteDocumentResponse =
        mnemo.unary(request, timeout) { r, h -> raw.deleteDocument(r, h) }

    public suspend fun searchDocuments(request: SearchDocumentsRequest, timeout: Duration? = mnemo.timeout): SearchDocumentsResponse =
        mnemo.unary(request, timeout) { r, h -> raw.searchDocuments(r, h) }

    public suspend fun listDocumentNamespaces(request: ListDocumentNamespacesRequest, timeout: Duration? = mnemo.timeout): ListDocumentNamespacesResponse =
        mnemo.unary(request, timeout) { r, h -> raw.listDocumentNamespaces(r, h) }
}

/**
 * `mnemo.v1.CheckpointService`: a suspend function per unary or client-streaming method and a
 * [Flow] per server-streaming one, with [MnemoClient]'s behaviour; each throws
 * [MnemoException]. The generated [CheckpointServiceClient] documents every method's errors.
 */
public class Checkpoints internal constructor(private val mnemo: MnemoClient) {
    /** The generated client, for calls without the facade (they return ResponseMessage). */
    public val raw: CheckpointServiceClient = CheckpointServiceClient(mnemo.protocolClient)

    public suspend fun putCheckpoint(request: PutCheckpointRequest, timeout: Duration? = mnemo.timeout): PutCheckpointResponse =
        mnemo.unary(request, timeout) { r, h -> raw.putCheckpoint(r, h) }

    public suspend fun putCheckpointWrites(request: PutCheckpointWritesRequest, timeout: Duration? = mnemo.timeout): PutCheckpointWritesResponse =
        mnemo.unary(request, timeout) { r, h -> raw.putCheckpointWrites(r, h) }

    public suspend fun getCheckpoint(request: GetCheckpointRequest, timeout: Duration? = mnemo.timeout): GetCheckpointResponse =
        mnemo.unary(request, timeout) { r, h -> raw.getCheckpoint(r, h) }

    public suspend fun listCheckpoints(request: ListCheckpointsRequest, timeout: Duration? = mnemo.timeout): ListCheckpointsResponse =
        mnemo.unary(request, timeout) { r, h -> raw.listCheckpoints(r, h) }

    public suspend fun deleteThread(request: DeleteThreadRequest, timeout: Duration? = mnemo.timeout): DeleteThreadResponse =
        mnemo.unary(request, timeout) { r, h -> raw.deleteThread(r, h) }

    public suspend fun copyThread(request: CopyThreadRequest, timeout: Duration? = mnemo.timeout): CopyThreadResponse =
        mnemo.unary(request, timeout) { r, h -> raw.copyThread(r, h) }

    public suspend fun pruneThreads(request: PruneThreadsRequest, timeout: Duration? = mnemo.timeout): PruneThreadsResponse =
        mnemo.unary(request, timeout) { r, h -> raw.pruneThreads(r, h) }

    public suspend fun deleteCheckpointsForRuns(request: DeleteCheckpointsForRunsRequest, timeout: Duration? = mnemo.timeout): DeleteCheckpointsForRunsResponse =
        mnemo.unary(request, timeout) { r, h -> raw.deleteCheckpointsForRuns(r, h) }
}

/**
 * `mnemo.v1.AgentStateService`: a suspend function per unary or client-streaming method and a
 * [Flow] per server-streaming one, with [MnemoClient]'s behaviour; each throws
 * [MnemoException]. The generated [AgentStateServiceClient] documents every method's errors.
 */
public class AgentState internal constructor(private val mnemo: MnemoClient) {
    /** The generated client, for calls without the facade (they return ResponseMessage). */
    public val raw: AgentStateServiceClient = AgentStateServiceClient(mnemo.protocolClient)

    public suspend fun getAppState(request: GetAppStateRequest, timeout: Duration? = mnemo.timeout): GetAppStateResponse =
        mnemo.unary(request, timeout) { r, h -> raw.getAppState(r, h) }

    public suspend fun updateAppState(request: UpdateAppStateRequest, timeout: Duration? = mnemo.timeout): UpdateAppStateResponse =
        mnemo.unary(request, timeout) { r, h -> raw.updateAppState(r, h) }
}
