package mnemo.client

import com.connectrpc.ClientOnlyStreamInterface
import com.connectrpc.Code
import com.connectrpc.ConnectException
import com.connectrpc.MethodSpec
import com.connectrpc.ProtocolClientConfig
import com.connectrpc.ProtocolClientInterface
import com.connectrpc.ResponseMessage
import com.connectrpc.ServerOnlyStreamInterface
import com.connectrpc.impl.ProtocolClient
import com.connectrpc.okhttp.ConnectOkHttpClient
import com.connectrpc.protocols.NetworkProtocol
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.withTimeout
import okhttp3.OkHttpClient
import okhttp3.Protocol
import java.io.Closeable
import kotlin.random.Random
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlin.time.TimeSource

/** Which protocol the client speaks, and so which port of the server it calls. */
public enum class Transport(internal val network: NetworkProtocol) {
    /** gRPC over HTTP/2 (cleartext with prior knowledge, or TLS), to the gRPC port (`--listen`). */
    GRPC(NetworkProtocol.GRPC),

    /** gRPC-Web over HTTP/1.1, to the web port (`--web-listen`). Unary and server streams only. */
    GRPC_WEB(NetworkProtocol.GRPC_WEB),

    /** The Connect protocol over HTTP/1.1, to the web port (`--web-listen`). Unary and server streams only. */
    CONNECT(NetworkProtocol.CONNECT),
}

/**
 * How UNAVAILABLE is retried (the Python and TypeScript clients' policy): at most
 * [maxAttempts] attempts (1: no retries), waiting a random time up to a ceiling that starts
 * at [initialBackoff] and grows by [multiplier] up to [maxBackoff], all within the call's
 * deadline. Only unary calls are retried (a stream cannot be replayed); writes are safe to
 * retry because the facade gives each one a `request_id` (see [MnemoClient]).
 */
public data class RetryPolicy(
    val maxAttempts: Int = 5,
    val initialBackoff: Duration = 100.milliseconds,
    val maxBackoff: Duration = 2.seconds,
    val multiplier: Double = 2.0,
) {
    init {
        require(maxAttempts >= 1) { "maxAttempts must be at least 1, not $maxAttempts" }
    }
}

/** The default deadline of each unary or client-streaming call (the Python client's 10 s). */
public val DEFAULT_TIMEOUT: Duration = 10.seconds

/**
 * A Mnemo client: typed suspend calls of every mnemo.v1 service over one connection
 * (Connect-Kotlin over OkHttp), with the facade's behaviour on every call:
 *
 * - `authorization: Bearer <token>` from [tokenSource] (asked before each attempt, so it
 *   can refresh), plus fixed [headers];
 * - a deadline: [timeout] (default 10 s; null: none) for each unary and client-streaming
 *   call, sent to the server (`grpc-timeout` / `connect-timeout-ms`) and enforced here,
 *   retries included; server streams have none unless the call gives one;
 * - UNAVAILABLE retried per [retry] for unary calls;
 * - with [autoRequestIds] (default), a write request with an empty `request_id` gets a
 *   fresh uuid once per call, so its retries are applied at most once;
 * - every failure is a [MnemoException] (code, `ErrorInfo` reason, field violations).
 *
 * [target] is `host:port` (plain HTTP/2 or HTTP/1.1 on loopback) or a URL
 * (`http://…`, `https://…`); [transport] picks gRPC (the gRPC port, default) or gRPC-Web /
 * Connect (the web port). [close] ends the connections.
 */
public class MnemoClient(
    target: String,
    token: String? = null,
    tokenSource: (() -> String?)? = null,
    public val timeout: Duration? = DEFAULT_TIMEOUT,
    public val retry: RetryPolicy = RetryPolicy(),
    public val transport: Transport = Transport.GRPC,
    public val autoRequestIds: Boolean = true,
    private val headers: Map<String, String> = emptyMap(),
    okHttpClient: OkHttpClient? = null,
) : Closeable {
    /** The base URL the calls go to, e.g. `http://127.0.0.1:50051`. */
    public val baseUrl: String = if (target.contains("://")) target.trimEnd('/') else "http://$target"

    private val token: (() -> String?)? = tokenSource ?: token?.let { value -> { value } }
    private val http: OkHttpClient = okHttpClient ?: defaultHttpClient(baseUrl, transport)

    /**
     * Connect-Kotlin's client under the facade, e.g. for the generated `*ServiceClient`
     * classes or [unary] with a [MethodSpec] of your own. Calls made on it directly get the
     * token only if the caller passes [callHeaders].
     */
    public val protocolClient: ProtocolClientInterface = ProtocolClient(
        httpClient = ConnectOkHttpClient(http),
        config = ProtocolClientConfig(
            host = baseUrl,
            serializationStrategy = LiteSerialization,
            networkProtocol = transport.network,
            // Connect-Kotlin's default gives every call, watches included, 10 s; deadlines are
            // the facade's (`timeout`, per call), so Connect-Kotlin sets none of its own.
            timeoutOracle = { null },
        ),
    )

    public val workingMemory: WorkingMemory = WorkingMemory(this)
    public val conversations: Conversations = Conversations(this)
    public val memories: Memories = Memories(this)
    public val governance: Governance = Governance(this)
    public val sync: Sync = Sync(this)
    public val documents: Documents = Documents(this)
    public val checkpoints: Checkpoints = Checkpoints(this)
    public val agentState: AgentState = AgentState(this)

    /** The headers of one attempt: the fixed ones, the token, the remaining [deadline]. */
    public fun callHeaders(deadline: Duration? = null): Map<String, List<String>> {
        val out = LinkedHashMap<String, List<String>>()
        for ((name, value) in headers) out[name.lowercase()] = listOf(value)
        token?.invoke()?.takeIf { it.isNotEmpty() }?.let { out["authorization"] = listOf("Bearer $it") }
        if (deadline != null) {
            val millis = deadline.inWholeMilliseconds.coerceAtLeast(1)
            when (transport) {
                Transport.CONNECT -> out["connect-timeout-ms"] = listOf(millis.toString())
                else -> out["grpc-timeout"] = listOf("${millis}m")
            }
        }
        return out
    }

    /**
     * One unary call with the facade's behaviour (see the class comment): [send] makes one
     * attempt with the given request and headers, e.g. `{ r, h -> raw.createMemory(r, h) }`.
     *
     * @throws MnemoException the final failure (DEADLINE_EXCEEDED when [timeout] ran out).
     */
    public suspend fun <Req : Any, Res : Any> unary(
        request: Req,
        timeout: Duration? = this.timeout,
        send: suspend (Req, Map<String, List<String>>) -> ResponseMessage<Res>,
    ): Res {
        val message = if (autoRequestIds) RequestIds.fill(request) else request
        return withDeadline(timeout) { remaining -> attempts(message, remaining, send) }
    }

    private suspend fun <Req : Any, Res : Any> attempts(
        request: Req,
        remaining: () -> Duration?,
        send: suspend (Req, Map<String, List<String>>) -> ResponseMessage<Res>,
    ): Res {
        var ceiling = retry.initialBackoff
        var attempt = 1
        while (true) {
            when (val response = send(request, callHeaders(remaining()))) {
                is ResponseMessage.Success -> return response.message
                is ResponseMessage.Failure -> {
                    val error = MnemoException.from(response.cause)
                    if (error.code != Code.UNAVAILABLE || attempt >= retry.maxAttempts) throw error
                }
            }
            delay(ceiling * Random.nextDouble())
            ceiling = minOf(ceiling * retry.multiplier, retry.maxBackoff)
            attempt += 1
        }
    }

    /** [unary] by method name, e.g. `mnemo.v1.MemoryService/GetMemory`. */
    public suspend inline fun <reified Req : Any, reified Res : Any> unary(
        method: String,
        request: Req,
        timeout: Duration? = this.timeout,
    ): Res {
        val spec = MethodSpec(method, Req::class, Res::class, com.connectrpc.StreamType.UNARY)
        return unary(request, timeout) { r, h -> protocolClient.unary(r, h, spec) }
    }

    /**
     * A server-streaming call as a cold [Flow]: each collection opens the stream, sends
     * [request] and emits the responses; cancelling the collection cancels the call. Not
     * retried. [timeout] bounds the whole stream (default none).
     *
     * @throws MnemoException from the collection when the call fails.
     */
    public fun <Req : Any, Res : Any> serverStream(
        request: Req,
        timeout: Duration? = null,
        open: suspend (Map<String, List<String>>) -> ServerOnlyStreamInterface<Req, Res>,
    ): Flow<Res> = flow {
        withDeadline(timeout) { remaining ->
            val stream = open(callHeaders(remaining()))
            try {
                stream.sendAndClose(request).getOrElse { throw MnemoException.of(it) }
                try {
                    for (response in stream.responseChannel()) emit(response)
                } catch (e: ConnectException) {
                    throw MnemoException.from(e)
                }
            } finally {
                stream.receiveClose()
            }
        }
    }

    /** [serverStream] by method name (e.g. with [RawMessage] types). */
    public inline fun <reified Req : Any, reified Res : Any> serverStream(
        method: String,
        request: Req,
        timeout: Duration? = null,
    ): Flow<Res> {
        val spec = MethodSpec(method, Req::class, Res::class, com.connectrpc.StreamType.SERVER)
        return serverStream(request, timeout) { h -> protocolClient.serverStream(h, spec) }
    }

    /**
     * A client-streaming call: sends every request of [requests] in order, half-closes, and
     * returns the one response. Not retried. [timeout] as for [unary].
     *
     * @throws MnemoException when the call fails.
     */
    public suspend fun <Req : Any, Res : Any> clientStream(
        requests: Flow<Req>,
        timeout: Duration? = this.timeout,
        open: suspend (Map<String, List<String>>) -> ClientOnlyStreamInterface<Req, Res>,
    ): Res = withDeadline(timeout) { remaining ->
        val stream = open(callHeaders(remaining()))
        try {
            requests.collect { request -> stream.send(request).getOrElse { throw MnemoException.of(it) } }
            stream.receiveAndClose()
        } catch (e: ConnectException) {
            throw MnemoException.from(e)
        }
    }

    /** [clientStream] by method name (e.g. with [RawMessage] types). */
    public suspend inline fun <reified Req : Any, reified Res : Any> clientStream(
        method: String,
        requests: Flow<Req>,
        timeout: Duration? = this.timeout,
    ): Res {
        val spec = MethodSpec(method, Req::class, Res::class, com.connectrpc.StreamType.CLIENT)
        return clientStream(requests, timeout) { h -> protocolClient.clientStream(h, spec) }
    }

    /**
     * Follows [user]'s change feed for ever, resuming after every interruption without
     * losing or repeating a change; see [ChangeFollower].
     */
    public fun follow(
        user: String,
        afterCursor: Long = 0,
        onResync: (suspend (MnemoException) -> Unit)? = null,
        onError: ((MnemoException) -> Unit)? = null,
    ): ChangeFollower = ChangeFollower(this, user, afterCursor, onResync, onError)

    /** Ends the connections and the HTTP client's threads. Idempotent. */
    override fun close() {
        http.dispatcher.executorService.shutdown()
        http.connectionPool.evictAll()
    }

    private suspend fun <T> withDeadline(timeout: Duration?, block: suspend (() -> Duration?) -> T): T {
        if (timeout == null || timeout.isInfinite()) return block { null }
        val start = TimeSource.Monotonic.markNow()
        return try {
            withTimeout(timeout) { block { (timeout - start.elapsedNow()).coerceAtLeast(1.milliseconds) } }
        } catch (e: TimeoutCancellationException) {
            throw MnemoException(Code.DEADLINE_EXCEEDED, "deadline of $timeout exceeded", cause = e)
        }
    }
}

/** HTTP/2 without TLS needs prior knowledge (gRPC); the web port speaks HTTP/1.1. */
private fun defaultHttpClient(baseUrl: String, transport: Transport): OkHttpClient {
    val protocols = when {
        transport != Transport.GRPC -> listOf(Protocol.HTTP_1_1)
        baseUrl.startsWith("https://") -> listOf(Protocol.HTTP_2, Protocol.HTTP_1_1)
        else -> listOf(Protocol.H2_PRIOR_KNOWLEDGE)
    }
    // No OkHttp timeouts but the connect one: deadlines are the facade's, and a watch may
    // stay quiet between heartbeats.
    return OkHttpClient.Builder()
        .protocols(protocols)
        .connectTimeout(java.time.Duration.ofSeconds(10))
        .readTimeout(java.time.Duration.ZERO)
        .writeTimeout(java.time.Duration.ZERO)
        .callTimeout(java.time.Duration.ZERO)
        .retryOnConnectionFailure(false)
        .build()
}
