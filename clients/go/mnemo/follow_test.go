package mnemo_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	"mnemo.dev/clients/go/mnemo"
	"mnemo.dev/clients/go/mnemov1"
)

// remember creates a memory for user and returns the change cursor of the write.
func remember(t *testing.T, ctx context.Context, client *mnemo.Client, user, text string) int64 {
	t.Helper()
	created, err := client.Memories.CreateMemory(ctx, &mnemov1.CreateMemoryRequest{Parent: "users/" + user, Memory: &mnemov1.Memory{Text: text}})
	if err != nil {
		t.Fatal(err)
	}
	return created.GetChangeCursor()
}

// allCursors lists the cursors of every change of user.
func allCursors(t *testing.T, ctx context.Context, client *mnemo.Client, user string) []int64 {
	t.Helper()
	var cursors []int64
	after := int64(0)
	for {
		page, err := client.Sync.ListChanges(ctx, &mnemov1.ListChangesRequest{Parent: "users/" + user, AfterCursor: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, change := range page.GetChanges() {
			cursors = append(cursors, change.GetCursor())
		}
		if len(page.GetChanges()) == 0 {
			return cursors
		}
		after = page.GetNextCursor()
	}
}

func TestFollowerResumesAcrossARestart(t *testing.T) {
	ctx := testContext(t)
	server := startServer(t, ctx)
	client := newClient(t, server.Target(), reconnectSoon)
	user := userID(t)
	remember(t, ctx, client, user, "one")
	remember(t, ctx, client, user, "two")

	var mu sync.Mutex
	var recovered []codes.Code
	unavailable := make(chan struct{}, 100)
	follower := client.Follow(user, mnemo.OnError(func(e *mnemo.Error) {
		mu.Lock()
		recovered = append(recovered, e.Code)
		mu.Unlock()
		if e.Code == codes.Unavailable {
			unavailable <- struct{}{}
		}
	}))
	followCtx, stopFollowing := context.WithCancel(ctx)
	events := make(chan mnemo.Event)
	ended := make(chan error, 1)
	go func() {
		defer close(events)
		for event, err := range follower.Events(followCtx) {
			if err != nil {
				ended <- err
				return
			}
			select {
			case events <- event:
			case <-followCtx.Done():
				return
			}
		}
	}()
	var got []int64
	next := func() mnemo.Event {
		t.Helper()
		select {
		case event, ok := <-events:
			if !ok {
				t.Fatalf("the follower ended: %v", <-ended)
			}
			if event.Change != nil {
				got = append(got, event.Change.GetCursor())
			}
			return event
		case <-ctx.Done():
			t.Fatalf("no event; changes so far %v", got)
		}
		return mnemo.Event{}
	}
	for next().Heartbeat == nil { // the backlog, then a heartbeat: caught up
	}
	if err := server.Stop(); err != nil {
		t.Fatal(err)
	}
	select { // the follower watched again and found the server down
	case <-unavailable:
	case <-ctx.Done():
		t.Fatal("the follower saw no UNAVAILABLE while the server was down")
	}
	if err := server.Start(ctx); err != nil {
		t.Fatal(err)
	}
	remember(t, ctx, client, user, "three")
	last := remember(t, ctx, client, user, "four")
	for len(got) == 0 || got[len(got)-1] < last {
		next()
	}
	stopFollowing()
	for range events { // the follower ends by itself once followCtx is done
	}
	if follower.Cursor() != last {
		t.Fatalf("the follower's cursor %d; want %d", follower.Cursor(), last)
	}

	want := allCursors(t, ctx, client, user)
	if !slices.Equal(got, want) || len(want) < 4 {
		t.Fatalf("the follower yielded cursors %v, the feed holds %v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, code := range recovered {
		if code != codes.Unavailable {
			t.Fatalf("recovered from %v; want only UNAVAILABLE", recovered)
		}
	}
}

func TestFollowerResyncsFromACursorAhead(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t, sharedTarget)
	user := userID(t)
	latest := remember(t, ctx, client, user, "one")

	// Without OnResync the error ends the iteration.
	var yielded []error
	for _, err := range client.Follow(user, mnemo.AfterCursor(latest+100)).Events(ctx) {
		yielded = append(yielded, err)
	}
	if len(yielded) != 1 {
		t.Fatalf("yielded %v; want one error", yielded)
	}
	if merr := mnemoError(t, yielded[0]); merr.Code != codes.OutOfRange || merr.Reason != "CURSOR_AHEAD" {
		t.Fatalf("a cursor ahead: %v", merr)
	}

	// With OnResync: reload, then go on after the user's latest cursor.
	var causes []string
	follower := client.Follow(user, mnemo.AfterCursor(latest+100), mnemo.OnResync(func(ctx context.Context, cause *mnemo.Error) error {
		causes = append(causes, cause.Reason)
		return nil
	}))
	var newer int64
	for event, err := range follower.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if event.Heartbeat != nil && newer == 0 {
			if event.Heartbeat.GetCursor() != latest || follower.Cursor() != latest {
				t.Fatalf("after the resync: heartbeat %v, cursor %d; want %d", event.Heartbeat, follower.Cursor(), latest)
			}
			newer = remember(t, ctx, client, user, "two")
		}
		if event.Change != nil {
			if event.Change.GetCursor() != newer {
				t.Fatalf("after the resync: change %d; want the new write's %d", event.Change.GetCursor(), newer)
			}
			break
		}
	}
	if !slices.Equal(causes, []string{"CURSOR_AHEAD"}) || follower.Cursor() != newer {
		t.Fatalf("resync causes %v, cursor %d (want %d)", causes, follower.Cursor(), newer)
	}
}

func TestNextStep(t *testing.T) {
	for _, tc := range []struct {
		err  *mnemo.Error
		want mnemo.FollowStep
	}{
		{&mnemo.Error{Code: codes.Aborted, Reason: "WATCH_LAGGING"}, mnemo.Resume},
		{&mnemo.Error{Code: codes.Aborted, Reason: "CONCURRENT_MODIFICATION"}, mnemo.Backoff},
		{&mnemo.Error{Code: codes.Aborted, Reason: "ETAG_MISMATCH"}, mnemo.Fatal},
		{&mnemo.Error{Code: codes.Unavailable}, mnemo.Backoff},
		{&mnemo.Error{Code: codes.ResourceExhausted, Reason: "RATE_LIMITED"}, mnemo.Backoff},
		{&mnemo.Error{Code: codes.OutOfRange, Reason: "CURSOR_EXPIRED"}, mnemo.Resync},
		{&mnemo.Error{Code: codes.OutOfRange, Reason: "CURSOR_AHEAD"}, mnemo.Resync},
		{&mnemo.Error{Code: codes.OutOfRange}, mnemo.Fatal},
		{&mnemo.Error{Code: codes.Unauthenticated}, mnemo.Fatal},
		{&mnemo.Error{Code: codes.InvalidArgument, Reason: "INVALID_NAME"}, mnemo.Fatal},
	} {
		if got := mnemo.NextStep(tc.err); got != tc.want {
			t.Errorf("NextStep(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
