package mnemo_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"mnemo.dev/clients/go/internal/testserver"
	"mnemo.dev/clients/go/mnemo"
	"mnemo.dev/clients/go/mnemov1"
)

// attempts records every attempt of the calls through it (innermost
// interceptor): its status code and the request_id it carried.
type attempts struct {
	mu    sync.Mutex
	codes []codes.Code
	ids   []string
	seen  chan struct{} // one value per attempt
}

func newAttempts() *attempts { return &attempts{seen: make(chan struct{}, 10000)} }

func (a *attempts) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	a.mu.Lock()
	a.codes = append(a.codes, status.Code(err))
	if r, ok := req.(interface{ GetRequestId() string }); ok {
		a.ids = append(a.ids, r.GetRequestId())
	}
	a.mu.Unlock()
	a.seen <- struct{}{}
	return err
}

func (a *attempts) snapshot() ([]codes.Code, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.codes), slices.Clone(a.ids)
}

// reconnectSoon makes the connection retry a refused connect within 300 ms
// (gRPC's default backoff grows to minutes), so a restart is noticed quickly.
var reconnectSoon = mnemo.WithDialOptions(grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, MaxDelay: 300 * time.Millisecond},
	MinConnectTimeout: 5 * time.Second,
}))

// TestOutages runs on one server of its own (server starts are what costs):
// a hung server and the default deadline, then one restart during which a
// write is retried and a follower resumes.
func TestOutages(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	server := startServer(t, ctx)
	t.Run("DefaultDeadline", func(t *testing.T) { defaultDeadline(t, ctx, server) })
	t.Run("RetriesAndFollowerAcrossARestart", func(t *testing.T) { acrossARestart(t, ctx, server) })
}

func defaultDeadline(t *testing.T, ctx context.Context, server *testserver.Server) {
	client := newClient(t, server.Target(), mnemo.WithTimeout(300*time.Millisecond))
	name := "users/" + userID(t) + "/memoryState"
	if _, err := client.WorkingMemory.GetMemoryState(ctx, &mnemov1.GetMemoryStateRequest{Name: name}); err != nil {
		t.Fatal(err)
	}
	server.Suspend()
	defer server.Resume()
	// A context without a deadline of its own gets the client's default;
	// one with a deadline keeps it (the test's context, 60 s, is not used here).
	noDeadline, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := client.WorkingMemory.GetMemoryState(noDeadline, &mnemov1.GetMemoryStateRequest{Name: name})
	if merr := mnemoError(t, err); merr.Code != codes.DeadlineExceeded {
		t.Fatalf("a hung server: %v", merr)
	}
	stream, err := client.Memories.RecallMemories(noDeadline, &mnemov1.RecallMemoriesRequest{Parent: "users/x", Query: "q"})
	if err == nil {
		_, err = stream.Recv()
	}
	if merr := mnemoError(t, err); merr.Code != codes.DeadlineExceeded {
		t.Fatalf("a stream from a hung server: %v", merr)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelShort()
	_, err = client.WorkingMemory.GetMemoryState(mnemo.WithoutTimeout(short), &mnemov1.GetMemoryStateRequest{Name: name})
	if merr := mnemoError(t, err); merr.Code != codes.DeadlineExceeded {
		t.Fatalf("the call's own deadline: %v", merr)
	}
}

// follower runs a Follower in a goroutine and hands its events over.
type follower struct {
	*mnemo.Follower
	events      chan mnemo.Event
	ended       chan error
	stop        context.CancelFunc
	mu          sync.Mutex
	recovered   []codes.Code
	unavailable chan struct{}
	cursors     []int64 // of the changes received
}

func startFollowing(ctx context.Context, client *mnemo.Client, user string) *follower {
	f := &follower{events: make(chan mnemo.Event), ended: make(chan error, 1), unavailable: make(chan struct{}, 100)}
	f.Follower = client.Follow(user, mnemo.OnError(func(e *mnemo.Error) {
		f.mu.Lock()
		f.recovered = append(f.recovered, e.Code)
		f.mu.Unlock()
		if e.Code == codes.Unavailable {
			f.unavailable <- struct{}{}
		}
	}))
	ctx, f.stop = context.WithCancel(ctx)
	go func() {
		defer close(f.events)
		for event, err := range f.Events(ctx) {
			if err != nil {
				f.ended <- err
				return
			}
			select {
			case f.events <- event:
			case <-ctx.Done():
				return
			}
		}
	}()
	return f
}

func (f *follower) next(t *testing.T, ctx context.Context) mnemo.Event {
	t.Helper()
	select {
	case event, ok := <-f.events:
		if !ok {
			t.Fatalf("the follower ended: %v", <-f.ended)
		}
		if event.Change != nil {
			f.cursors = append(f.cursors, event.Change.GetCursor())
		}
		return event
	case <-ctx.Done():
		t.Fatalf("no event; changes so far %v", f.cursors)
	}
	return mnemo.Event{}
}

// end stops the follower and waits until its iteration has ended.
func (f *follower) end() {
	f.stop()
	for range f.events {
	}
}

func acrossARestart(t *testing.T, ctx context.Context, server *testserver.Server) {
	user := userID(t)
	conversation := "users/" + user + "/conversations/c1"
	recorded := newAttempts()
	client := newClient(t, server.Target(), reconnectSoon, mnemo.WithUnaryInterceptors(recorded.intercept),
		mnemo.WithRetryPolicy(mnemo.RetryPolicy{MaxAttempts: 1000, InitialBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Multiplier: 2}))
	single := newAttempts()
	noRetries := newClient(t, server.Target(), mnemo.WithUnaryInterceptors(single.intercept), mnemo.WithRetryPolicy(mnemo.RetryPolicy{MaxAttempts: 1}))

	remember(t, ctx, client, user, "one")
	remember(t, ctx, client, user, "two")
	follower := startFollowing(ctx, newClient(t, server.Target(), reconnectSoon), user)
	defer follower.end()
	for follower.next(t, ctx).Heartbeat == nil { // the backlog, then a heartbeat: caught up
	}
	codesBefore, idsBefore := recorded.snapshot()
	for range codesBefore {
		<-recorded.seen
	}
	if err := server.Stop(); err != nil {
		t.Fatal(err)
	}

	state := &mnemov1.GetMemoryStateRequest{Name: "users/" + user + "/memoryState"}
	_, err := noRetries.WorkingMemory.GetMemoryState(ctx, state)
	if merr := mnemoError(t, err); merr.Code != codes.Unavailable {
		t.Fatalf("MaxAttempts 1, server down: %v", merr)
	}
	if got, _ := single.snapshot(); len(got) != 1 {
		t.Fatalf("MaxAttempts 1 made attempts %v", got)
	}

	// A write while the server is down succeeds once it is back, every
	// attempt carrying the same request_id.
	callCtx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := client.Conversations.AppendMessages(callCtx, &mnemov1.AppendMessagesRequest{Conversation: conversation,
			Messages: []*mnemov1.HistoryMessage{{MessageJson: `{"role":"user","content":"still there?"}`}}})
		done <- err
	}()
	for i := range 3 { // three attempts refused before the restart
		select {
		case <-recorded.seen:
		case err := <-done:
			t.Fatalf("the append ended after %d attempts while the server was down: %v", i+1, err)
		case <-ctx.Done():
			t.Fatal("no attempt while the server is down")
		}
	}
	select { // the follower watched again and found the server down
	case <-follower.unavailable:
	case <-ctx.Done():
		t.Fatal("the follower saw no UNAVAILABLE while the server was down")
	}
	if err := server.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the retried append: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the retried append did not finish")
	}
	got, ids := recorded.snapshot()
	got, ids = got[len(codesBefore):], ids[len(idsBefore):] // the append's attempts
	if len(got) < 4 || got[len(got)-1] != codes.OK {
		t.Fatalf("attempts %v: want >= 3 UNAVAILABLE, then OK", got)
	}
	for i, code := range got[:len(got)-1] {
		if code != codes.Unavailable {
			t.Fatalf("attempt %d: %v (attempts %v)", i, code, got)
		}
	}
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("request ids of the attempts: %q", ids)
		}
	}
	listed, err := client.Conversations.ListMessages(ctx, &mnemov1.ListMessagesRequest{Parent: conversation})
	if err != nil || len(listed.GetMessages()) != 1 {
		t.Fatalf("after the retried append: %v, %v", listed, err)
	}

	// The follower resumed after its last cursor: every change once, in order.
	remember(t, ctx, client, user, "three")
	last := remember(t, ctx, client, user, "four")
	for len(follower.cursors) == 0 || follower.cursors[len(follower.cursors)-1] < last {
		follower.next(t, ctx)
	}
	follower.end()
	if follower.Cursor() != last {
		t.Fatalf("the follower's cursor %d; want %d", follower.Cursor(), last)
	}
	if want := allCursors(t, ctx, client, user); !slices.Equal(follower.cursors, want) || len(want) < 5 {
		t.Fatalf("the follower yielded cursors %v, the feed holds %v", follower.cursors, want)
	}
	follower.mu.Lock()
	defer follower.mu.Unlock()
	for _, code := range follower.recovered {
		if code != codes.Unavailable {
			t.Fatalf("the follower recovered from %v; want only UNAVAILABLE", follower.recovered)
		}
	}
}
