package mnemo.client

import kotlinx.coroutines.delay
import kotlinx.coroutines.withTimeout
import java.io.File
import java.nio.file.Files
import java.nio.file.Path
import java.util.concurrent.TimeUnit
import kotlin.time.Duration.Companion.seconds

/**
 * A live Mnemo server for the tests: a real `<repo>/.venv/bin/python -m mnemo_server serve`
 * process on a temp SQLite file and a free 127.0.0.1 port (as the TypeScript tests'
 * support/server.ts). The first start listens on port 0 and reads the bound port from the
 * start line, then waits until grpc.health.v1 answers SERVING; a restart asks for the same
 * port (and web port) again. Every wait is bounded; a failure carries the end of the log.
 * Override the interpreter with MNEMO_PYTHON.
 */
class TestServer(private val args: List<String> = emptyList(), private val web: Boolean = false) : AutoCloseable {
    val dir: Path = Files.createTempDirectory("mnemo-kotlin-")
    private var process: Process? = null
    private var log: File = dir.resolve("serve-0.log").toFile()
    private var starts = 0
    var port = 0
        private set
    var webPort = 0
        private set

    /** `127.0.0.1:PORT`, the client's target for gRPC. */
    val target: String get() = "127.0.0.1:$port"

    /** `http://127.0.0.1:WEB_PORT` (gRPC-Web and Connect) of a server started with web = true. */
    val webUrl: String get() = "http://127.0.0.1:$webPort"

    suspend fun start() {
        check(process?.isAlive != true) { "the server is already running" }
        starts += 1
        log = dir.resolve("serve-$starts.log").toFile()
        val python = System.getenv("MNEMO_PYTHON") ?: repoRoot().resolve(".venv/bin/python").toString()
        val command = mutableListOf(
            python, "-m", "mnemo_server", "serve",
            "--listen", "127.0.0.1:$port",
            "--database-url", "sqlite:///${dir.resolve("mnemo.db")}",
        )
        if (web) command += listOf("--web-listen", "127.0.0.1:$webPort")
        // The client's tests check what the protocol carries, not how the model ranks:
        // no embedder (so recall is lexical), unless a test asks for one.
        if ("--embedder" !in args) command += listOf("--embedder", "none")
        command += args
        val started = ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log).start()
        process = started
        try {
            withTimeout(START_TIMEOUT) {
                while (true) {
                    val text = logText()
                    val grpc = SERVING_ON.find(text)
                    val webLine = WEB_SERVING_ON.find(text)
                    if (grpc != null && (!web || webLine != null)) {
                        port = grpc.groupValues[2].toInt()
                        if (webLine != null) webPort = webLine.groupValues[2].toInt()
                        break
                    }
                    check(started.isAlive) { describe("exited with ${started.exitValue()}") }
                    delay(50)
                }
                while (!serving()) {
                    check(started.isAlive) { describe("exited with ${started.exitValue()}") }
                    delay(50)
                }
            }
        } catch (e: Exception) {
            stop()
            throw IllegalStateException(describe("did not start: $e"), e)
        }
    }

    /** SIGTERM, wait (bounded; SIGKILL after 30 s). */
    fun stop() {
        val running = process ?: return
        running.destroy()
        if (!running.waitFor(30, TimeUnit.SECONDS)) {
            running.destroyForcibly()
            running.waitFor(10, TimeUnit.SECONDS)
        }
    }

    suspend fun restart() {
        stop()
        start()
    }

    override fun close() {
        stop()
        dir.toFile().deleteRecursively()
    }

    fun logText(): String = if (log.exists()) log.readText() else ""

    private fun describe(what: String) = "mnemo serve ($log) $what; its log ends with:\n${logText().takeLast(4000)}"

    /** grpc.health.v1.Health/Check answers SERVING (status 1: bytes 08 01). */
    private suspend fun serving(): Boolean = MnemoClient(target, retry = RetryPolicy(maxAttempts = 1), timeout = 2.seconds).use {
        try {
            val response: RawMessage = it.unary("grpc.health.v1.Health/Check", RawMessage(ByteArray(0)))
            response.bytes.contentEquals(byteArrayOf(8, 1))
        } catch (e: MnemoException) {
            false
        }
    }

    companion object {
        private val START_TIMEOUT = 60.seconds
        private val SERVING_ON = Regex("""mnemo \S+ serving on (\S+):(\d+) """)
        private val WEB_SERVING_ON = Regex("""\(web port\) serving on (\S+):(\d+)""")

        /** The repository root: the nearest ancestor holding pyproject.toml and server/. */
        fun repoRoot(): Path {
            var dir: Path? = Path.of("").toAbsolutePath()
            while (dir != null) {
                if (Files.exists(dir.resolve("pyproject.toml")) && Files.isDirectory(dir.resolve("server"))) return dir
                dir = dir.parent
            }
            error("repository root (pyproject.toml + server/) not found")
        }

        private var shared: TestServer? = null

        /**
         * The one server the test classes share (started on first use with the web port,
         * stopped at JVM exit), or MNEMO_TARGET's if set. Tests using it take user ids of
         * their own.
         */
        @Synchronized
        fun shared(): Shared {
            System.getenv("MNEMO_TARGET")?.takeIf { it.isNotEmpty() }?.let { return Shared(it, System.getenv("MNEMO_WEB_URL")) }
            val server = shared ?: TestServer(web = true).also { created ->
                kotlinx.coroutines.runBlocking { created.start() }
                Runtime.getRuntime().addShutdownHook(Thread { created.close() })
                shared = created
            }
            return Shared(server.target, server.webUrl)
        }
    }

    data class Shared(val target: String, val webUrl: String?)
}

/** A user id unique to this run. */
fun newUser(prefix: String): String = "kt-$prefix-${java.util.UUID.randomUUID().toString().take(8)}"

