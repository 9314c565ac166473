package mnemo.client

import com.connectrpc.Code
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.delay
import kotlinx.coroutines.ensureActive
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import mnemo.v1.Change
import mnemo.v1.Heartbeat
import mnemo.v1.ListChangesRequest
import mnemo.v1.WatchChangesRequest
import mnemo.v1.WatchChangesResponse
import kotlin.math.min
import kotlin.random.Random
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.minutes
import kotlin.time.Duration.Companion.seconds

/** What a follower emits: a change, or a heartbeat while caught up. */
public sealed interface FollowEvent {
    public data class ChangeEvent(val change: Change) : FollowEvent

    /** Caught up: [heartbeat]`.cursor` is the user's latest cursor. */
    public data class HeartbeatEvent(val heartbeat: Heartbeat) : FollowEvent
}

/** What a follower does after an error ended a watch. */
public enum class FollowStep { RESUME, BACKOFF, RESYNC }

/** The OUT_OF_RANGE reasons after which a follower resyncs. */
public val RESYNC_REASONS: Set<String> = setOf("CURSOR_EXPIRED", "CURSOR_AHEAD")

/**
 * What a follower does after [error] (the Python and TypeScript clients' rules).
 *
 * @throws MnemoException [error] itself when it is fatal (INVALID_ARGUMENT,
 *   UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND, ...).
 */
public fun nextStep(error: MnemoException): FollowStep = when {
    error.code == Code.ABORTED && error.reason == "WATCH_LAGGING" -> FollowStep.RESUME
    error.code == Code.ABORTED && error.reason == "CONCURRENT_MODIFICATION" -> FollowStep.BACKOFF
    error.code in TRANSIENT -> FollowStep.BACKOFF
    error.code == Code.OUT_OF_RANGE && error.reason in RESYNC_REASONS -> FollowStep.RESYNC
    else -> throw error
}

private val TRANSIENT = setOf(
    Code.UNAVAILABLE, Code.INTERNAL_ERROR, Code.UNKNOWN, Code.CANCELED, Code.DEADLINE_EXCEEDED, Code.RESOURCE_EXHAUSTED,
)

/**
 * One user's change feed followed for ever, resuming by itself (the Python client's
 * `ChangeFollower`, same contract); made by [MnemoClient.follow].
 *
 *     mnemo.follow("u1", afterCursor = saved, onResync = { reloadEverything() }).events().collect { event ->
 *         if (event is FollowEvent.ChangeEvent) { apply(event.change); saved = event.change.cursor }
 *     }
 *
 * Every watch starts after [cursor] (the last change emitted), so across reconnects no
 * change is missed or emitted twice. A watch is resumed at once when it ends cleanly (the
 * server shut down; after a backoff if it had sent nothing) or with ABORTED WATCH_LAGGING,
 * and after a backoff (100 ms doubling up to [maxBackoff], jittered; back to 100 ms once a
 * message arrives) on every transient error: UNAVAILABLE (the server or its database is
 * down, e.g. restarting), INTERNAL, UNKNOWN, CANCELLED, DEADLINE_EXCEEDED (each watch lasts
 * at most [watchTimeout]), RESOURCE_EXHAUSTED and ABORTED CONCURRENT_MODIFICATION.
 *
 * OUT_OF_RANGE CURSOR_EXPIRED / CURSOR_AHEAD mean the application's copy is out of step:
 * with [onResync], the follower reads the user's latest cursor, awaits `onResync(error)`
 * (which reloads everything the application keeps) and goes on after that cursor (changes
 * made during the reload come again, so applying one twice must be harmless); without it
 * the error is thrown. [onError] is told of every error the follower recovers from; any
 * other error is thrown from the flow. The flow ends when its collection is cancelled.
 */
public class ChangeFollower(
    private val mnemo: MnemoClient,
    public val user: String,
    afterCursor: Long = 0,
    private val onResync: (suspend (MnemoException) -> Unit)? = null,
    private val onError: ((MnemoException) -> Unit)? = null,
    private val watchTimeout: Duration = 5.minutes,
    private val maxBackoff: Duration = 5.seconds,
) {
    /** The cursor of the last change emitted (where the next watch starts). */
    @Volatile
    public var cursor: Long = afterCursor
        private set

    private val parent = Names.user(user)
    private var failures = 0

    /** The events, for ever (see the class comment); collect it once at a time. */
    public fun events(): Flow<FollowEvent> = flow {
        while (true) {
            currentCoroutineContext().ensureActive()
            var step: FollowStep
            try {
                var received = false
                val request = WatchChangesRequest.newBuilder().setParent(parent).setAfterCursor(cursor).build()
                mnemo.sync.watchChanges(request, watchTimeout).collect { response ->
                    received = true
                    failures = 0
                    when (response.eventCase) {
                        WatchChangesResponse.EventCase.CHANGE -> {
                            cursor = response.change.cursor
                            emit(FollowEvent.ChangeEvent(response.change))
                        }
                        WatchChangesResponse.EventCase.HEARTBEAT -> emit(FollowEvent.HeartbeatEvent(response.heartbeat))
                        else -> Unit
                    }
                }
                step = if (received) FollowStep.RESUME else FollowStep.BACKOFF
            } catch (error: MnemoException) {
                currentCoroutineContext().ensureActive()
                step = after(error)
                if (step == FollowStep.RESYNC) step = resync(error)
            }
            if (step == FollowStep.BACKOFF) {
                failures += 1
                delay(backoff(failures))
            }
        }
    }

    private fun after(error: MnemoException): FollowStep {
        val step = nextStep(error)
        if (step == FollowStep.RESYNC && onResync == null) throw error
        onError?.invoke(error)
        return step
    }

    private suspend fun resync(error: MnemoException): FollowStep {
        val latest = try {
            mnemo.sync.listChanges(ListChangesRequest.newBuilder().setParent(parent).setPageSize(1).build()).latestCursor
        } catch (failed: MnemoException) {
            if (nextStep(failed) != FollowStep.BACKOFF) throw failed
            onError?.invoke(failed)
            return FollowStep.BACKOFF
        }
        onResync?.invoke(error)
        cursor = latest
        return FollowStep.RESUME
    }

    private fun backoff(failures: Int): Duration {
        val ceiling = min(maxBackoff.inWholeMilliseconds.toDouble(), 100.0 * (1 shl min(failures - 1, 20)))
        return (ceiling * (0.5 + Random.nextDouble() / 2)).milliseconds
    }
}

