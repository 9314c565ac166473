package mnemo

import (
	"context"
	"errors"
	"io"
	"iter"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"mnemo.dev/clients/go/mnemov1"
)

// Event is what a Follower yields: a change, or a heartbeat while caught up
// (exactly one of the two is set).
type Event struct {
	Change    *mnemov1.Change
	Heartbeat *mnemov1.Heartbeat
}

// FollowStep is what a Follower does after an error ended a watch.
type FollowStep int

const (
	// Resume watches again at once.
	Resume FollowStep = iota
	// Backoff watches again after a backoff.
	Backoff
	// Resync reloads (OnResync) and watches from the user's latest cursor.
	Resync
	// Fatal ends the iteration with the error.
	Fatal
)

// ResyncReasons are the OUT_OF_RANGE reasons after which a Follower resyncs.
var ResyncReasons = []string{"CURSOR_EXPIRED", "CURSOR_AHEAD"}

const firstFollowBackoff = 100 * time.Millisecond

// NextStep is what a Follower does after err ended a watch (see Follower).
func NextStep(err error) FollowStep {
	e := AsError(err)
	switch e.Code {
	case codes.Aborted:
		switch e.Reason {
		case "WATCH_LAGGING":
			return Resume
		case "CONCURRENT_MODIFICATION":
			return Backoff
		}
	case codes.Unavailable, codes.Internal, codes.Unknown, codes.Canceled, codes.DeadlineExceeded, codes.ResourceExhausted:
		return Backoff
	case codes.OutOfRange:
		if slices.Contains(ResyncReasons, e.Reason) {
			return Resync
		}
	}
	return Fatal
}

// FollowBackoff is the wait after failures transient failures in a row:
// 100 ms doubling up to maxBackoff, times a random factor in [0.5, 1).
func FollowBackoff(failures int, maxBackoff time.Duration) time.Duration {
	ceiling := firstFollowBackoff << min(max(failures-1, 0), 30)
	ceiling = min(ceiling, maxBackoff)
	return time.Duration(float64(ceiling) * (0.5 + rand.Float64()/2))
}

type followConfig struct {
	afterCursor  int64
	onResync     func(ctx context.Context, cause *Error) error
	onError      func(*Error)
	watchTimeout time.Duration
	maxBackoff   time.Duration
}

// FollowOption configures Client.Follow.
type FollowOption func(*followConfig)

// AfterCursor follows the changes after cursor (default 0: from the oldest retained).
func AfterCursor(cursor int64) FollowOption { return func(c *followConfig) { c.afterCursor = cursor } }

// OnResync rebuilds the application's copy after CURSOR_EXPIRED or
// CURSOR_AHEAD (cause.Reason says which), e.g. with the list methods; an
// error it returns ends the iteration. Without it such an error ends the
// iteration.
func OnResync(reload func(ctx context.Context, cause *Error) error) FollowOption {
	return func(c *followConfig) { c.onResync = reload }
}

// OnError is told of every error the follower recovers from (for logging).
func OnError(log func(*Error)) FollowOption { return func(c *followConfig) { c.onError = log } }

// WatchTimeout bounds one watch (default 5 min; 0: no deadline); the
// follower then watches again.
func WatchTimeout(d time.Duration) FollowOption { return func(c *followConfig) { c.watchTimeout = d } }

// MaxBackoff is the largest wait between watches after errors (default 5 s).
func MaxBackoff(d time.Duration) FollowOption { return func(c *followConfig) { c.maxBackoff = d } }

// Follower follows one user's change feed forever, resuming by itself (the
// Python and TypeScript clients' ChangeFollower, same contract):
//
//	follower := client.Follow("u1", mnemo.AfterCursor(saved),
//		mnemo.OnResync(func(ctx context.Context, cause *mnemo.Error) error { return reloadEverything(ctx) }))
//	for event, err := range follower.Events(ctx) {
//		if err != nil { return err }            // a fatal error: the iteration has ended
//		if event.Change != nil { apply(event.Change); saved = follower.Cursor() }
//		// else a heartbeat: caught up; event.Heartbeat.Cursor is the user's latest
//	}
//
// Every watch starts after Cursor (the last change yielded), so across
// reconnects no change is missed or yielded twice. A watch is resumed:
//
//   - at once when it ends cleanly (the server shut down; after a backoff if
//     it ended before sending anything) or with ABORTED WATCH_LAGGING;
//   - after a backoff (100 ms doubling up to MaxBackoff, jittered; back to
//     100 ms once a message arrives) on every transient error: UNAVAILABLE,
//     INTERNAL, UNKNOWN, CANCELLED, DEADLINE_EXCEEDED (each watch lasts at
//     most WatchTimeout), RESOURCE_EXHAUSTED and ABORTED CONCURRENT_MODIFICATION.
//
// Resync: OUT_OF_RANGE with CURSOR_EXPIRED or CURSOR_AHEAD means the
// application's copy is out of step. With OnResync the follower reads the
// user's latest cursor (ListChanges), calls the reload and goes on after that
// cursor; changes made during the reload come again, so applying a change
// twice must be harmless. A transient failure of that read backs off and
// watches again. Without OnResync the error ends the iteration.
//
// Any other error (INVALID_ARGUMENT, UNAUTHENTICATED, NOT_FOUND, ...) is
// yielded as an *Error and ends the iteration. The iteration also ends
// (without an error) when ctx is done or the loop breaks. A Follower is not
// safe for concurrent iterations.
type Follower struct {
	client   *Client
	user     string
	cursor   int64
	failures int
	cfg      followConfig
}

// Follow makes a Follower of user's change feed (user is an id: "u1").
func (c *Client) Follow(user string, options ...FollowOption) *Follower {
	cfg := followConfig{watchTimeout: 5 * time.Minute, maxBackoff: 5 * time.Second}
	for _, option := range options {
		option(&cfg)
	}
	return &Follower{client: c, user: user, cursor: cfg.afterCursor, cfg: cfg}
}

// Cursor is the cursor of the last change yielded (where the next watch starts).
func (f *Follower) Cursor() int64 { return f.cursor }

// Events iterates over the changes and heartbeats; see Follower.
func (f *Follower) Events(ctx context.Context) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if strings.Contains(f.user, "/") || f.user == "" {
			yield(Event{}, &Error{Code: codes.InvalidArgument, Reason: "INVALID_NAME", Domain: ErrorDomain,
				Message:         "user must be an id, not empty or a path",
				Metadata:        map[string]string{"field": "user"},
				FieldViolations: []FieldViolation{{Field: "user", Description: "must be a non-empty id without '/'"}}})
			return
		}
		parent := "users/" + f.user
		for ctx.Err() == nil {
			step, err, stopped := f.watch(ctx, parent, yield)
			if stopped || ctx.Err() != nil {
				return
			}
			if step != Resume && err != nil {
				var fatal error = err
				step = f.after(step, err)
				if step == Resync {
					step, fatal = f.resync(ctx, parent, err)
				}
				if step == Fatal {
					yield(Event{}, fatal)
					return
				}
			}
			if step == Backoff {
				f.failures++
				if sleep(ctx, FollowBackoff(f.failures, f.cfg.maxBackoff)) != nil {
					return
				}
			}
		}
	}
}

// watch runs one WatchChanges; stopped is true when the loop body broke.
func (f *Follower) watch(ctx context.Context, parent string, yield func(Event, error) bool) (step FollowStep, err *Error, stopped bool) {
	watchCtx, cancel := WithoutTimeout(ctx), context.CancelFunc(func() {})
	if f.cfg.watchTimeout > 0 {
		watchCtx, cancel = context.WithTimeout(ctx, f.cfg.watchTimeout)
	}
	defer cancel()
	stream, openErr := f.client.Sync.WatchChanges(watchCtx, &mnemov1.WatchChangesRequest{Parent: parent, AfterCursor: f.cursor})
	if openErr != nil {
		e := AsError(openErr)
		return NextStep(e), e, false
	}
	received := false
	for {
		response, recvErr := stream.Recv()
		if errors.Is(recvErr, io.EOF) {
			if received { // a clean end: the server shut down
				return Resume, nil, false
			}
			return Backoff, nil, false
		}
		if recvErr != nil {
			e := AsError(recvErr)
			return NextStep(e), e, false
		}
		received = true
		f.failures = 0
		var event Event
		switch ev := response.GetEvent().(type) {
		case *mnemov1.WatchChangesResponse_Change:
			f.cursor = ev.Change.GetCursor()
			event.Change = ev.Change
		case *mnemov1.WatchChangesResponse_Heartbeat:
			event.Heartbeat = ev.Heartbeat
		default:
			continue
		}
		if !yield(event, nil) {
			return Resume, nil, true
		}
	}
}

// after tells OnError of a recoverable error; a resync without OnResync is fatal.
func (f *Follower) after(step FollowStep, err *Error) FollowStep {
	if step == Fatal || (step == Resync && f.cfg.onResync == nil) {
		return Fatal
	}
	if f.cfg.onError != nil {
		f.cfg.onError(err)
	}
	return step
}

// resync reads the latest cursor, reloads and goes on from there; the error
// is the fatal one (the reload's own, as it returned it).
func (f *Follower) resync(ctx context.Context, parent string, cause *Error) (FollowStep, error) {
	page, err := f.client.Sync.ListChanges(ctx, &mnemov1.ListChangesRequest{Parent: parent, PageSize: 1})
	if err != nil {
		failed := AsError(err)
		if NextStep(failed) != Backoff {
			return Fatal, failed
		}
		if f.cfg.onError != nil {
			f.cfg.onError(failed)
		}
		return Backoff, failed
	}
	if err := f.cfg.onResync(ctx, cause); err != nil {
		return Fatal, err
	}
	f.cursor = page.GetLatestCursor()
	return Resume, nil
}
