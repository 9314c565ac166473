package mnemo.client

import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import mnemo.example.readme.readmeTour
import mnemo.v1.CreateMemoryRequest
import mnemo.v1.Memory
import org.junit.jupiter.api.Test
import java.io.ByteArrayOutputStream
import java.io.PrintStream
import kotlin.test.assertEquals
import kotlin.test.assertTrue
import kotlin.time.Duration.Companion.seconds

/** README.md shows src/test/kotlin/mnemo/example/readme/ReadmeTour.kt as it is, and it prints what its comments say. */
class ReadmeTourTest {
    @Test
    fun `the README shows the Kotlin tour as it is`() {
        val root = TestServer.repoRoot()
        val source = root.resolve("clients/kotlin/src/test/kotlin/mnemo/example/readme/ReadmeTour.kt").toFile().readText()
        val readme = root.resolve("README.md").toFile().readText()
        assertTrue(readme.contains("```kotlin\n$source```"), "README.md does not show ReadmeTour.kt as it is")
    }

    @Test
    fun `the tour prints what its comments say`() = runBlocking {
        TestServer().use { server ->
            withTimeout(90.seconds) {
                server.start()
                MnemoClient(server.target).use { mnemo ->
                    mnemo.memories.createMemory(
                        CreateMemoryRequest.newBuilder().setParent(Names.user("ada"))
                            .setMemory(Memory.newBuilder().setText("Ada lives in Lyon.").setKey("home")).build(),
                    )
                }
                val printed = ByteArrayOutputStream()
                val stdout = System.out
                System.setOut(PrintStream(printed, true))
                try {
                    readmeTour(server.target)
                } finally {
                    System.setOut(stdout)
                }
                assertEquals("1 Ada lives in Lyon.\nABORTED ETAG_MISMATCH\n", printed.toString())
            }
        }
    }
}
