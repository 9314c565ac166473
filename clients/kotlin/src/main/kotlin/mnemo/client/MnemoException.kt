package mnemo.client

import com.connectrpc.Code
import com.connectrpc.ConnectException
import com.google.rpc.BadRequest
import com.google.rpc.ErrorInfo
import com.google.rpc.RetryInfo
import java.io.IOException
import java.io.InterruptedIOException
import kotlin.time.Duration
import kotlin.time.Duration.Companion.nanoseconds
import kotlin.time.Duration.Companion.seconds

/** The `ErrorInfo` domain of every Mnemo error. */
public const val ERROR_DOMAIN: String = "mnemo.v1"

/** One offending request field, from `google.rpc.BadRequest`. */
public data class FieldViolation(val field: String, val description: String)

/**
 * What every failed facade call throws, whatever the protocol: what the server put in the
 * `google.rpc.Status` details of the `grpc-status-details-bin` trailer (or the Connect
 * error body).
 *
 * - [code]: the status code (Connect-Kotlin's [Code], numerically the gRPC code;
 *   UNAVAILABLE when the server could not be reached or the connection broke);
 *   [codeName] spells it as gRPC does, e.g. `NOT_FOUND`, `CANCELLED`, `INTERNAL`;
 * - [reason]: the `ErrorInfo` reason, e.g. `ETAG_MISMATCH` (empty when the status has
 *   none, e.g. a deadline that expired on the client or a refused connection);
 * - [domain] and [metadata]: the `ErrorInfo` domain (`mnemo.v1`) and metadata;
 * - [fieldViolations]: the `BadRequest` violations;
 * - [retryAfter]: the `RetryInfo` delay (rate limits), if any;
 * - [rawMessage]: the status message as the server sent it.
 */
public class MnemoException(
    public val code: Code,
    public val rawMessage: String,
    public val reason: String = "",
    public val domain: String = "",
    public val metadata: Map<String, String> = emptyMap(),
    public val fieldViolations: List<FieldViolation> = emptyList(),
    public val retryAfter: Duration? = null,
    cause: Throwable? = null,
) : Exception(describe(code, reason, rawMessage, fieldViolations), cause) {
    /** The gRPC spelling of [code], e.g. `INVALID_ARGUMENT`. */
    public val codeName: String get() = grpcName(code)

    /** Whether this error has the given reason (and, if given, code). */
    public fun isReason(reason: String, code: Code? = null): Boolean =
        this.reason == reason && (code == null || this.code == code)

    public companion object {
        /** The MnemoException for a Connect-Kotlin error, with its details decoded. */
        public fun from(error: ConnectException): MnemoException {
            var info: ErrorInfo? = null
            val violations = mutableListOf<FieldViolation>()
            var retry: Duration? = null
            for (detail in error.details) {
                val bytes = detail.payload.toByteArray()
                when (typeName(detail.type)) {
                    "google.rpc.ErrorInfo" -> if (info == null) info = ErrorInfo.parseFrom(bytes)
                    "google.rpc.BadRequest" ->
                        BadRequest.parseFrom(bytes).fieldViolationsList.mapTo(violations) {
                            FieldViolation(it.field, it.description)
                        }
                    "google.rpc.RetryInfo" -> {
                        val delay = RetryInfo.parseFrom(bytes).retryDelay
                        retry = delay.seconds.seconds + delay.nanos.nanoseconds
                    }
                }
            }
            return MnemoException(
                code = transportCode(error),
                rawMessage = error.message ?: "",
                reason = info?.reason ?: "",
                domain = info?.domain ?: "",
                metadata = info?.metadataMap ?: emptyMap(),
                fieldViolations = violations,
                retryAfter = retry,
                cause = error,
            )
        }

        /**
         * Connect-Kotlin reports a connection that could not be made or broke (an
         * IOException of OkHttp's) as UNKNOWN; gRPC calls that UNAVAILABLE, which is what
         * the retries, the follower and callers act on.
         */
        private fun transportCode(error: ConnectException): Code {
            val cause = error.exception
            val broken = cause is IOException && cause !is InterruptedIOException
            return if (error.code == Code.UNKNOWN && broken) Code.UNAVAILABLE else error.code
        }

        /** [from] for a ConnectException, the same error for a MnemoException, else UNKNOWN. */
        public fun of(error: Throwable): MnemoException = when (error) {
            is MnemoException -> error
            is ConnectException -> from(error)
            else -> MnemoException(Code.UNKNOWN, error.toString(), cause = error)
        }

        /** The gRPC name of a status code: `Code.CANCELED` -> `CANCELLED`, `INTERNAL_ERROR` -> `INTERNAL`. */
        public fun grpcName(code: Code): String = when (code) {
            Code.CANCELED -> "CANCELLED"
            Code.INTERNAL_ERROR -> "INTERNAL"
            else -> code.name
        }
    }
}

private fun describe(code: Code, reason: String, message: String, violations: List<FieldViolation>): String {
    val tag = if (reason.isEmpty()) "" else " [$reason]"
    return "${MnemoException.grpcName(code)}$tag: $message" +
        violations.joinToString("") { "\n  ${it.field}: ${it.description}" }
}
