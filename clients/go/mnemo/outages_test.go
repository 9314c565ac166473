package mnemo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
	return append([]codes.Code(nil), a.codes...), append([]string(nil), a.ids...)
}

// reconnectSoon makes the connection retry a refused connect within 300 ms
// (gRPC's default backoff grows to minutes), so a restart is noticed quickly.
var reconnectSoon = mnemo.WithDialOptions(grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, MaxDelay: 300 * time.Millisecond},
	MinConnectTimeout: 5 * time.Second,
}))

func TestUnavailableIsRetriedUntilTheServerIsBack(t *testing.T) {
	ctx := testContext(t)
	server := startServer(t, ctx)
	conversation := "users/" + userID(t) + "/conversations/c1"
	recorded := newAttempts()
	client := newClient(t, server.Target(), reconnectSoon, mnemo.WithUnaryInterceptors(recorded.intercept),
		mnemo.WithRetryPolicy(mnemo.RetryPolicy{MaxAttempts: 1000, InitialBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Multiplier: 2}))
	single := newAttempts()
	noRetries := newClient(t, server.Target(), mnemo.WithUnaryInterceptors(single.intercept), mnemo.WithRetryPolicy(mnemo.RetryPolicy{MaxAttempts: 1}))
	state := &mnemov1.GetMemoryStateRequest{Name: "users/" + userID(t) + "/memoryState"}
	if _, err := client.WorkingMemory.GetMemoryState(ctx, state); err != nil {
		t.Fatal(err)
	}
	<-recorded.seen
	if err := server.Stop(); err != nil {
		t.Fatal(err)
	}

	_, err := noRetries.WorkingMemory.GetMemoryState(ctx, state)
	if merr := mnemoError(t, err); merr.Code != codes.Unavailable {
		t.Fatalf("MaxAttempts 1, server down: %v", merr)
	}
	if got, _ := single.snapshot(); len(got) != 1 {
		t.Fatalf("MaxAttempts 1 made attempts %v", got)
	}

	// A write while the server is down: it succeeds once the server is back,
	// every attempt carrying the same request_id.
	callCtx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := client.Conversations.AppendMessages(callCtx, &mnemov1.AppendMessagesRequest{Conversation: conversation,
			Messages: []*mnemov1.HistoryMessage{{MessageJson: `{"role":"user","content":"still there?"}`}}})
		done <- err
	}()
	for range 3 { // three attempts refused before the restart
		select {
		case <-recorded.seen:
		case <-ctx.Done():
			t.Fatal("no attempt while the server is down")
		}
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
	got = got[1:] // the GetMemoryState before the stop (ids are AppendMessages' only)
	for i, code := range got[:len(got)-1] {
		if code != codes.Unavailable {
			t.Fatalf("attempt %d: %v (attempts %v)", i, code, got)
		}
	}
	if len(got) < 4 || got[len(got)-1] != codes.OK {
		t.Fatalf("attempts %v: want >= 3 UNAVAILABLE, then OK", got)
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
}

func TestDefaultDeadline(t *testing.T) {
	ctx := testContext(t)
	server := startServer(t, ctx)
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
