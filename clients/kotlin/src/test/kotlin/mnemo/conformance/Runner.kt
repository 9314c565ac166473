package mnemo.conformance

import com.connectrpc.MethodSpec
import com.connectrpc.ServerOnlyStreamInterface
import com.connectrpc.StreamType
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Job
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.flow.asFlow
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeoutOrNull
import mnemo.client.MnemoClient
import mnemo.client.MnemoException
import mnemo.client.RawMessage
import mnemo.client.RetryPolicy
import java.io.File
import java.math.BigDecimal
import java.security.SecureRandom
import kotlin.system.exitProcess
import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds

/**
 * The Kotlin conformance runner (tests/conformance/README.md): every scenario against one
 * live server, dispatched by method name with the descriptor set (JSON <-> binary by
 * [ProtoJson]) and calls of [RawMessage]s through the facade's [MnemoClient] (so its
 * deadline and error decoding apply; no per-method code). `clients/kotlin/run-conformance`
 * runs it:
 *
 *     MNEMO_TARGET=127.0.0.1:50051 clients/kotlin/run-conformance [--target HOST:PORT] [FOLDER_OR_FILE...]
 *
 * Prints `ok <id>` or `FAIL <id>: step N: <why>` per scenario, then
 * `conformance kotlin: P passed, F failed`; exits 1 when anything failed (or nothing ran),
 * 2 for a usage error.
 */
object Runner {
    const val LANGUAGE = "kotlin"
    val CALL_TIMEOUT: Duration = 10.seconds
    val RECEIVE_TIMEOUT: Duration = 10.seconds

    /** An open stream (a watch) is bounded too, so a scenario can never hang. */
    val OPEN_STREAM_TIMEOUT: Duration = 60.seconds

    @JvmStatic
    fun main(args: Array<String>) {
        var target = System.getenv("MNEMO_TARGET") ?: ""
        val paths = mutableListOf<File>()
        var i = 0
        while (i < args.size) {
            when (val arg = args[i]) {
                "--target" -> target = args.getOrNull(++i) ?: usage("--target needs a value")
                "-h", "--help" -> usage(null)
                else -> if (arg.startsWith("--target=")) target = arg.removePrefix("--target=") else paths += File(arg)
            }
            i++
        }
        if (target.isEmpty()) usage("no server: pass --target or set MNEMO_TARGET")
        val repo = File(System.getProperty("mnemo.repo") ?: ".")
        if (paths.isEmpty()) paths += File(repo, "tests/conformance/scenarios")
        paths.firstOrNull { !it.exists() }?.let { usage("no such file or folder: $it") }
        val scenarios = paths.flatMap { load(it) }
        val descriptors = Descriptors.load()
        val runId = ByteArray(4).also { SecureRandom().nextBytes(it) }.joinToString("") { "%02x".format(it) }
        var failed = 0
        for ((index, scenario) in scenarios.withIndex()) {
            val user = "conf-$LANGUAGE-$runId-$index"
            val why = ScenarioRun(target, descriptors, mapOf("user" to user, "other_user" to "$user-b")).run(scenario.steps)
            if (why == null) {
                println("ok ${scenario.id}")
            } else {
                failed++
                println("FAIL ${scenario.id}: $why")
            }
            System.out.flush()
        }
        println("conformance $LANGUAGE: ${scenarios.size - failed} passed, $failed failed")
        System.out.flush()
        exitProcess(if (failed > 0 || scenarios.isEmpty()) 1 else 0)
    }

    private fun usage(problem: String?): Nothing {
        System.err.println("usage: clients/kotlin/run-conformance [--target HOST:PORT] [FOLDER_OR_FILE...]")
        if (problem != null) System.err.println("run-conformance: $problem")
        exitProcess(if (problem == null) 0 else 2)
    }

    class Scenario(val id: String, val steps: List<Map<String, Any?>>)

    /** Every `*.json` under a folder (ids relative to it) or the file itself, in sorted id order. */
    @Suppress("UNCHECKED_CAST")
    fun load(path: File): List<Scenario> {
        val files = if (path.isDirectory) {
            path.walk().filter { it.isFile && it.name.endsWith(".json") }.map { it.relativeTo(path).invariantSeparatorsPath to it }.toList()
        } else {
            listOf(path.name to path)
        }
        return files.sortedBy { it.first.removeSuffix(".json") }.map { (relative, file) ->
            val data = Json.parse(file.readText()) as Map<String, Any?>
            Scenario(relative.removeSuffix(".json"), (data["steps"] as List<Map<String, Any?>>?) ?: emptyList())
        }
    }
}

/** One step did not do what its scenario says; the message says why. */
class StepFailed(message: String) : Exception(message)

/** The state of one scenario: its variables, clients and open streams. */
class ScenarioRun(private val target: String, private val descriptors: Descriptors, users: Map<String, String>) {
    private val json = ProtoJson(descriptors)
    private val variables = HashMap<String, Any?>(users)
    private val clients = HashMap<String, MnemoClient>()
    private val streams = HashMap<String, OpenStream>()

    /** Null when every step passed, else `step N: why` (1-based). */
    fun run(steps: List<Map<String, Any?>>): String? = runBlocking {
        var number = 0
        try {
            coroutineScope {
                try {
                    for ((index, step) in steps.withIndex()) {
                        number = index + 1
                        step(step)
                    }
                } finally {
                    streams.values.forEach { it.job.cancel() }
                }
            }
            null
        } catch (e: StepFailed) {
            "step $number: ${e.message}"
        } catch (e: ProtoJsonException) {
            "step $number: ${e.message}"
        } catch (e: Exception) {
            "step $number: ${e.javaClass.simpleName}: ${e.message}"
        } finally {
            clients.values.forEach { it.close() }
        }
    }

    private fun client(name: Any?): MnemoClient {
        if (name != "a" && name != "b") throw StepFailed("client must be \"a\" or \"b\", not ${Json.write(name)}")
        // A client of its own per name: its own connection (OkHttp client and pool).
        return clients.getOrPut(name as String) {
            MnemoClient(target, timeout = Runner.CALL_TIMEOUT, retry = RetryPolicy(maxAttempts = 1), autoRequestIds = false)
        }
    }

    private fun form(step: Map<String, Any?>): String {
        val forms = listOf("open", "receive", "close").filter { it in step }.toMutableList()
        if ("method" in step && forms.isNotEmpty() && forms != listOf("open")) forms.add(0, "method")
        if (forms.size > 1) throw StepFailed("a step has one form, this one has $forms")
        if (forms.isNotEmpty()) return forms[0]
        if ("method" !in step) throw StepFailed("a step needs method, open, receive or close")
        return "call"
    }

    private fun method(step: Map<String, Any?>): Descriptors.MethodType {
        val name = step["method"] as? String ?: throw StepFailed("method must be a string")
        return descriptors.methods[name] ?: throw StepFailed("unknown method: $name")
    }

    private fun requests(method: Descriptors.MethodType, step: Map<String, Any?>): List<RawMessage> {
        val raw = if ("requests" in step) step["requests"] as? List<*> ?: throw StepFailed("requests must be an array") else listOf(step["request"] ?: emptyMap<String, Any?>())
        return (substitute(raw, variables) as List<*>).map {
            try {
                RawMessage(json.encode(method.input, it))
            } catch (e: ProtoJsonException) {
                throw StepFailed("request is not a ${method.input}: ${e.message}")
            }
        }
    }

    @Suppress("UNCHECKED_CAST")
    private suspend fun CoroutineScope.step(step: Map<String, Any?>) {
        when (form(step)) {
            "call" -> {
                val method = method(step)
                val expect = substitute(step["expect"] ?: emptyMap<String, Any?>(), variables) as Map<String, Any?>
                val got = try {
                    call(client(step["client"] ?: "a"), method, requests(method, step))
                } catch (e: MnemoException) {
                    val expected = expect["error"] as Map<String, Any?>? ?: throw StepFailed("${method.path} failed: ${describe(e)}")
                    errorMismatch(expected, e)?.let { throw StepFailed(it) }
                    return
                }
                (expect["error"] as Map<String, Any?>?)?.let {
                    throw StepFailed("expected ${it["code"]}, but the call succeeded: ${short(got)}")
                }
                if ("response" in expect) Matching.mismatch(expect["response"], got)?.let { throw StepFailed(it) }
                save(step, got)
            }
            "open" -> {
                val method = method(step)
                val name = step["open"].toString()
                if (name in streams) throw StepFailed("stream \"$name\" is already open")
                if (!method.serverStreaming || method.clientStreaming) throw StepFailed("open needs a server-streaming method, not ${method.path}")
                val client = client(step["client"] ?: "a")
                val spec = MethodSpec(method.path, RawMessage::class, RawMessage::class, StreamType.SERVER)
                val sent = CompletableDeferred<Unit>()
                val flow = client.serverStream(requests(method, step)[0], Runner.OPEN_STREAM_TIMEOUT) { headers ->
                    SignalsSent(client.protocolClient.serverStream(headers, spec), sent)
                }
                val stream = OpenStream()
                stream.job = launch {
                    try {
                        flow.collect { stream.channel.send(json.decode(method.output, it.bytes)) }
                        stream.channel.send(OpenStream.End)
                    } catch (e: MnemoException) {
                        stream.channel.send(e)
                    } finally {
                        sent.complete(Unit)
                    }
                }
                // The next steps start once the request is sent (a launched coroutine would
                // otherwise first run when this one next suspends: in the next step's call, and a
                // watch could then miss what that step's write records).
                sent.await()
                streams[name] = stream
            }
            "receive" -> {
                val stream = streams[step["receive"].toString()] ?: throw StepFailed("no open stream \"${step["receive"]}\"")
                val expect = substitute(step["expect"] ?: emptyMap<String, Any?>(), variables) as Map<String, Any?>
                save(step, stream.receive(expect["response"] ?: emptyMap<String, Any?>()))
            }
            else -> {
                val name = step["close"].toString()
                val stream = streams.remove(name) ?: throw StepFailed("no open stream \"$name\"")
                stream.job.cancel()
            }
        }
    }

    private suspend fun call(client: MnemoClient, method: Descriptors.MethodType, requests: List<RawMessage>): Any? {
        val path = method.path
        return when {
            method.clientStreaming && !method.serverStreaming ->
                json.decode(method.output, client.clientStream<RawMessage, RawMessage>(path, requests.asFlow()).bytes)
            method.serverStreaming && !method.clientStreaming ->
                client.serverStream<RawMessage, RawMessage>(path, requests[0], Runner.CALL_TIMEOUT).toList().map { json.decode(method.output, it.bytes) }
            !method.serverStreaming -> json.decode(method.output, client.unary<RawMessage, RawMessage>(path, requests[0]).bytes)
            else -> throw StepFailed("bidirectional streams are not part of the scenario format: ${method.path}")
        }
    }

    private fun save(step: Map<String, Any?>, got: Any?) {
        val saves = step["save"] as? Map<*, *> ?: return
        for ((name, path) in saves) variables[name.toString()] = lookup(got, path.toString())
    }

    /** [inner], completing [sent] once its request has been sent (or failed to be). */
    private class SignalsSent<Req, Res>(
        private val inner: ServerOnlyStreamInterface<Req, Res>,
        private val sent: CompletableDeferred<Unit>,
    ) : ServerOnlyStreamInterface<Req, Res> by inner {
        override suspend fun sendAndClose(input: Req): Result<Unit> = try {
            inner.sendAndClose(input)
        } finally {
            sent.complete(Unit)
        }
    }

    private class OpenStream {
        object End

        val channel = Channel<Any?>(Channel.UNLIMITED)
        lateinit var job: Job

        suspend fun receive(expected: Any?): Any? {
            var last = "nothing"
            val found = withTimeoutOrNull(Runner.RECEIVE_TIMEOUT) {
                while (true) {
                    when (val item = channel.receive()) {
                        End -> throw StepFailed("the stream ended before a matching message (last: $last)")
                        is MnemoException -> throw StepFailed("the stream failed before a matching message: ${describe(item)}")
                        else -> {
                            val why = Matching.mismatch(expected, item) ?: return@withTimeoutOrNull Found(item)
                            last = why
                        }
                    }
                }
                @Suppress("UNREACHABLE_CODE")
                null
            }
            return (found ?: throw StepFailed("no matching message within ${Runner.RECEIVE_TIMEOUT} (last: $last)")).value
        }

        class Found(val value: Any?)
    }

    companion object {
        private val PLACEHOLDER = Regex("""\$\{([A-Za-z_][A-Za-z0-9_]*)\}""")
        private val WHOLE = Regex("""^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$""")

        /** [value] with every `${name}` in its strings replaced (object keys are left as they are). */
        fun substitute(value: Any?, variables: Map<String, Any?>): Any? = when (value) {
            is String -> WHOLE.matchEntire(value)?.let { variable(it.groupValues[1], variables) }
                ?: PLACEHOLDER.replace(value) { text(variable(it.groupValues[1], variables)) }
            is List<*> -> value.map { substitute(it, variables) }
            is Map<*, *> -> value.entries.associateTo(LinkedHashMap()) { (k, v) -> k.toString() to substitute(v, variables) }
            else -> value
        }

        private fun variable(name: String, variables: Map<String, Any?>): Any? {
            if (name !in variables) throw StepFailed("unknown placeholder \${$name}")
            return variables[name]
        }

        private fun text(value: Any?): String = value as? String ?: Json.write(value)

        /** The value at a dot-separated path (field names, 0-based indices). */
        fun lookup(value: Any?, path: String): Any? {
            var current = value
            for (part in path.split('.')) {
                current = when {
                    current is List<*> && part.toIntOrNull()?.let { it in current.indices } == true -> current[part.toInt()]
                    current is Map<*, *> && current.containsKey(part) -> current[part]
                    else -> throw StepFailed("save: no '$path' in the response ${short(value)}")
                }
            }
            return current
        }

        fun describe(e: MnemoException): String {
            val fields = if (e.fieldViolations.isEmpty()) "" else " fields ${e.fieldViolations.map { it.field }}"
            return "${e.codeName} ${e.reason.ifEmpty { "(no reason)" }}$fields: ${e.rawMessage.take(200)}"
        }

        /** Why [got] is not the expected error (code, reason, field violations), or null. */
        fun errorMismatch(expected: Map<String, Any?>, got: MnemoException): String? {
            if (got.codeName != expected["code"]) return "expected ${expected["code"]}, got ${describe(got)}"
            if ("reason" in expected && got.reason != expected["reason"]) return "expected reason ${expected["reason"]}, got ${describe(got)}"
            val fields = got.fieldViolations.map { it.field }
            val missing = (expected["fieldViolations"] as List<*>? ?: emptyList<Any?>()).filter { it !in fields }
            if (missing.isNotEmpty()) return "expected field violations $missing, got ${describe(got)}"
            return null
        }

        fun short(value: Any?, limit: Int = 300): String {
            val text = if (value === Matching.ABSENT) "(absent)" else Json.write(value)
            return if (text.length <= limit) text else text.take(limit - 3) + "..."
        }
    }
}

/** `expect.response` against the actual JSON (README "Matching expect"). */
object Matching {
    /** A key that the actual object lacks. */
    val ABSENT = Any()
    private val NUMERIC = Regex("""^-?\d+(\.\d+)?([eE][-+]?\d+)?$""")

    /** Why [actual] ([ABSENT] for a missing key) does not match [expected], or null when it does. */
    fun mismatch(expected: Any?, actual: Any?, path: String = ""): String? {
        val where = path.ifEmpty { "response" }
        if (expected is Map<*, *> && expected.size == 1 && expected.keys.first().toString().startsWith("$")) {
            return matcher(expected.keys.first().toString(), expected.values.first(), actual, where)
        }
        if (expected == null) return if (actual === ABSENT) null else "$where: expected absent, got ${ScenarioRun.short(actual)}"
        if (actual === ABSENT) return "$where: missing (expected ${ScenarioRun.short(expected)})"
        return when (expected) {
            is Map<*, *> -> {
                if (actual !is Map<*, *>) return "$where: expected an object, got ${ScenarioRun.short(actual)}"
                expected.entries.firstNotNullOfOrNull { (key, item) ->
                    mismatch(item, if (actual.containsKey(key)) actual[key] else ABSENT, if (path.isEmpty()) "$key" else "$path.$key")
                }
            }
            is List<*> -> {
                if (actual !is List<*>) return "$where: expected an array, got ${ScenarioRun.short(actual)}"
                if (actual.size != expected.size) {
                    return "$where: expected ${expected.size} elements, got ${actual.size}: ${ScenarioRun.short(actual)}"
                }
                expected.indices.firstNotNullOfOrNull { i -> mismatch(expected[i], actual[i], if (path.isEmpty()) "$i" else "$path.$i") }
            }
            else -> if (scalarEqual(expected, actual)) null else "$where: expected ${ScenarioRun.short(expected)}, got ${ScenarioRun.short(actual)}"
        }
    }

    private fun number(value: Any?): BigDecimal? = when (value) {
        is BigDecimal -> value
        is String -> if (NUMERIC.matches(value)) BigDecimal(value) else null
        else -> null
    }

    /** Equal scalars; a string and a number are equal when their decimal values are. */
    fun scalarEqual(expected: Any?, actual: Any?): Boolean {
        if (expected is Boolean || actual is Boolean) return expected == actual
        if (expected is BigDecimal || actual is BigDecimal) {
            val a = number(expected)
            val b = number(actual)
            return a != null && b != null && a.compareTo(b) == 0
        }
        return expected == actual
    }

    private fun matcher(name: String, argument: Any?, actual: Any?, where: String): String? {
        val short = ScenarioRun::short
        return when (name) {
            "\$any" -> if (actual !== ABSENT) null else "$where: missing (expected a value)"
            "\$len" -> {
                val items = if (actual === ABSENT) emptyList<Any?>() else actual as? List<*> ?: return "$where: expected an array, got ${short(actual, 300)}"
                if (number(argument)?.compareTo(BigDecimal(items.size)) == 0) null else "$where: expected $argument elements, got ${items.size}"
            }
            "\$gt", "\$gte", "\$lt", "\$lte" -> {
                val a = number(actual) ?: return "$where: expected a number $name $argument, got ${short(actual, 300)}"
                val b = number(argument) ?: return "$where: $name needs a number"
                val c = a.compareTo(b)
                val ok = when (name) {
                    "\$gt" -> c > 0
                    "\$gte" -> c >= 0
                    "\$lt" -> c < 0
                    else -> c <= 0
                }
                if (ok) null else "$where: ${short(actual, 300)} is not $name $argument"
            }
            "\$ne" -> if (actual !== ABSENT && mismatch(argument, actual, where) == null) "$where: expected anything but ${short(argument, 300)}" else null
            "\$contains" -> if (actual is String && argument.toString() in actual) null else "$where: expected a string containing '$argument', got ${short(actual, 300)}"
            "\$some" -> {
                if (actual !is List<*>) return "$where: expected an array, got ${short(actual, 300)}"
                if (actual.any { mismatch(argument, it, where) == null }) null else "$where: no element matches ${short(argument, 300)} in ${short(actual, 300)}"
            }
            else -> "$where: unknown matcher $name"
        }
    }
}

