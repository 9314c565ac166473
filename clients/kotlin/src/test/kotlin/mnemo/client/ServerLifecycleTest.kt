package mnemo.client

import com.connectrpc.Code
import kotlinx.coroutines.async
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import mnemo.v1.CreateMemoryRequest
import mnemo.v1.ListMemoriesRequest
import mnemo.v1.Memory
import mnemo.v1.WatchChangesRequest
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import java.nio.file.Files
import java.util.Collections
import java.util.concurrent.atomic.AtomicInteger
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds

/** What needs a server of its own: `--auth jwt`, and stopping and restarting it. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ServerLifecycleTest {
    private val keys = Hs256Keys()
    private val secretDir = Files.createTempDirectory("mnemo-kotlin-jwt-")
    private val server = TestServer(args = keys.serverArgs(secretDir))

    init {
        runBlocking { server.start() }
    }

    @AfterAll
    fun close() {
        server.close()
        secretDir.toFile().deleteRecursively()
    }

    private fun <T> live(block: suspend CoroutineScope.() -> T): T = runBlocking { withTimeout(90.seconds) { block() } }

    private fun memory(user: String, id: String, text: String) = CreateMemoryRequest.newBuilder()
        .setParent(Names.user(user)).setMemoryId(id).setMemory(Memory.newBuilder().setText(text)).build()

    @Test
    fun tokenReachesTheServerOnEveryAttempt() = live {
        val asked = AtomicInteger()
        MnemoClient(server.target, tokenSource = { asked.incrementAndGet(); keys.token("alice") }).use { alice ->
            alice.memories.createMemory(memory("alice", "m1", "Plays the cello"))
            val listed = alice.memories.listMemories(ListMemoriesRequest.newBuilder().setParent(Names.user("alice")).build())
            assertEquals(listOf(Names.memory("alice", "m1")), listed.memoriesList.map { it.name })
            assertEquals(2, asked.get())
        }
        MnemoClient(server.target).use { anonymous ->
            val error = assertFailsWith<MnemoException> {
                anonymous.memories.listMemories(ListMemoriesRequest.newBuilder().setParent(Names.user("alice")).build())
            }
            assertEquals(Code.UNAUTHENTICATED, error.code)
            assertTrue(error.reason.isNotEmpty(), error.toString())
        }
        MnemoClient(server.target, token = keys.token("bob")).use { bob ->
            val error = assertFailsWith<MnemoException> {
                bob.memories.listMemories(ListMemoriesRequest.newBuilder().setParent(Names.user("alice")).build())
            }
            // Another user's data is invisible, not forbidden.
            assertEquals(Code.NOT_FOUND, error.code, error.toString())
        }
    }

    @Test
    fun serverStreamDeadline() = live {
        MnemoClient(server.target, token = keys.token("carol")).use { carol ->
            val request = WatchChangesRequest.newBuilder().setParent(Names.user("carol")).build()
            val error = assertFailsWith<MnemoException> { carol.sync.watchChanges(request, timeout = 300.milliseconds).toList() }
            assertEquals(Code.DEADLINE_EXCEEDED, error.code, error.toString())
        }
    }

    @Test
    fun unavailableIsRetriedAcrossARestartAndTheFollowerResumes() = live {
        val token = keys.token("dave")
        val attempts = AtomicInteger()
        val patient = RetryPolicy(maxAttempts = 100, maxBackoff = 200.milliseconds)
        MnemoClient(server.target, tokenSource = { attempts.incrementAndGet(); token }, retry = patient, timeout = 60.seconds).use { dave ->
            val errors = Collections.synchronizedList(mutableListOf<MnemoException>())
            val follower = dave.follow("dave", onError = { errors += it })
            val events = Channel<FollowEvent.ChangeEvent>(Channel.UNLIMITED)
            val following = launch { follower.events().collect { if (it is FollowEvent.ChangeEvent) events.send(it) } }
            suspend fun changes(n: Int) = List(n) { events.receive().change }

            for (i in 1..3) dave.memories.createMemory(memory("dave", "m$i", "before $i"))
            val before = changes(3)

            server.stop()
            MnemoClient(server.target, token = token, retry = RetryPolicy(maxAttempts = 1)).use { impatient ->
                val down = assertFailsWith<MnemoException> { impatient.memories.createMemory(memory("dave", "x", "lost")) }
                assertEquals(Code.UNAVAILABLE, down.code, down.toString())
            }
            val before4 = attempts.get()
            val retried = async { dave.memories.createMemory(memory("dave", "m4", "during the restart")) }
            server.start()
            assertEquals(Names.memory("dave", "m4"), retried.await().memory.name)
            assertTrue(attempts.get() - before4 > 1, "the call made ${attempts.get() - before4} attempts")
            for (i in 5..6) dave.memories.createMemory(memory("dave", "m$i", "after $i"))
            val after = changes(3)
            following.cancel()

            val all = before + after
            assertEquals((1..6).map { Names.memory("dave", "m$it") }, all.map { it.resourceName })
            assertEquals(all.map { it.cursor }.sorted().distinct(), all.map { it.cursor })
            assertEquals(all.last().cursor, follower.cursor)
            assertTrue(events.tryReceive().isFailure, "a change came twice")
            val listed = dave.memories.listMemories(ListMemoriesRequest.newBuilder().setParent(Names.user("dave")).build())
            assertEquals(6, listed.memoriesCount)
            assertTrue(errors.all { it.code == Code.UNAVAILABLE || it.code == Code.CANCELED || it.code == Code.INTERNAL_ERROR || it.code == Code.UNKNOWN }, errors.toString())
        }
    }
}
