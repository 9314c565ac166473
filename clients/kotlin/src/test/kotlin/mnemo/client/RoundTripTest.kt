package mnemo.client

import com.connectrpc.Code
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.filter
import kotlinx.coroutines.flow.filterIsInstance
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import mnemo.v1.AppendMessagesRequest
import mnemo.v1.BuildContextRequest
import mnemo.v1.ConsentState
import mnemo.v1.Consent
import mnemo.v1.CreateConversationRequest
import mnemo.v1.CreateMemoryRequest
import mnemo.v1.DeleteUserDataRequest
import mnemo.v1.GetConsentRequest
import mnemo.v1.GetMemorySettingsRequest
import mnemo.v1.GetMemoryStateRequest
import mnemo.v1.HistoryMessage
import mnemo.v1.ListChangesRequest
import mnemo.v1.ListUserErasuresRequest
import mnemo.v1.ListMessagesRequest
import mnemo.v1.Memory
import mnemo.v1.MemorySettings
import mnemo.v1.MemoryState
import mnemo.v1.RecallMemoriesRequest
import mnemo.v1.SaveMemoryStateRequest
import mnemo.v1.SetConsentRequest
import mnemo.v1.UpdateMemorySettingsRequest
import mnemo.v1.UserErasure
import mnemo.v1.WatchChangesRequest
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue
import kotlin.time.Duration.Companion.seconds

/** One round trip per area, and the errors' code, reason and field violations, on the shared server. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RoundTripTest {
    private val server = TestServer.shared()
    private val mnemo = MnemoClient(server.target)

    @AfterAll
    fun close() = mnemo.close()

    private fun <T> live(block: suspend CoroutineScope.() -> T): T = runBlocking { withTimeout(60.seconds) { block() } }

    @Test
    fun workingMemoryRoundTripAndEtagConflict() = live {
        val name = Names.memoryState(newUser("wm"))
        val saved = mnemo.workingMemory.saveMemoryState(
            SaveMemoryStateRequest.newBuilder()
                .setMemoryState(MemoryState.newBuilder().setName(name).setSummary("Likes tea"))
                .build(),
        ).memoryState
        assertTrue(saved.etag.isNotEmpty())
        val read = mnemo.workingMemory.getMemoryState(GetMemoryStateRequest.newBuilder().setName(name).build())
        assertEquals("Likes tea", read.memoryState.summary)
        assertEquals(saved.etag, read.memoryState.etag)

        val stale = SaveMemoryStateRequest.newBuilder()
            .setMemoryState(MemoryState.newBuilder().setName(name).setSummary("Likes coffee").setEtag("stale"))
            .build()
        val error = assertFailsWith<MnemoException> { mnemo.workingMemory.saveMemoryState(stale) }
        assertEquals(Code.ABORTED, error.code)
        assertEquals("ABORTED", error.codeName)
        assertEquals("ETAG_MISMATCH", error.reason)
        assertEquals(ERROR_DOMAIN, error.domain)
    }

    private fun message(role: String, text: String) =
        HistoryMessage.newBuilder().setRole(role).setMessageJson("""{"role": "$role", "content": "$text"}""")

    @Test
    fun historyAppendAndList() = live {
        val user = newUser("hist")
        val created = mnemo.conversations.createConversation(
            CreateConversationRequest.newBuilder().setParent(Names.user(user)).setConversationId("c1").build(),
        ).conversation
        assertEquals(Names.conversation(user, "c1"), created.name)
        val appended = mnemo.conversations.appendMessages(
            AppendMessagesRequest.newBuilder()
                .setConversation(created.name)
                .addMessages(message("user", "Hello"))
                .addMessages(message("assistant", "Hi there"))
                .build(),
        )
        assertEquals(listOf(0L, 1L), appended.messagesList.map { it.position })
        val listed = mnemo.conversations.listMessages(ListMessagesRequest.newBuilder().setParent(created.name).build())
        assertEquals(listOf("Hello", "Hi there"), listed.messagesList.map { it.text })
    }

    @Test
    fun memoriesCreateAndRecallAsFlow() = live {
        val user = newUser("mem")
        for ((id, text) in listOf("m1" to "Plays the cello", "m2" to "Lives in Lyon")) {
            mnemo.memories.createMemory(
                CreateMemoryRequest.newBuilder().setParent(Names.user(user)).setMemoryId(id)
                    .setMemory(Memory.newBuilder().setText(text)).build(),
            )
        }
        val recalled = mnemo.memories.recallMemories(
            RecallMemoriesRequest.newBuilder().setParent(Names.user(user)).setQuery("cello").build(),
        ).toList()
        assertEquals(listOf(Names.memory(user, "m1")), recalled.map { it.memory.name })
        // The minimum relevance of one request (this server recalls by words:
        // it keeps every match unless asked); nothing relevant injects nothing.
        val context = BuildContextRequest.newBuilder().setParent(Names.user(user)).setQuery("cello")
        assertEquals(listOf(Names.memory(user, "m1")), mnemo.memories.buildContext(context.build()).memoriesList)
        val nothing = mnemo.memories.buildContext(context.setMinScore(0.99).build())
        assertEquals(Triple("", emptyList<String>(), 0), Triple(nothing.systemMessage, nothing.memoriesList, nothing.usedBytes))
    }

    @Test
    fun governanceConsentAndSettings() = live {
        val user = newUser("gov")
        val consentName = "${Names.user(user)}/consent"
        val initial = mnemo.governance.getConsent(GetConsentRequest.newBuilder().setName(consentName).build()).consent
        assertEquals(ConsentState.CONSENT_STATE_GRANTED, initial.state)
        val withdrawn = mnemo.governance.setConsent(
            SetConsentRequest.newBuilder().setConsent(
                Consent.newBuilder().setName(consentName).setState(ConsentState.CONSENT_STATE_WITHDRAWN).setPolicyVersion("v2"),
            ).build(),
        ).consent
        assertEquals(ConsentState.CONSENT_STATE_WITHDRAWN, withdrawn.state)
        val refused = assertFailsWith<MnemoException> {
            mnemo.memories.createMemory(
                CreateMemoryRequest.newBuilder().setParent(Names.user(user)).setMemory(Memory.newBuilder().setText("x")).build(),
            )
        }
        assertEquals(Code.FAILED_PRECONDITION, refused.code)
        assertEquals("MEMORY_CONSENT_WITHDRAWN", refused.reason)

        val settingsName = "${Names.user(user)}/memorySettings"
        val settings = mnemo.governance.getMemorySettings(GetMemorySettingsRequest.newBuilder().setName(settingsName).build())
        val off = mnemo.governance.updateMemorySettings(
            UpdateMemorySettingsRequest.newBuilder().setMemorySettings(
                MemorySettings.newBuilder().setName(settingsName).setEnabled(false).setEtag(settings.memorySettings.etag),
            ).build(),
        ).memorySettings
        assertEquals(false, off.enabled)
    }

    @Test
    fun erasureLeavesTheTenantAnAuditRecord() = live {
        val user = newUser("erasure")
        mnemo.memories.createMemory(
            CreateMemoryRequest.newBuilder().setParent(Names.user(user))
                .setMemory(Memory.newBuilder().setText("The user's umbrella is blue")).build(),
        )
        val receipt = mnemo.governance.deleteUserData(DeleteUserDataRequest.newBuilder().setParent(Names.user(user)).build())
        assertEquals(1L, receipt.deletedRowsMap["memories"])

        // Users without a tenant: `tenants/-`; every page, newest first.
        val found = mutableListOf<UserErasure>()
        var token = ""
        do {
            val page = mnemo.governance.listUserErasures(
                ListUserErasuresRequest.newBuilder().setParent("tenants/-").setPageToken(token).build(),
            )
            found += page.erasuresList.filter { it.user == Names.user(user) }
            token = page.nextPageToken
        } while (token.isNotEmpty())
        assertEquals(1, found.size, "records of ${Names.user(user)}")
        val record = found.single()
        assertEquals(receipt.deletedRowsMap, record.deletedRowsMap)
        assertEquals("", record.erasedBy)
        assertEquals(false, record.byAdmin)
        assertTrue(record.hasEraseTime())
    }

    @Test
    fun invalidArgumentCarriesReasonAndFieldViolations() = live {
        val error = assertFailsWith<MnemoException> {
            mnemo.memories.createMemory(
                CreateMemoryRequest.newBuilder().setParent(Names.user(newUser("bad"))).setMemory(Memory.newBuilder().setText("")).build(),
            )
        }
        assertEquals(Code.INVALID_ARGUMENT, error.code)
        assertTrue(error.reason.isNotEmpty(), error.toString())
        assertTrue(error.fieldViolations.any { it.field == "memory.text" }, error.toString())
    }

    @Test
    fun syncListChangesSeesWrites() = live {
        val user = newUser("sync")
        mnemo.conversations.createConversation(
            CreateConversationRequest.newBuilder().setParent(Names.user(user)).setConversationId("c1").build(),
        )
        val page = mnemo.sync.listChanges(ListChangesRequest.newBuilder().setParent(Names.user(user)).build())
        assertEquals(listOf(Names.conversation(user, "c1")), page.changesList.map { it.resourceName })
        assertEquals(page.latestCursor, page.changesList.last().cursor)
    }

    @Test
    fun aWatchWithoutADeadlineOutlivesConnectKotlinsDefaultTimeout() = live {
        // Connect-Kotlin ends every call after 10 s unless told otherwise; a watch without a
        // deadline must not end then (it did, DEADLINE_EXCEEDED, before the facade said so).
        val user = newUser("quiet")
        val watch = mnemo.sync.watchChanges(WatchChangesRequest.newBuilder().setParent(Names.user(user)).build())
        val first = async { watch.filter { it.hasChange() }.first() }
        delay(11.seconds)
        mnemo.memories.createMemory(
            CreateMemoryRequest.newBuilder().setParent(Names.user(user)).setMemoryId("m1").setMemory(Memory.newBuilder().setText("late")).build(),
        )
        assertEquals(Names.memory(user, "m1"), first.await().change.resourceName)
    }

    @Test
    fun followerResyncsFromACursorAheadOfTheFeed() = live {
        val user = newUser("resync")
        mnemo.memories.createMemory(
            CreateMemoryRequest.newBuilder().setParent(Names.user(user)).setMemoryId("m1").setMemory(Memory.newBuilder().setText("one")).build(),
        )
        val ahead = assertFailsWith<MnemoException> { mnemo.follow(user, afterCursor = 1000).events().first() }
        assertEquals(Code.OUT_OF_RANGE, ahead.code)
        assertEquals("CURSOR_AHEAD", ahead.reason)

        val resyncs = mutableListOf<String>()
        val follower = mnemo.follow(user, afterCursor = 1000, onResync = { resyncs += it.reason })
        val first = async { follower.events().filterIsInstance<FollowEvent.ChangeEvent>().first() }
        while (resyncs.isEmpty()) delay(20)
        mnemo.memories.createMemory(
            CreateMemoryRequest.newBuilder().setParent(Names.user(user)).setMemoryId("m2").setMemory(Memory.newBuilder().setText("two")).build(),
        )
        assertEquals(Names.memory(user, "m2"), first.await().change.resourceName)
        assertEquals(listOf("CURSOR_AHEAD"), resyncs)
    }

    @Test
    fun connectProtocolOnTheWebPort() = live {
        val webUrl = server.webUrl
        assumeTrue(webUrl != null, "MNEMO_TARGET is set without MNEMO_WEB_URL")
        MnemoClient(webUrl!!, transport = Transport.CONNECT).use { web ->
            val user = newUser("web")
            web.memories.createMemory(
                CreateMemoryRequest.newBuilder().setParent(Names.user(user)).setMemoryId("m1")
                    .setMemory(Memory.newBuilder().setText("Plays the cello")).build(),
            )
            val recalled = web.memories.recallMemories(
                RecallMemoriesRequest.newBuilder().setParent(Names.user(user)).setQuery("cello").build(),
            ).toList()
            assertEquals(listOf(Names.memory(user, "m1")), recalled.map { it.memory.name })
            val error = assertFailsWith<MnemoException> {
                web.memories.createMemory(
                    CreateMemoryRequest.newBuilder().setParent(Names.user(user)).setMemory(Memory.newBuilder().setText("")).build(),
                )
            }
            assertEquals(Code.INVALID_ARGUMENT, error.code)
            assertTrue(error.fieldViolations.any { it.field == "memory.text" }, error.toString())
        }
    }
}
